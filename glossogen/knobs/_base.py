"""Knobs every scenario shares, and the small models they are built from.

A scenario's knobs model subclasses :class:`BaseKnobs` and adds its own fields. Unknown keys are
refused (``extra="forbid"``), so a misspelt override fails before a run folder is claimed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from glossogen.refusals import LOGGED_INT_MAX, LOGGED_INT_MIN

ThinkingLevel = Literal["minimal", "low", "medium", "high", "xhigh", "max"] | bool

CacheRetention = Literal["5m", "30m", "1h", "12h"]
"""How long a provider keeps a cached prompt prefix (pydantic-ai's ``CacheRetention`` tiers)."""

DEFAULT_MAX_TOKENS = 16384
"""Output cap (tokens, reasoning included) an agent sends when its settings name none."""

LEGACY_MAX_TOKENS_KEY = "agent_max_tokens"
"""How configs written before ``agent_model_settings`` existed spell the agents' output cap."""


class AgentModelSettings(BaseModel):
    """What an agent sends with each request: a subset of pydantic-ai's ``ModelSettings``.

    Same names and types as pydantic-ai's; an unset field sends nothing, leaving the provider's
    default. ``max_tokens`` defaults to 16384 (reasoning tokens included). ``cache`` is on by
    default (``true``: the provider's default lifetime; ``false`` turns it off; a retention such
    as ``"1h"`` buys a longer one where the provider sells it): how each provider is asked for it
    is :func:`glossogen.models.request_model_settings`.
    """

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=LOGGED_INT_MAX)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: int | None = Field(default=None, ge=LOGGED_INT_MIN, le=LOGGED_INT_MAX)
    thinking: ThinkingLevel | None = None
    parallel_tool_calls: bool | None = None
    timeout: float | None = Field(default=None, gt=0, description="Request timeout, seconds.")
    cache: bool | CacheRetention = Field(
        default=True,
        description="Prompt caching: true (provider's default lifetime), false, or a lifetime "
        "the provider sells such as '1h'.",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_agent_max_tokens(cls, data: Any) -> Any:
        if isinstance(data, dict) and LEGACY_MAX_TOKENS_KEY in data:
            data = dict(data)
            cap = data.pop(LEGACY_MAX_TOKENS_KEY)
            data.setdefault("max_tokens", cap)
        return data

    def to_model_settings(self) -> dict[str, Any]:
        """Return the pydantic-ai ``ModelSettings`` dict: only the fields that are set."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class JudgeModelSettings(AgentModelSettings):
    """Settings sent to the in-run judge alone; unlike an agent's, no output cap by default."""

    max_tokens: int | None = Field(default=None, ge=1)


class ModelOverride(BaseModel):
    """One agent's own model: ``model`` is required, ``provider`` falls back to ``--provider``.

    ``model_settings``, when given, replaces the run's ``agent_model_settings`` whole.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    provider: str | None = None
    model_settings: AgentModelSettings | None = None


class ScheduledEvent(BaseModel):
    """Something that happens at a round boundary, before ``round`` opens.

    ``kind`` is ``swap_agent`` (``agent_id`` moves to ``model``/``provider``), ``set_postmortem``
    (``enabled``) or ``inject_case`` (scenario-specific ``payload``).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["swap_agent", "set_postmortem", "inject_case"]
    round: int = Field(ge=1)
    agent_id: str | None = None
    model: str | None = None
    provider: str | None = None
    enabled: bool | None = None
    payload: dict[str, Any] = {}

    @model_validator(mode="after")
    def _fields_for_kind(self) -> ScheduledEvent:
        if self.kind == "swap_agent" and (not self.agent_id or not self.model):
            raise ValueError("a swap_agent event needs agent_id and model")
        if self.kind == "set_postmortem" and self.enabled is None:
            raise ValueError("a set_postmortem event needs enabled")
        return self


def lift_legacy_knobs(data: Any) -> Any:
    """Move a legacy top-level ``agent_max_tokens`` into ``agent_model_settings.max_tokens``.

    A ``max_tokens`` the config's ``agent_model_settings`` names itself wins over the legacy cap.

    Args:
        data: A knobs config as a dict; anything else is returned unchanged.

    Returns:
        A new dict without ``agent_max_tokens`` when it had one, else ``data`` itself.
    """
    if not isinstance(data, dict) or LEGACY_MAX_TOKENS_KEY not in data:
        return data
    data = dict(data)
    cap = data.pop(LEGACY_MAX_TOKENS_KEY)
    settings = data.get("agent_model_settings")
    if settings is None:
        data["agent_model_settings"] = {"max_tokens": cap}
    elif isinstance(settings, dict):
        data["agent_model_settings"] = {"max_tokens": cap, **settings}
    elif isinstance(settings, AgentModelSettings) and "max_tokens" not in settings.model_fields_set:
        data["agent_model_settings"] = settings.model_copy(update={"max_tokens": cap})
    return data


class BaseKnobs(BaseModel):
    """Knobs shared by every scenario. Units are in the names (seconds, characters, USD)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    round_count: int = Field(default=5, ge=1, le=1000, description="Rounds per run.")
    max_round_duration_seconds: float = Field(
        default=300.0, gt=0, description="Main-phase time limit per round, from phase start."
    )
    postmortem_enabled: bool = Field(default=True, description="Hold a postmortem after rounds.")
    postmortem_duration_seconds: float = Field(
        default=60.0, gt=0, description="Postmortem time limit, from its start."
    )
    idle_floor_seconds: float = Field(
        default=0.5, ge=0, description="Quiet time every agent must stay idle before a phase ends."
    )
    model_overrides: dict[str, ModelOverride] = Field(
        default_factory=dict, description="Per-agent model, keyed by agent_id."
    )
    agent_model_settings: AgentModelSettings = Field(default_factory=AgentModelSettings)
    judge_model: str | None = Field(
        default=None, description="Model of the in-run judge; null picks the provider's default."
    )
    judge_provider: Literal["anthropic", "huggingface", "openai", "scripted"] | None = Field(
        default=None,
        description="Judge provider; null means scripted when every agent is scripted, "
        "else anthropic.",
    )
    judge_model_settings: JudgeModelSettings = Field(default_factory=JudgeModelSettings)
    scheduled_events: list[ScheduledEvent] = Field(default_factory=list)
    channel_noise_level: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Share of delivered characters hit by noise."
    )
    noise_replacement_mode: Literal["mask", "drop"] = Field(
        default="mask", description="mask: a hit character becomes '_'; drop: it is removed."
    )
    seed: int = Field(
        default=42,
        ge=LOGGED_INT_MIN,
        le=LOGGED_INT_MAX,
        description="Seed of every random draw in the run.",
    )
    scripted_misplay_share: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="Share of rounds the scripted policies misplay on purpose (chosen by seed).",
    )
    labels: dict[str, str | bool] = Field(
        default_factory=dict, description="Free labels copied to labels.json and exports."
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_knobs(cls, data: Any) -> Any:
        return lift_legacy_knobs(data)

    @model_validator(mode="after")
    def _base_cross_fields(self) -> BaseKnobs:
        for event in self.scheduled_events:
            if event.round > self.round_count:
                raise ValueError(
                    f"scheduled_events: round {event.round} is after round_count {self.round_count}"
                )
        return self
