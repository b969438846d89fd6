"""Opening a run's session: its lock, log writer, clock and engine; its start or resumption logged.

:func:`open_session` is where a process begins to play a run, fresh or resumed: everything the
:class:`~glossogen.launch.RunSession` holds is made here, from the planned
:class:`~glossogen.launch.RunConfig` and, on a resume, the log read so far.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version

from pydantic_ai.models import Model

from glossogen.derive import DeriveError, ResumePoint
from glossogen.engine import (
    Clock,
    RunEngine,
    RunSetup,
    SystemClock,
    VirtualClock,
)
from glossogen.eventlog import (
    Event,
    EventLogRead,
    EventLogWriter,
    ModelRequestSent,
    RunResumed,
    RunView,
    unsettled_requests,
)
from glossogen.launch._credentials import apply_dotenv
from glossogen.launch._observers import has_observers, notify
from glossogen.launch._plan import RunConfig
from glossogen.launch._session import RunSession
from glossogen.rejudge._cache import JudgeCache
from glossogen.storage import (
    CONFIG,
    RunBusyError,
    RunFolder,
)
from glossogen.tracing import configure_tracing


@cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """The versions ``simulation_started`` records, read once per process (3 ms a reading)."""
    return tuple(
        (name, version(name))
        for name in ("glossogen", "pydantic-ai-slim", "prefect", "genai-prices")
    )


def _versions() -> dict[str, str]:
    return dict(_installed_versions())


def check_agent_models(config: RunConfig, agent_models: Mapping[str, Model] | None) -> None:
    """Refuse ``agent_models`` naming a seat ``config`` does not have.

    Raises:
        ValueError: one line naming the unknown agent ids and the run's seats.
    """
    unknown = sorted(set(agent_models or {}) - {seat.agent_id for seat in config.seats})
    if unknown:
        raise ValueError(
            f"agent_models names {', '.join(map(repr, unknown))}, not a seat of "
            f"{config.scenario} (seats: {', '.join(seat.agent_id for seat in config.seats)})"
        )


def open_session(
    config: RunConfig,
    folder: RunFolder,
    clock_start: datetime | None = None,
    resume: ResumePoint | None = None,
    agent_models: Mapping[str, Model] | None = None,
    judge_model: Model | None = None,
    virtual_clock: bool = False,
    judge_answers: JudgeCache | None = None,
    clock_of: Callable[[EventLogWriter], Clock] | None = None,
) -> RunSession:
    """Create the writer and engine of a run and log its start (or its resumption).

    The clock is virtual when every agent and the judge are scripted (offline runs play game
    time without waiting) or when the test-only ``GLOSSOGEN_TEST_VIRTUAL_CLOCK`` asks for it
    (:meth:`RunConfig.plays_on_virtual_clock`), else the real one. A local run folder is
    locked for the life of the session, so no second process can write the same log. A resume
    under a changed config (``--allow-config-change``) logs the difference in ``run_resumed``
    and then rewrites the folder's ``config.json`` (atomically) with the config now in force.
    ``agent_models`` plays the seats it names with the given pydantic-ai models (a scenario's
    tests, through :mod:`glossogen.testing`); every other seat is built from its provider.
    ``judge_model`` likewise plays the in-run judge (``judge_answers``: the judge cache it
    asks in place of the run's ``--judge-cache``: a replay's recorded cached rulings), and
    ``virtual_clock`` puts the run on the virtual clock whatever it calls (a replay,
    :mod:`glossogen.replay`: its models answer from a tape). ``clock_of`` makes the run's
    clock instead, from the log's writer (the replay of a process that played on the real
    clock reads its time from the record, place by place).

    Raises:
        ValueError: ``agent_models`` names a seat the run does not have.
        DeriveError: another live process writes the run (exit 75).
        StorageError: ``config.json`` cannot be rewritten.
    """
    check_agent_models(config, agent_models)
    apply_dotenv()
    try:
        lock = folder.lock()
    except RunBusyError as exc:
        raise DeriveError(str(exc), exc.exit_code) from None
    writer = EventLogWriter(folder.log_url)
    tracing = configure_tracing(os.environ)
    if tracing is not None and tracing.warning:
        logging.getLogger("glossogen").warning(tracing.warning)
        notify("warning", tracing.warning)
    watched = has_observers()

    def sink(event: Event) -> None:
        writer.append(event)
        if watched:
            notify("event", event)

    start = clock_start or datetime.now(UTC)
    if resume is not None and resume.state.last_timestamp is not None:
        start = max(start, resume.state.last_timestamp)  # game time never runs backwards
    virtual = virtual_clock or config.plays_on_virtual_clock(os.environ)
    clock: Clock = VirtualClock(start) if virtual else SystemClock()
    if clock_of is not None:
        clock = clock_of(writer)
    setup = RunSetup(
        run_id=folder.run_id,
        scenario=config.build(),
        knobs=config.knobs,
        model=config.model,
        provider=config.provider,
        seats=config.seats,
        judge=config.judge,
        max_agent_turns=config.limits.max_agent_turns,
        run_timeout_seconds=config.limits.run_timeout_seconds,
        spend_cap_usd=config.limits.spend_cap_usd,
        versions=_versions(),
        group_slug=config.group_slug,
        tracing=tracing,
        agent_models=dict(agent_models or {}),
        judge_model=judge_model,
        judge_cache=config.judge_cache,
        judge_answers=judge_answers,
    )
    engine = RunEngine(setup, sink, clock, state=resume.state if resume else None)
    killed: list[ModelRequestSent] = []
    if resume is not None:
        earlier_view = RunView.of(EventLogRead(events=resume.events))
        # Sent and never settled: in flight when an earlier process was killed.
        killed = unsettled_requests(earlier_view)
        # The spend cap counts what every process logged, and a killed request's reservation
        # (its cost is unknown, its worst case is not).
        engine.spend.spent = Decimal(repr(earlier_view.spend.known_cost_usd)) + sum(
            (Decimal(repr(sent.reserved_usd or 0.0)) for sent in killed), Decimal(0)
        )
    engine.driver.call_allowed = engine.spend.allows_call
    if engine.judge is not None:  # the cap binds the in-run judge's calls too
        engine.judge.call_allowed = engine.spend.allows_call
    if resume is None:
        engine.start()
        first = 1
    else:
        state = resume.state
        engine.emit(
            RunResumed(
                after_round=state.after_round,
                reopened_round=state.pending_round,
                postmortem_only=state.pending_verdicts,
                config_changes=resume.config_changes,
                limit_changes=resume.limit_changes,
                clock=clock.kind,
            )
        )
        engine.requests.abandon_killed(killed)  # each logged once, cost unknown
        if resume.config_changes:
            # config.json holds the config in force; simulation_started keeps the original and
            # run_resumed the difference. The event is made durable first: a crash in between
            # leaves the old config.json, and the next resume asks for the change again.
            # A seat whose settings changed sends the new ones from here, and is registered
            # anew with them before the event is made durable.
            engine.register_anew()
            writer.round_boundary()
            folder.write_json(CONFIG, config.recorded_knobs)
        first = state.after_round + 1
        notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    earlier, before = 0.0, 0
    if resume is not None:
        earlier = RunView.of(EventLogRead(events=resume.events)).duration_seconds
        before = len(resume.events)
    return RunSession(
        config, folder, writer, engine, time.monotonic(), lock, first, earlier, before
    )
