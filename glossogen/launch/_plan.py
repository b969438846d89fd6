"""From a launch request to a :class:`RunConfig`: scenario, knobs, seats, judge and limits.

Everything here runs before a run folder is claimed or a model is called, so a bad request
costs nothing and writes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    WithJsonSchema,
    model_validator,
)

from glossogen import exit_codes
from glossogen.catalog import UnknownProviderError
from glossogen.catalog import provider as parse_provider
from glossogen.engine import (
    JudgeSeat,
    RosterError,
    Seat,
    model_name,
    resolve_judge,
    resolve_seats,
)
from glossogen.knobs import (
    BaseKnobs,
    ConfigError,
    knobs_to_config,
    load_config,
    parse_overrides,
    resolve_knobs,
)
from glossogen.refusals import MAX_AGENT_TURNS_LIMIT, Refusal, above_zero
from glossogen.scenario import Scenario, UnknownScenarioError, load_scenario, scenario_dir

EXIT_USAGE = int(exit_codes.USAGE)
GROUP_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
EXIT_REFUSED = int(exit_codes.REFUSED)


VIRTUAL_CLOCK_SETTING = "GLOSSOGEN_TEST_VIRTUAL_CLOCK"
"""Test-only setting: ``1`` plays every run of the process on the virtual clock (game time).

