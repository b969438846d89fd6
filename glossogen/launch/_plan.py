"""From a launch request to a run plan: scenario, knobs, seats and judge, all validated.

Everything here runs before a run folder is claimed or a model is called, so a bad request
costs nothing and writes nothing.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from glossogen import exit_codes
from glossogen.catalog import UnknownProviderError
from glossogen.catalog import provider as parse_provider
from glossogen.engine import RosterError, resolve_judge, resolve_seats
from glossogen.knobs import (
    BaseKnobs,
    ConfigError,
    knobs_to_config,
    load_config,
    parse_overrides,
    resolve_knobs,
)
from glossogen.scenario import Scenario, UnknownScenarioError, load_scenario, scenario_dir

EXIT_USAGE = int(exit_codes.USAGE)
GROUP_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
EXIT_REFUSED = int(exit_codes.REFUSED)


class LaunchError(Exception):
    """A launch refused before anything was claimed.

    ``str()`` is one line naming the bad value; ``exit_code`` follows DESIGN.md section 9.
    """

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED) -> None:
        """Keep the one-line ``message`` and the process ``exit_code``."""
        super().__init__(message)
        self.exit_code = exit_code


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
    """

    scenario: str
    model: str
    provider: str
    runs_dir: str
    config: str
    overrides: list[str] = Field(default_factory=list)
    max_agent_turns: int = Field(default=200, ge=1)
    group_slug: str = "local"
    run_timeout_seconds: float | None = Field(default=None, gt=0)


class SeatPlan(BaseModel):
    """One seat's resolved model."""

    agent_id: str
    model: str
    provider: str
    model_settings: dict[str, Any]


class RunPlan(BaseModel):
    """A validated launch: the resolved knobs (as recorded), seats, judge and clock kind."""

    request: RunRequest
    config_source: str
    knobs: dict[str, Any]
    seats: list[SeatPlan]
    judge_model: str | None
    judge_provider: str | None
    future_providers: list[str]
    virtual_clock: bool

    def build(self) -> tuple[Scenario, BaseKnobs]:
        """Return a fresh scenario instance and its knobs model, from the recorded knobs."""
        cls = load_scenario(self.request.scenario)
        knobs = cls.knobs_model.model_validate(self.knobs)
        return cls(knobs), knobs


def plan_run(request: RunRequest) -> RunPlan:
    """Resolve and validate ``request`` into a :class:`RunPlan`.

    Raises:
        LaunchError: unknown scenario or provider (exit 64); an unknown, unreadable or malformed
            preset, a bad override, an invalid knob or a cross-field violation (65, or 66 for a
            preset path that does not exist). The message is one line naming the bad value.
    """
    try:
        cls = load_scenario(request.scenario)
    except UnknownScenarioError as exc:
        raise LaunchError(str(exc), EXIT_USAGE) from None
    try:
        parse_provider(request.provider)
    except UnknownProviderError as exc:
        raise LaunchError(f"--provider: {exc}", EXIT_USAGE) from None
    if not request.model.strip():
        raise LaunchError("--model is empty", EXIT_USAGE)
    if not request.runs_dir.strip():
        raise LaunchError("--runs-dir is empty", EXIT_USAGE)
    if not GROUP_SLUG.fullmatch(request.group_slug):
        raise LaunchError(
            f"--group-slug {request.group_slug!r}: use 1-64 of a-z, 0-9, '-' and '_'", EXIT_USAGE
        )
    try:
        base, source = load_config(request.config, scenario_dir(cls))
        knobs = resolve_knobs(cls.knobs_model, base, parse_overrides(request.overrides))
    except ConfigError as exc:
        raise LaunchError(str(exc), exc.exit_code) from None
    scenario = cls(knobs)
    try:
        seats = resolve_seats(scenario, knobs, request.model, request.provider)
    except (RosterError, UnknownProviderError) as exc:
        raise LaunchError(str(exc)) from None
    swaps = [
        e.provider or request.provider for e in knobs.scheduled_events if e.kind == "swap_agent"
    ]
    for swap_provider in swaps:
        try:
            parse_provider(swap_provider)
        except UnknownProviderError as exc:
            raise LaunchError(f"scheduled_events: {exc}") from None
    judge = resolve_judge(scenario, knobs, seats, request.provider)
    everyone = [s.provider for s in seats] + swaps + ([judge.provider] if judge else [])
    return RunPlan(
        request=request,
        config_source=source,
        knobs=knobs_to_config(knobs),
        seats=[
            SeatPlan(
                agent_id=s.spec.agent_id,
                model=s.model,
                provider=s.provider,
                model_settings=s.model_settings,
            )
            for s in seats
        ],
        judge_model=judge.model if judge else None,
        judge_provider=judge.provider if judge else None,
        future_providers=swaps,
        virtual_clock=all(p == "scripted" for p in everyone),
    )
