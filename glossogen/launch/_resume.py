"""A run that goes on: read back its recorded config, apply the changes a resume asks for.

Every path that continues a run (``glossogen run --resume``, a Prefect retry, ``reconcile``, a
sweep's resume of an interrupted trial, and the derived runs, which are resumes of a prepared
folder) plans it here, from what the run recorded: the knobs in force (``config.json``, else
``simulation_started`` with the changes of earlier resumes), the default model and provider,
``max_agent_turns``, ``run_timeout_seconds`` and ``group_slug`` (``simulation_started``, with
the ``limit_changes`` of earlier resumes). A flag that is absent means "as recorded"; one that
differs from the record is refused unless ``allow_config_change``, and the difference is logged
in ``run_resumed``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from glossogen.derive import (
    DeriveError,
    ResumePoint,
    config_changes,
    open_resume,
    recorded_limits,
    run_folder,
)
from glossogen.eventlog import RunResumed
from glossogen.knobs import ConfigError, load_config, parse_overrides, resolve_knobs
from glossogen.launch._plan import (
    LaunchError,
    RunConfig,
    RunLimits,
    _scenario_class,
    _with_seats,
    check_default_model,
    check_group_slug,
    check_judge_cache,
)
from glossogen.refusals import Refusal
from glossogen.scenario import scenario_dir
from glossogen.storage import CONFIG


class ResumeRequest(BaseModel):
    """What a user asks for when a run goes on in its own folder; None means "as recorded".

    Attributes:
        run_dir: The run folder (local path or fsspec URL).
        scenario: The scenario the caller expects (None: the folder's).
        model: Default model of every agent.
        provider: Default provider of every agent.
        config: Preset name or JSON file whose knobs the run should go on under.
        overrides: ``key=value`` overrides applied on ``config`` (or on the recorded knobs).
        max_agent_turns: Model requests each agent may make in the whole run.
        run_timeout_seconds: Wall-clock limit of the run, seconds.
        spend_cap_usd: USD the run's own calls may spend, over every process.
        group_slug: Tenant group that owns the run.
        allow_config_change: Accept a knob or limit that differs from the record.
        judge_cache: A judge cache folder the in-run judge asks first (None: none; never
            recorded, so not a change from the record).
    """

    run_dir: str
    scenario: str | None = None
    model: str | None = None
    provider: str | None = None
    config: str | None = None
    overrides: list[str] = Field(default_factory=list)
    max_agent_turns: int | None = Field(default=None, ge=1)
    run_timeout_seconds: float | None = Field(default=None, gt=0)
    spend_cap_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    group_slug: str | None = None
    allow_config_change: bool = False
    judge_cache: str | None = None


def recorded_config(point: ResumePoint, undone: Sequence[RunResumed] = ()) -> RunConfig:
    """Return the config the run at ``point`` recorded, as in force now.

    ``undone``: resumes of the run (its ``run_resumed`` events, in log order) whose knob and
    limit changes are taken back, the last first: the config the run played under before them
    (what a replay launches its first process with).

    Raises:
        DeriveError: ``config.json`` is a folder, not JSON or not an object (66).
        LaunchError: the recorded knobs no longer validate (65).
    """
    from glossogen.derive import knobs_at  # the fork's module: a plain run never resumes

    folder, started = point.folder, point.started
    knobs_dict = knobs_at(folder, started, point.events)
    for resumed in reversed(undone):
        knobs_dict |= {knob: change["recorded"] for knob, change in resumed.config_changes.items()}
    taken_back = {resumed.event_id for resumed in undone}
    limits = recorded_limits([e for e in point.events if e.event_id not in taken_back])
    in_folder = folder.exists(CONFIG)
    cls = _scenario_class(started.scenario_name)
    try:
        knobs = resolve_knobs(cls.knobs_model, knobs_dict, {})
    except ConfigError as exc:
        raise LaunchError(f"{folder.config_url}: {exc}", exc.exit_code) from None
    return _with_seats(
        started.scenario_name,
        limits["model"],
        limits["provider"],
        f"recorded in {folder.config_url}" if in_folder else "recorded in simulation_started",
        knobs,
        RunLimits(
            max_agent_turns=limits["max_agent_turns"],
            run_timeout_seconds=limits["run_timeout_seconds"],
            spend_cap_usd=limits["spend_cap_usd"],
        ),
        limits["group_slug"],
    )


def _listed(changes: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {json.dumps(v['recorded'])} -> {json.dumps(v['now'])}" for k, v in changes.items()
    )


def plan_resume(request: ResumeRequest) -> tuple[RunConfig, ResumePoint]:
    """Plan a run that goes on in its own folder: its recorded config with the asked changes.

    Knobs given with no ``labels`` keep the run's own (a sweep's run resumed by hand with its
    preset is not a config change); other labels are one.

    Returns:
        The config the run goes on under, and its resume point (with ``config_changes`` and
        ``limit_changes`` filled in, both empty when nothing changed).

    Raises:
        DeriveError: not a run folder or no log (66); the run already ended, is of another
            scenario, or a knob or limit differs from the record without
            ``allow_config_change`` (65); another live process writes it (75).
        LaunchError: an unknown provider, an empty model, a judge cache that is empty or a
            file (64); a bad preset or override (65).
    """
    if request.judge_cache is not None:
        check_judge_cache(request.judge_cache)
    point = open_resume(run_folder(request.run_dir, request.scenario), request.scenario)
    recorded = recorded_config(point)
    cls = _scenario_class(recorded.scenario)
    try:
        if request.config:
            base, source = load_config(request.config, scenario_dir(cls))
        else:
            base, source = recorded.recorded_knobs, recorded.config_source
        knobs = resolve_knobs(cls.knobs_model, base, parse_overrides(request.overrides))
    except ConfigError as exc:
        raise LaunchError(str(exc), exc.exit_code) from None
    asked = knobs.model_dump(mode="json")
    if not asked.get("labels") and recorded.labels:
        knobs = knobs.model_copy(update={"labels": recorded.labels})
    model = request.model or recorded.model
    provider = request.provider or recorded.provider
    check_default_model(model, provider)
    limits = RunLimits(
        max_agent_turns=request.max_agent_turns or recorded.limits.max_agent_turns,
        run_timeout_seconds=request.run_timeout_seconds or recorded.limits.run_timeout_seconds,
        spend_cap_usd=request.spend_cap_usd or recorded.limits.spend_cap_usd,
    )
    group_slug = request.group_slug or recorded.group_slug
    check_group_slug(group_slug)
    config = _with_seats(recorded.scenario, model, provider, source, knobs, limits, group_slug)
    _compare(point, recorded, config, request.allow_config_change)
    ahead = providers_ahead(config, point)
    return config.model_copy(
        update={"providers_ahead": ahead, "judge_cache": request.judge_cache}
    ), point


def providers_ahead(config: RunConfig, point: ResumePoint) -> dict[str, str]:
    """Each provider the run at ``point`` still calls under ``config``, and who calls it.

    A seat plays on as its log last registered or swapped it (the ledger wins over the
    config, as in the engine); a scheduled swap counts only if its round is still to be played.
    """
    state = point.state
    needed: dict[str, str] = {}
    for seat in reversed(config.seats):
        current = state.seats.get(seat.agent_id)
        needed[current[1] if current else seat.provider] = f"agent {seat.agent_id}"
    for event in config.knobs.scheduled_events:
        if event.kind == "swap_agent" and event.round > state.after_round:
            needed.setdefault(event.provider or config.provider, "a scheduled swap")
    return needed


def _compare(
    point: ResumePoint, recorded: RunConfig, config: RunConfig, allow_config_change: bool
) -> None:
    """Fill in ``point``'s changes from ``recorded`` to ``config``; refuse them unless allowed."""
    point.config_changes = config_changes(recorded.recorded_knobs, config.recorded_knobs)
    point.limit_changes = config_changes(
        {**recorded.limits.model_dump(), **_defaults(recorded)},
        {**config.limits.model_dump(), **_defaults(config)},
    )
    changes = {**point.config_changes, **point.limit_changes}
    if changes and not allow_config_change:
        reason = (
            f"the config differs from the one the run recorded ({_listed(changes)}); "
            "pass {name} to resume under the new one"
        )
        raise DeriveError(refusal=Refusal(field="allow_config_change", reason=reason, inline=True))


def _defaults(config: RunConfig) -> dict[str, str]:
    return {"model": config.model, "provider": config.provider, "group_slug": config.group_slug}


def resume_point(config: RunConfig, run_dir: str, allow_config_change: bool) -> ResumePoint:
    """Read the run in ``run_dir`` again and return where it picks up under ``config``.

    What the resume flow does with a config :func:`plan_resume` planned: the log is read afresh
    (it is the ledger), and ``config`` is held against the record once more.

    Raises:
        DeriveError: as :func:`plan_resume`.
    """
    point = open_resume(run_folder(run_dir, config.scenario), config.scenario)
    _compare(point, recorded_config(point), config, allow_config_change)
    return point