Honoured only when every seat, swap and judge is scripted, runs the in-process ``local``
model, or calls a model server on loopback (``<PROVIDER>_BASE_URL`` or the
``SELF_HOSTED_BASE_URLS`` entry on 127.0.0.1, ``::1`` or ``localhost``): a stub model server
of a test. A hosted provider is refused: its rate limits, timeouts and spend run on real
seconds the virtual clock would not count. Game time does not move while a seat waits for a
call's answer (``VirtualClock``), so a phase limit never cuts off a slow answer; a test whose
rounds should end by the scenario's own triggers sets limits no backoff reaches. The setting
reaches detached runs and workers through the environment they inherit.
"""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

DEFAULT_MAX_AGENT_TURNS = 200
"""Model requests each agent may make in the whole run when the launch names no limit."""


class LaunchError(Exception):
    """A launch refused before anything was claimed.

    ``str()`` is one line naming the bad value; ``exit_code`` is one of ``glossogen.exit_codes``.
    """

    def __init__(
        self, message: str = "", exit_code: int = EXIT_REFUSED, refusal: Refusal | None = None
    ) -> None:
        """Keep the one-line ``message`` and the process ``exit_code``.

        A ``refusal`` (a request value refused) words the message when none is given; each
        surface words it again with its own name for the field (``exc.refusal``).
        """
        super().__init__(message or (refusal.worded() if refusal else ""))
        self.exit_code = exit_code
        self.refusal = refusal


def check_limits(
    max_agent_turns: int | None = None,
    run_timeout_seconds: float | None = None,
    spend_cap_usd: float | None = None,
) -> None:
    """Refuse a run limit out of bounds (None: not given), before anything is read.

    Raises:
        LaunchError: (64) ``max_agent_turns`` below 1 or above :data:`MAX_AGENT_TURNS_LIMIT`,
            or a ``run_timeout_seconds`` or
            ``spend_cap_usd`` that is not a finite number above 0; ``exc.refusal`` names
            the field, which each surface words as its own (a flag, a tool argument).
    """
    refused = None
    if max_agent_turns is not None and max_agent_turns < 1:
        reason = f"must be at least 1, got {max_agent_turns}"
        refused = Refusal(field="max_agent_turns", reason=reason)
    elif max_agent_turns is not None and max_agent_turns > MAX_AGENT_TURNS_LIMIT:
        reason = f"must be at most {MAX_AGENT_TURNS_LIMIT}, got {max_agent_turns}"
        refused = Refusal(field="max_agent_turns", reason=reason)
    refused = (
        refused
        or above_zero("run_timeout_seconds", run_timeout_seconds, "seconds")
        or above_zero("spend_cap_usd", spend_cap_usd, "USD")
    )
    if refused is not None:
        raise LaunchError(refusal=refused, exit_code=EXIT_USAGE)


class RunRequest(BaseModel):
    """What a user asks for with ``glossogen run`` (the simulate flow's one parameter).

    Attributes:
        scenario: Installed scenario name.
        model: Default model of every agent.
        provider: Default provider of every agent.
        runs_dir: Local folder or fsspec URL under which ``<scenario>/<unix_ts>/`` is claimed.
        config: Preset name (``knobs_default``) or path to a JSON file.
        overrides: Trailing ``key=value`` overrides, in order.
        max_agent_turns: Model requests each agent may make in the whole run.
        group_slug: Tenant group that owns the run.
        run_timeout_seconds: Wall-clock limit of the run, seconds from its first round; a run
            past it ends between rounds with status ``incomplete`` (None: no limit).
        spend_cap_usd: USD the run may spend (:class:`RunLimits`; None: no cap).
    """

    scenario: str
    model: str
    provider: str
    runs_dir: str
    config: str
    overrides: list[str] = Field(default_factory=list)
    max_agent_turns: int = Field(default=DEFAULT_MAX_AGENT_TURNS, ge=1, le=MAX_AGENT_TURNS_LIMIT)
    group_slug: str = "local"
    run_timeout_seconds: float | None = Field(default=None, gt=0)
    spend_cap_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    judge_cache: str | None = None
    """A judge cache folder (local path or fsspec URL): the in-run judge's rulings are answered
    from it when it holds them ($0, logged ``cached``) and kept in it when not (None: none)."""


class RunLimits(BaseModel):
    """The limits a run plays under.

    Recorded in ``simulation_started`` and read back by every path that continues or derives
    the run (resume, a Prefect retry, reconcile, fork-at-round, the agent swaps).

    Attributes:
        max_agent_turns: Model requests each agent may make in the whole run (1 or more).
        run_timeout_seconds: Wall-clock limit of the run, seconds, summed over every process
            that plays it; a run past it ends between rounds ``incomplete`` (None: no limit).
        spend_cap_usd: USD the run's own model calls may spend, agents and in-run judge (its
            logged ``cost_usd``, summed over every process; a derived run's copied rounds do
            not count). Once reached, no new model call is made and the run ends
            ``incomplete`` (None: no cap).
    """

    model_config = ConfigDict(frozen=True)

    max_agent_turns: int = Field(default=DEFAULT_MAX_AGENT_TURNS, ge=1)
    run_timeout_seconds: float | None = Field(default=None, gt=0)
    spend_cap_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class RunConfig(BaseModel):
    """Everything a run was asked for, validated.

    Planned once by :func:`plan_run` (a new run) or :func:`~glossogen.launch.plan_resume` (a run
    that goes on), then passed whole to the flows, the session and the engine.

    Attributes:
        scenario: Installed scenario name.
        model: Default model of every agent.
        provider: Default provider of every agent.
        config_source: Where the knobs came from (``preset 'knobs_default'``, a path, or the
            run's own record).
        knobs: The scenario's validated knobs model (a JSON dict is validated with the
            scenario's own knobs model, so the value survives a Prefect parameter round trip).
        seats: Each seat's resolved model, provider and settings.
        judge: The in-run judge, or None for a scenario that rules rounds itself.
        future_providers: Providers scheduled swaps bring in later in the run.
        providers_ahead: A run that goes on: each provider it still calls and who needs it
            (seats as its log left them, swaps after the resume point); None for a new run.
        limits: ``max_agent_turns`` and ``run_timeout_seconds``.
        group_slug: Tenant group that owns the run.
    """

    scenario: str
    model: str
    provider: str
    config_source: str
    knobs: Annotated[
        SerializeAsAny[BaseKnobs],
        # Each scenario has its own knobs model: the schema (a deployment's parameters) says
        # only "an object"; the validator below checks it against the scenario's model.
        WithJsonSchema({"type": "object", "title": "Knobs"}),
    ]
    seats: list[Seat]
    judge: JudgeSeat | None
    future_providers: list[str] = Field(default_factory=list)
    providers_ahead: dict[str, str] | None = None
    limits: RunLimits = Field(default_factory=RunLimits)
    group_slug: str = "local"
    judge_cache: str | None = None
    """The judge cache this process asks first (``--judge-cache``); never recorded."""

    @model_validator(mode="before")
    @classmethod
    def _scenario_knobs(cls, data: Any) -> Any:
        """Validate a knobs dict with the scenario's own knobs model (not the base model)."""
        if isinstance(data, dict) and isinstance(data.get("knobs"), dict):
            knobs_model = load_scenario(str(data.get("scenario"))).knobs_model
            data = {**data, "knobs": knobs_model.model_validate(data["knobs"])}
        return data

    @property
    def recorded_knobs(self) -> dict[str, Any]:
        """The knobs as ``config.json`` and ``simulation_started`` record them (every knob)."""
        return knobs_to_config(self.knobs)

    @property
    def labels(self) -> dict[str, str | bool]:
        """The run's labels (the ``labels`` knob), as ``labels.json`` holds them."""
        return dict(self.knobs.labels)

    @property
    def virtual_clock(self) -> bool:
        """True when every seat, scheduled swap and the judge are scripted (game time only)."""
        everyone = [s.provider for s in self.seats] + self.future_providers
        return all(
            p == "scripted" for p in everyone + ([self.judge.provider] if self.judge else [])
        )

    def plays_on_virtual_clock(self, environ: Mapping[str, str]) -> bool:
        """Whether the run plays on the virtual clock: all scripted, or the test setting.

        ``environ[VIRTUAL_CLOCK_SETTING]`` is ``1`` (on), or ``0``/unset (off).

        Raises:
            LaunchError: exit 65 when the setting is on and a seat, swap or the judge calls a
                model that is not a server on loopback (the message names the provider), or
                when the setting holds another value (the message names it).
        """
        if self.virtual_clock:
            return True
        setting = environ.get(VIRTUAL_CLOCK_SETTING, "").strip()
        if setting in ("", "0"):
            return False
        if setting != "1":
            raise LaunchError(f"{VIRTUAL_CLOCK_SETTING}={setting!r}: use 1 or 0", EXIT_REFUSED)
        pairs = [(s.provider, s.model) for s in self.seats]
        pairs += [(p, self.model) for p in self.future_providers]
        pairs += [(self.judge.provider, self.judge.model)] if self.judge else []
        for provider, model in pairs:
            if provider not in ("scripted", "local") and not _on_loopback(provider, model, environ):
                raise LaunchError(
                    f"{VIRTUAL_CLOCK_SETTING}=1 is for stub model servers on loopback; "
                    f"provider {provider!r} is not one",
                    EXIT_REFUSED,
                )
        return True

    def build(self) -> Scenario:
        """Return a fresh scenario instance over these knobs."""
        return load_scenario(self.scenario)(self.knobs)


def _on_loopback(provider: str, model: str, environ: Mapping[str, str]) -> bool:
    """True when ``provider``'s endpoint for ``model`` is a URL on a loopback host."""
    if provider == "self-hosted":
        try:
            url = json.loads(environ.get("SELF_HOSTED_BASE_URLS", "")).get(model, "")
        except (ValueError, AttributeError):
            return False
    else:
        url = environ.get(f"{provider.upper().replace('-', '_')}_BASE_URL", "")
    try:
        return urlsplit(str(url)).hostname in LOOPBACK_HOSTS
    except ValueError:
        return False


def _with_seats(
    scenario: str,
    model: str,
    provider: str,
    config_source: str,
    knobs: BaseKnobs,
    limits: RunLimits,
    group_slug: str,
) -> RunConfig:
    """Resolve seats, swaps and judge of ``knobs`` and return the whole :class:`RunConfig`.

    Raises:
        LaunchError: an override or swap naming an unknown agent or provider (65).
    """
    instance = load_scenario(scenario)(knobs)
    try:
        model = model_name(provider, model)  # "anthropic:claude-..." names the provider twice
        seats = resolve_seats(instance, knobs, model, provider)
    except (RosterError, UnknownProviderError) as exc:
        raise LaunchError(str(exc)) from None
    swaps = [e.provider or provider for e in knobs.scheduled_events if e.kind == "swap_agent"]
    for swap_provider in swaps:
        try:
            parse_provider(swap_provider)
        except UnknownProviderError as exc:
            raise LaunchError(f"scheduled_events: {exc}") from None
    return RunConfig(
        scenario=scenario,
        model=model,
        provider=provider,
        config_source=config_source,
        knobs=knobs,
        seats=seats,
        judge=resolve_judge(instance, knobs, seats, provider),
        future_providers=swaps,
        limits=limits,
        group_slug=group_slug,
    )


def plan_knobs(
    scenario: str,
    model: str,
    provider: str,
    config_source: str,
    knobs: BaseKnobs,
    limits: RunLimits | None = None,
    group_slug: str = "local",
) -> RunConfig:
    """Return the :class:`RunConfig` of knobs already validated (a derived run's, say).

    Raises:
        LaunchError: an override or swap naming an unknown agent or provider (65).
    """
    return _with_seats(
        scenario, model, provider, config_source, knobs, limits or RunLimits(), group_slug
    )


def plan_run(request: RunRequest) -> RunConfig:
    """Resolve and validate ``request`` into the :class:`RunConfig` of a new run.

    Raises:
        LaunchError: unknown scenario or provider (exit 64); an unknown, unreadable or malformed
            preset, a bad override, an invalid knob or a cross-field violation (65, or 66 for a
            preset path that does not exist). The message is one line naming the bad value.
    """
    cls = _scenario_class(request.scenario)
    check_default_model(request.model, request.provider)
    if not request.runs_dir.strip():
        raise LaunchError(
            refusal=Refusal(field="runs_dir", reason="is empty"), exit_code=EXIT_USAGE
        )
    check_group_slug(request.group_slug)
    try:
        base, source = load_config(request.config, scenario_dir(cls))
        knobs = resolve_knobs(cls.knobs_model, base, parse_overrides(request.overrides))
    except ConfigError as exc:
        raise LaunchError(str(exc), exc.exit_code) from None
    limits = RunLimits(
        max_agent_turns=request.max_agent_turns,
        run_timeout_seconds=request.run_timeout_seconds,
        spend_cap_usd=request.spend_cap_usd,
    )
    if request.judge_cache is not None:
        check_judge_cache(request.judge_cache)
    planned = _with_seats(
        request.scenario, request.model, request.provider, source, knobs, limits,
        request.group_slug,
    )  # fmt: skip
    return planned.model_copy(update={"judge_cache": request.judge_cache})


def check_judge_cache(url: str) -> None:
    """Refuse a judge cache that is empty or names a file (64; ``exc.refusal``: ``judge_cache``).

    Raises:
        LaunchError: the value cannot be a cache folder.
    """
    from glossogen.storage import path_kind

    if not url.strip():
        refused = Refusal(field="judge_cache", reason="is empty")
        raise LaunchError(refusal=refused, exit_code=EXIT_USAGE)
    if path_kind(url) == "file":
        refused = Refusal(field="judge_cache", reason=f"{url!r} is a file, not a folder")
        raise LaunchError(refusal=refused, exit_code=EXIT_USAGE)


def _scenario_class(name: str) -> type[Scenario]:
    try:
        return load_scenario(name)
    except UnknownScenarioError as exc:
        raise LaunchError(str(exc), EXIT_USAGE) from None


def check_default_model(model: str, provider: str) -> None:
    """Refuse an unknown ``provider`` or an empty ``model`` (64)."""
    try:
        parse_provider(provider)
    except UnknownProviderError as exc:
        refusal = Refusal(field="provider", reason=str(exc), colon=True)
        raise LaunchError(refusal=refusal, exit_code=EXIT_USAGE) from None
    if not model.strip():
        raise LaunchError(refusal=Refusal(field="model", reason="is empty"), exit_code=EXIT_USAGE)


def check_group_slug(group_slug: str) -> None:
    """Refuse a ``group_slug`` that is not 1-64 of a-z, 0-9, ``-`` and ``_`` (64)."""
    if not GROUP_SLUG.fullmatch(group_slug):
        raise LaunchError(
            refusal=Refusal(
                field="group_slug",
                value=repr(group_slug),
                reason="use 1-64 of a-z, 0-9, '-' and '_'",
            ),
            exit_code=EXIT_USAGE,
        )
