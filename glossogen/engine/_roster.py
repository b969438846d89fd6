"""Who plays which seat under which model: agents and judge resolved from flags and knobs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from glossogen.catalog import DEFAULT_JUDGE
from glossogen.catalog import provider as parse_provider
from glossogen.knobs import BaseKnobs
from glossogen.scenario import Scenario


class RosterError(ValueError):
    """A model override or scheduled swap naming an agent the scenario does not have."""


class Seat(BaseModel):
    """One seat's resolved model, provider and the pydantic-ai settings it sends.

    The one type a seat's model travels in, from the plan (``--dry-run``) through the engine to
    its ``agent_registered`` event; the seat's role and tools are the scenario's
    :class:`~glossogen.scenario.AgentSpec` of the same ``agent_id``.
    """

    model_config = ConfigDict(frozen=True)

    agent_id: str
    model: str
    provider: str
    model_settings: dict[str, Any]


class JudgeSeat(BaseModel):
    """The in-run judge's resolved model, provider and settings."""

    model_config = ConfigDict(frozen=True)

    model: str
    provider: str
    model_settings: dict[str, Any]


def model_name(provider: str, model: str) -> str:
    """Return ``model`` without a ``<provider>:`` prefix that names ``provider`` itself.

    ``anthropic:claude-sonnet-4-5`` under provider ``anthropic`` is ``claude-sonnet-4-5`` (the
    provider is given apart, so the prefix would be sent twice). A prefix is a provider name or
    a pydantic-ai provider prefix; other colons stay (``llama3:8b`` on ollama).

    Raises:
        RosterError: the prefix names another provider than ``provider``.
    """
    from glossogen.catalog import PROVIDER_SPECS, Provider

    head, sep, rest = model.partition(":")
    if not sep:
        return model
    values = {p.value: p for p in Provider}
    # A provider's own name wins over a pydantic-ai prefix it shares ("openai" is also the
    # prefix of self-hosted): "google:" is google-gla's, "openai:" is openai's.
    prefixes = {
        s.pydantic_ai_prefix: p
        for p, s in PROVIDER_SPECS.items()
        if s.pydantic_ai_prefix and s.pydantic_ai_prefix not in values
    } | values
    named = prefixes.get(head)
    if named is None:
        return model
    if named.value != provider:
        raise RosterError(
            f"model {model!r} names provider {named.value!r} but its provider is {provider!r}: "
            "give the model name alone and the provider apart"
        )
    if not rest:
        raise RosterError(f"model {model!r} names a provider and no model")
    return rest


def resolve_seats(scenario: Scenario, knobs: BaseKnobs, model: str, provider: str) -> list[Seat]:
    """Return every seat's (model, provider, settings) after ``model_overrides``.

    An override's ``provider`` falls back to ``provider``; its ``model_settings``, when it names
    them, replace the run's ``agent_model_settings`` whole (an entry without them sends the
    run's).

    Raises:
        RosterError: an override or swap names an agent id the scenario does not have, or a
            model whose ``<provider>:`` prefix names another provider (:func:`model_name`).
        UnknownProviderError: a provider is not in the catalogue.
    """
    specs = scenario.agents()
    ids = [s.agent_id for s in specs]
    named = list(knobs.model_overrides) + [
        e.agent_id for e in knobs.scheduled_events if e.kind == "swap_agent" and e.agent_id
    ]
    for agent_id in named:
        if agent_id not in ids:
            raise RosterError(
                f"unknown agent {agent_id!r} in model_overrides or scheduled_events "
                f"(agents: {', '.join(ids)})"
            )
    for event in knobs.scheduled_events:
        if event.kind == "swap_agent" and event.model:
            model_name(event.provider or provider, event.model)
    seats: list[Seat] = []
    for spec in specs:
        override = knobs.model_overrides.get(spec.agent_id)
        settings = knobs.agent_model_settings
        seat_model, seat_provider = model, provider
        if override is not None:
            seat_model = override.model
            seat_provider = override.provider or provider
            if override.model_settings is not None:  # an entry without its own sends the run's
                settings = override.model_settings
        parse_provider(seat_provider)
        seats.append(
            Seat(
                agent_id=spec.agent_id,
                model=model_name(seat_provider, seat_model),
                provider=seat_provider,
                model_settings=settings.to_model_settings(),
            )
        )
    return seats


def future_providers(knobs: BaseKnobs, provider: str) -> list[str]:
    """Return providers that scheduled swaps will bring in later in the run."""
    return [e.provider or provider for e in knobs.scheduled_events if e.kind == "swap_agent"]


def resolve_judge(
    scenario: Scenario, knobs: BaseKnobs, seats: list[Seat], provider: str
) -> JudgeSeat | None:
    """Return the in-run judge, or None when the scenario rules rounds without one.

    With ``judge_provider`` unset the judge is ``scripted`` when every agent (and every
    scheduled swap) is scripted, else the catalogue's default judge.
    """
    if not scenario.uses_judge:
        return None
    judge_provider: str | None = knobs.judge_provider
    if judge_provider is None:
        everyone = [s.provider for s in seats] + future_providers(knobs, provider)
        judge_provider = "scripted" if all(p == "scripted" for p in everyone) else DEFAULT_JUDGE[1]
    judge_model = knobs.judge_model or (
        "scripted-judge" if judge_provider == "scripted" else DEFAULT_JUDGE[0]
    )
    return JudgeSeat(
        model=model_name(judge_provider, judge_model),
        provider=judge_provider,
        model_settings=knobs.judge_model_settings.to_model_settings(),
    )
