"""A recorded run played again from its tape into a new folder, process by process.

:func:`play_tape` reads the recorded config (:func:`read_source`), writes a derived run's prefix
as its derivation wrote it, and plays each recorded process (:func:`_segments`: its rounds, how
it ended, where a stop cut it) through the session a run takes, every seat and the judge played
by the ``replay`` provider, the seats' steps ordered by the
:class:`~glossogen.replay._sequencer.Sequencer`, a process that played on the real clock on a
:class:`~glossogen.replay._clock.RecordedClock`.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import Model

from glossogen.engine._requests import UNBILLED
from glossogen.eventlog import (
    EndStatus,
    Event,
    EventLogWriter,
    ModelRequestAbandoned,
    RoundCompleted,
    RoundStarted,
    RunResumed,
    RunView,
    SimulationEnded,
    SimulationStarted,
    ToolResultReceived,
    new_id,
    read_tape,
)
from glossogen.replay._clock import (
    PacedClock,
    RecordedClock,
    game_times,
    process_times,
    quiet_ends,
)
from glossogen.replay._model import Pacing, TapeAnswers, replay_model
from glossogen.replay._record import cut_off, found_over, owner
from glossogen.replay._sequencer import Sequencer
from glossogen.storage import LINEAGE, RunFolder

if TYPE_CHECKING:
    from glossogen.engine._agent import AgentRunner


@dataclass(frozen=True)
class _Process:
    """One recorded process of a run: the rounds it completed and how it ended.

    ``cut``: for a process stopped mid-round (``glossogen stop``: its round ``last_round + 1``
    begun, answers logged, then ``simulation_ended``), how many events the log held when the
    stop came; None when it ended at a round boundary.
    """

    last_round: int
    status: EndStatus
    error: str | None
    cut: int | None = None
    clock: str | None = None
    """The clock it played on, as its start logged it (``real``, ``virtual``, or None)."""
    resumed: RunResumed | None = None
    """The ``run_resumed`` that began it (None: the run's launch)."""


def read_source(run_dir: str) -> tuple[Any, Any, RunView, Any]:
    """The recorded run's folder, ``simulation_started``, view and the config it launched with.

    That is the config in force now (``config.json``) with the changes its own resumes logged
    (``run_resumed``'s ``config_changes`` and ``limit_changes``) taken back: its first process
    played under it; each resume's changes are asked again as its process is replayed.

    Raises:
        DeriveError: (65) a log that lost an event (a torn last line, its ending's too) or
            holds one twice; a run that has not ended (only an ended run is replayed).
    """
    from glossogen.derive import DeriveError
    from glossogen.derive._resume import ResumePoint, read_run_view, run_folder
    from glossogen.derive._state import read_state
    from glossogen.launch import recorded_config

    source = run_folder(run_dir)
    recorded = read_run_view(source, whole_for="replayed")  # refuses a log that lost an event
    events, started = recorded.events, recorded.started
    assert started is not None  # read_run_view refuses a log that starts no run
    if recorded.ended is None or recorded.status in ("running", "stopped"):
        raise DeriveError(f"run {started.run_id} has not ended: only an ended run is replayed")
    point = ResumePoint(source, read_state(events), started, events)
    config = recorded_config(point, _own_resumes(recorded))
    return source, started, recorded, config


def _own_resumes(recorded: RunView) -> list[RunResumed]:
    """The run's own resumes, in log order (not a derived run's copied source's)."""
    inherited = recorded.inherited
    return [e for e in recorded.events if isinstance(e, RunResumed) and e.event_id not in inherited]


def _resumed_as_recorded(resumed: RunResumed | None, run_dir: str, config: Any) -> Any:
    """Plan the replay's resume at ``run_dir`` asking again for the changes ``resumed`` logged.

    Its knobs: those in force (``config``, as the replay's ``config.json`` holds them) with
    each knob the record's resume changed set as it set it, handed over as a config file; its
    limits and default model as the record's resume set them. Returns ``plan_resume``'s
    config and resume point.
    """
    from glossogen.launch import ResumeRequest, plan_resume

    if resumed is None or not (resumed.config_changes or resumed.limit_changes):
        return plan_resume(ResumeRequest(run_dir=run_dir))
    limits = {key: change["now"] for key, change in resumed.limit_changes.items()}
    asked: dict[str, Any] = {key: value for key, value in limits.items() if value is not None}
    with tempfile.TemporaryDirectory(prefix="glossogen-replay-") as scratch:
        if resumed.config_changes:
            knobs = config.recorded_knobs | {
                knob: change["now"] for knob, change in resumed.config_changes.items()
            }
            path = Path(scratch) / "config.json"
            path.write_text(json.dumps(knobs), encoding="utf-8")
            asked["config"] = str(path)
        return plan_resume(ResumeRequest(run_dir=run_dir, allow_config_change=True, **asked))


async def play_tape(
    recorded: RunView, config: Any, started: Any, runs_dir: str, through: int | None
) -> tuple[Any, str | None]:
    """Play the recorded run from its tape into a new folder under ``runs_dir``.

    Process by process as recorded, each seat's steps in the recorded order
    (:class:`~glossogen.replay._sequencer.Sequencer`); with ``through``, only rounds
    1..``through`` (the last process sealed ``interrupted`` there). Returns the folder, and
    why the replay stalled (then sealed ``interrupted`` where it stalled), or None.
    """
    from glossogen.launch import (
        check_runs_dir,
        claim_run,
        open_session,
        price_spend,
    )

    check_runs_dir(runs_dir)
    segments = _segments(recorded.events)
    if through is not None:
        segments = _through(segments, through)
    # A process stopped mid-round made calls a resume superseded: the seats are answered from
    # every call in the log, in order, so the stopped round gets its own answers again.
    stopped = any(p.cut is not None for p in segments)
    tape = read_tape(recorded.events) if stopped else recorded.tape
    places = {id(e): i for i, e in enumerate(recorded.events)}
    settling = recorded.events if stopped else recorded.counted
    seats = {seat.agent_id: seat for seat in config.seats}
    hosted = any(seat.provider not in UNBILLED for seat in seats.values())
    owners = [owner(e, frozenset(seats)) for e in recorded.events]
    found = found_over(recorded.events, cut_off(owners, recorded.events))
    quiet = quiet_ends(recorded.events, found, owners)
    times = game_times(recorded.events, found, frozenset(quiet))
    expiring = {over: times[end] for end, over in quiet.items()}
    latency = config.build().scripted_latency_seconds
    pacing = Pacing()
    pacing.place = lambda call: places.get(id(settling[call.line]), call.line)
    models: dict[str, Model] = {
        agent_id: replay_model(
            tape,
            agent_id,
            seat.model,
            pacing,
            latency if seat.provider == "scripted" else 0.0,
            seat.provider in UNBILLED,
        )
        for agent_id, seat in seats.items()
    }
    judge: Model | None = None
    answers = None
    if config.judge is not None and config.judge.provider != "scripted":
        judge = replay_model(tape, "judge", config.judge.model, pacing)
        answers = TapeAnswers(tape, pacing)  # the rulings the record's judge cache answered
    folder = claim_run(config, runs_dir)
    derived = _write_derived_prefix(recorded, folder)
    for number, process in enumerate(segments):
        point = None
        if number or derived:  # a derived run's every process resumes its written prefix
            config, point = _resumed_as_recorded(process.resumed, folder.url, config)
        before = len(point.events) if point is not None else 0
        real = process.clock == "real"  # its time is read from the record, place by place
        session = open_session(
            config,
            folder,
            clock_start=started.timestamp,
            resume=point,
            agent_models=models,
            judge_model=judge,
            judge_answers=answers,
            virtual_clock=True,
            clock_of=partial(_recorded_clock, recorded.events, times, expiring, before)
            if real
            else partial(_paced_clock, recorded.events, before, _start(started, point))
            if hosted
            else None,
        )
        if point is not None and (stopped or number == 0):
            # each seat goes on from its calls the log holds (a derived run's: its prefix's)
            pacing.calls = {s: len(c) for s, c in read_tape(point.events).calls.items()}
        logged = partial(_logged, before, session.writer)
        returned = partial(_has_returned, session.engine.runners)
        silent = partial(_steps_quietly, session.engine.runners)
        asking = partial(_asking, session.engine.runners)
        paced = session.engine.clock if isinstance(session.engine.clock, PacedClock) else None
        sequencer = Sequencer(recorded.events, logged, seats, hosted or real, real, returned,
                              silent, asking, paced)  # fmt: skip
        pacing.bind(session.engine.clock.sleep, sequencer.reached)
        pacing.ordered = hosted or real
        first = point.next_round if point is not None else 1
        if point is not None and session.postmortem_only:
            # stopped in its postmortem: its verdict stands, only the postmortem is played
            await sequencer.play(session.finish_round(session.first_round))
        for round_number in range(first, process.last_round + 1):
            if sequencer.stalled:
                break
            await sequencer.play(session.play_round(round_number))
            if session.ended_early():
                break
        if process.cut is not None and not sequencer.stalled:
            # stopped mid-round: play it up to where the stop came, then cancel it as the stop did
            await sequencer.play(session.play_round(process.last_round + 1), process.cut)
        sequencer.release()  # the requests still open end now, as the run's end found them
        await session.settle_requests()
        if sequencer.stalled:
            session.finish(price_spend(folder), "interrupted", sequencer.stalled)
            return folder, sequencer.stalled
        session.finish(price_spend(folder), process.status, process.error)
    return folder, None


def _write_derived_prefix(recorded: RunView, folder: RunFolder) -> bool:
    """Write a derived run's prefix into the replay's ``folder``; False for an original run.

    A fork or an agent swap played none of what its log holds before its first
    ``run_resumed``: its derivation wrote it (its own ``simulation_started`` with the lineage,
    the source's rounds 1..N, every seat registered again with its history at the boundary).
    The replay's log begins with the same events (its ``simulation_started`` naming the
    replay's run id), and ``lineage.json`` says what the record's says; the run's own
    processes are then replayed as resumes of it.
    """
    started = recorded.started
    if started is None or not started.lineage:
        return False
    folder.write_json(LINEAGE, dict(started.lineage))
    with EventLogWriter(folder.log_url) as writer:
        own = started.model_copy(update={"run_id": folder.run_id, "event_id": new_id()})
        writer.append_line(own.model_dump_json())
        for event in recorded.events[1:]:
            if event.event_id in recorded.inherited:  # the prefix, as the view reads it
                writer.append_line(event.model_dump_json())
    return True


def _left_by_stop(event: Event) -> bool:
    """Whether the stop itself logged ``event``: a request left open, a tool call cut off."""
    return isinstance(event, ModelRequestAbandoned) or (
        isinstance(event, ToolResultReceived) and event.interrupted
    )


def _through(segments: list[_Process], through: int) -> list[_Process]:
    """The processes that played rounds 1..``through``, the last cut there ``interrupted``."""
    kept: list[_Process] = []
    for process in segments:
        if process.last_round >= through:
            error = "replayed through the fork point"
            kept.append(_Process(through, "interrupted", error, resumed=process.resumed))
            break
        kept.append(process)
    return kept


def _has_returned(runners: dict[str, AgentRunner], seat: str, tool_call_id: str) -> bool:
    """Whether ``seat``'s tool call ``tool_call_id`` has returned in this phase of the replay."""
    return seat in runners and tool_call_id in runners[seat].returned


def _steps_quietly(runners: dict[str, AgentRunner], seat: str) -> bool:
    """Whether ``seat``'s next step logs nothing.

    That is: between its final answer and its next prompt (it goes idle, or takes up what
    came), or woken as it waited for news.
    """
    runner = runners.get(seat)
    return runner is not None and (runner.answered or runner.woken)


def _asking(runners: dict[str, AgentRunner], seat: str) -> bool:
    """Whether ``seat`` (unbilled) has built its next request and not yet handed it over."""
    runner = runners.get(seat)
    return runner is not None and runner.asking


def _logged(before: int, writer: EventLogWriter) -> int:
    """Events in the replay's log: those before this process, and those it appended."""
    return before + writer.count


def _recorded_clock(
    recorded: list[Event],
    times: list[float],
    expiring: dict[int, float],
    before: int,
    writer: EventLogWriter,
) -> RecordedClock:
    """The clock of a process that played on the real clock, read at the replay's place."""
    return RecordedClock(list(recorded), list(times), partial(_logged, before, writer), expiring)


def _start(started: SimulationStarted, point: Any) -> Any:
    """The wall time a replayed process's virtual clock starts at, as ``open_session`` sets it."""
    last = point.state.last_timestamp if point is not None else None
    return started.timestamp if last is None else max(started.timestamp, last)


def _paced_clock(
    recorded: list[Event], before: int, start: Any, writer: EventLogWriter
) -> PacedClock:
    """The clock of an ordered process that played on the virtual clock (its sleeps paced)."""
    return PacedClock(start, process_times(recorded, before), partial(_logged, before, writer))


def _segments(events: list[Event]) -> list[_Process]:
    """Each recorded process: the rounds it completed, how it ended, where a stop cut it.

    A process ends at its ``simulation_ended``; the next begins at ``run_resumed``, whose
    ``after_round`` is where the earlier one stopped. A process whose last round began and did
    not complete was stopped mid-round: its cut is where the stop cut its seats off, as
    ``simulation_ended`` records it (``stopped_after_events``); on a line written before that
    was recorded, the number of events logged before its ``simulation_ended`` (the requests the
    stop left open, logged abandoned, and the tool calls it cut off, not counted), which misses
    a tool result the stop logged for a tool that had returned.
    """
    segments: list[_Process] = []
    played = 0
    begun = completed = 0
    clock: str | None = None
    resumed: RunResumed | None = None
    for index, event in enumerate(events):
        if isinstance(event, SimulationStarted | RunResumed):
            clock = event.clock  # the process that ends next played on it
            resumed = event if isinstance(event, RunResumed) else None
        if isinstance(event, RoundStarted):
            begun = event.round_number
        elif isinstance(event, RoundCompleted):
            completed = event.round_number
        if isinstance(event, RunResumed) and segments:
            segments[-1] = replace(segments[-1], last_round=event.after_round)
        elif isinstance(event, SimulationEnded):
            played = max(played, event.rounds_played or 0)
            cut = None
            if event.status == "interrupted" and begun > completed:
                cut = event.stopped_after_events
                if cut is None:  # a log written before the stop's place was recorded
                    cut = index
                    while cut and _left_by_stop(events[cut - 1]):
                        cut -= 1
            last = max(played, event.round_number) if cut is None else completed
            segments.append(_Process(last, event.status, event.error, cut, clock, resumed))
    return segments
