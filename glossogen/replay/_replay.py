"""Play a recorded run again from its tape, into a new folder, and compare the two logs.

``glossogen replay RUN_DIR --runs-dir R``: the run's recorded config (``config.json`` and
``simulation_started``, as a resume reads them) is played again through the same session a
run takes (``open_session``, one ``play_round`` per round, priced and finished) with every
seat and the judge played by the ``replay`` provider (:mod:`glossogen.replay._model`), on the
virtual clock from the recorded run's first timestamp. Seats keep their recorded provider and
model names, so each answer is priced as it was: the replay's logged costs equal the
recorded ones, and nothing is sent anywhere.

Then it compares, in this order:

- **Requests.** Each call's fingerprint (``request_sha256``) against the recorded call's,
  ``(seat, call)`` by ``(seat, call)`` in the replay's order; the first that differs is the
  divergence. A run recorded before fingerprints existed has none: that check is skipped and
  the report says so.
- **Events.** Every event, without what a replay changes: event ids, timestamps, request ids,
  the run id, wall-clock seconds and the versions of the code.
- **Verdicts and spend**, from each log's :class:`~glossogen.eventlog.RunView`.

A resumed run is replayed process by process: each recorded process's rounds, ended with the
status its ``simulation_ended`` recorded, then resumed as it was.
"""

from __future__ import annotations

import difflib
import json
import re
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_ai.models import Model

from glossogen.engine._fingerprint import unstamped
from glossogen.engine._requests import UNBILLED
from glossogen.eventlog import (
    AgentHistoryAppended,
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
    Tape,
    ToolResultReceived,
    new_id,
    read_tape,
)
from glossogen.replay._clock import RecordedClock, game_times
from glossogen.replay._model import Pacing, TapeAnswers, replay_model
from glossogen.replay._sequencer import Sequencer, cut_off, found_over, owner, run_replay
from glossogen.storage import LINEAGE, RunFolder

if TYPE_CHECKING:
    from glossogen.derive import ReplayedRounds
    from glossogen.engine._agent import AgentRunner

IGNORED = frozenset(
    {
        "event_id",
        "timestamp",
        "request_id",
        "request_ids",
        "run_id",
        "versions",
        "duration_seconds",
        "process_seconds",
        "conversation_id",
    }
)
"""Fields a replay changes by design, at any depth (a logged history's messages carry their
own): ids, when it happened, how long the process took, the code's versions."""


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


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class ReplayRequest(BaseModel):
    """What ``glossogen replay`` is asked: the recorded run and where its replay goes."""

    run_dir: str
    runs_dir: str


class Divergence(BaseModel):
    """The first call whose request differs from the recorded one."""

    seat: str
    call: int
    round_number: int
    recorded_sha256: str | None
    replayed_sha256: str | None

    def line(self) -> str:
        """One line naming the call."""
        return (
            f"first divergence: {self.seat} call {self.call} (round {self.round_number}): "
            f"request sha256 {(self.replayed_sha256 or 'none')[:12]}, recorded "
            f"{(self.recorded_sha256 or 'none')[:12]}"
        )


class ReplayReport(BaseModel):
    """What a replay found."""

    source_run_id: str
    replay_run_id: str
    replay_url: str
    calls: int
    events: int
    fingerprinted: bool
    divergence: Divergence | None
    event_diff: str | None
    """A unified diff of the first event that differs (after the ignored fields), or None."""
    event_divergence: str | None = None
    """One line naming the first event that differs (``first divergence: event 12
    (tool_call_invoked, player_b, round 1): args differ``), or None."""
    interleaved: bool = False
    """True when the events differ only in how the seats' interleave (each seat's are the same):
    a divergence all the same, since the replay takes each answer up where the record did."""
    stalled: str | None = None
    """Why the replay could not go on (every task waited; the record's next event named)."""
    verdicts_equal: bool
    spend_equal: bool
    recorded_cost_usd: float | None
    replayed_cost_usd: float | None
    seconds: float

    @property
    def identical(self) -> bool:
        """True when nothing differs."""
        return (
            self.divergence is None
            and self.event_diff is None
            and self.stalled is None
            and self.verdicts_equal
            and self.spend_equal
        )


def normalized(
    event: Event, run_ids: tuple[str, ...], ignored: frozenset[str] = IGNORED
) -> dict[str, Any]:
    """``event`` as compared: without ``ignored`` fields, run ids and uuids blanked."""
    dumped = event.model_dump(mode="json")
    if isinstance(event, AgentHistoryAppended):  # what the provider stamped is not the run's
        dumped["messages"] = unstamped(dumped["messages"])
    text = json.dumps(_without_ignored(dumped, ignored), sort_keys=True)
    for run_id in run_ids:
        text = text.replace(run_id, "<run>")
    loaded: dict[str, Any] = json.loads(_UUID.sub("<id>", text))
    return loaded


def _without_ignored(value: Any, ignored: frozenset[str]) -> Any:
    if isinstance(value, list):
        return [_without_ignored(v, ignored) for v in value]
    if isinstance(value, dict):
        return {k: _without_ignored(v, ignored) for k, v in value.items() if k not in ignored}
    return value


def first_event_diff(
    recorded: RunView, replayed: RunView, fingerprinted: bool = True
) -> tuple[str | None, bool]:
    """The first differing event of the two logs as a diff, and whether only seats interleave.

    The diff is None when the events are the same, in the same order; the flag is True when
    they differ only in how the seats' events interleave (every seat's own events, by
    ``agent_id``, events of no seat as one more stream, the same in the same order). A replay
    takes each answer up where the recorded run did, so that too is a divergence; the flag says
    which kind. A recorded log without fingerprints (``fingerprinted`` False) is compared
    without them.
    """
    ids = (recorded.started.run_id if recorded.started else "",
           replayed.started.run_id if replayed.started else "")  # fmt: skip
    ignored = _ignored(recorded, fingerprinted)
    left = [normalized(e, ids, ignored) for e in recorded.events]
    right = [normalized(e, ids, ignored) for e in replayed.events]
    if left == right:
        return None, False
    interleaved = _by_seat(left) == _by_seat(right)
    index = first_differing(left, right)
    if index is not None:
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a != b:
            diff = difflib.unified_diff(
                json.dumps(a, indent=1, sort_keys=True).splitlines(),
                json.dumps(b, indent=1, sort_keys=True).splitlines(),
                f"recorded event {index + 1}",
                f"replayed event {index + 1}",
                lineterm="",
            )
            return "\n".join(diff), interleaved
    raise AssertionError("unreachable: the logs differ")


def _ignored(recorded: RunView, fingerprinted: bool) -> frozenset[str]:
    """:data:`IGNORED`, and what the recorded log was written without.

    Request fingerprints (``fingerprinted`` False); where a stop cut the seats off
    (``stopped_after_events``, null on every ``simulation_ended``); the clock each process
    played on (``clock``, null on every ``simulation_started`` and ``run_resumed``).
    """
    ignored = IGNORED if fingerprinted else IGNORED | {"request_sha256", "cache_key"}
    ends = [e for e in recorded.events if isinstance(e, SimulationEnded)]
    if all(e.stopped_after_events is None for e in ends):
        ignored |= {"stopped_after_events"}
    starts = [e for e in recorded.events if isinstance(e, SimulationStarted | RunResumed)]
    if all(e.clock is None for e in starts):
        ignored |= {"clock"}
    return ignored


def first_differing(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> int | None:
    """The index of the first event that differs between two normalised logs, or None."""
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a != b:
            return index
    return None


def event_divergence_line(
    recorded: RunView,
    replayed: RunView,
    fingerprinted: bool,
    events: tuple[list[Event], list[Event]] | None = None,
) -> str:
    """One line naming the first event the replay logged otherwise than the record.

    ``first divergence: event 12 (tool_call_invoked, player_b, round 1): args differs``: its
    place in the log (from 1), type, seat, round and the fields that differ; or the event one
    log has and the other lacks. ``events``: the two lists compared (default: each whole log).
    """
    ids = (recorded.started.run_id if recorded.started else "",
           replayed.started.run_id if replayed.started else "")  # fmt: skip
    ignored = _ignored(recorded, fingerprinted)
    was, now = events if events is not None else (recorded.events, replayed.events)
    left = [normalized(e, ids, ignored) for e in was]
    right = [normalized(e, ids, ignored) for e in now]
    index = first_differing(left, right)
    if index is None:
        return "first divergence: none"
    a = left[index] if index < len(left) else None
    b = right[index] if index < len(right) else None
    shown = a if a is not None else b
    assert shown is not None  # one of the two logs holds the event at ``index``
    where = ", ".join(
        str(v)
        for v in (
            shown.get("event_type"),
            shown.get("agent_id") or shown.get("sender_id"),
            f"round {shown.get('round_number')}",
        )
        if v
    )
    if a is None or b is None:
        what = "only the replay logged it" if a is None else "the replay did not log it"
    elif a.get("event_type") != b.get("event_type"):
        what = f"the replay logged {b.get('event_type')}"
    else:
        fields = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        what = f"{', '.join(fields)} differ{'s' if len(fields) == 1 else ''}"
    return f"first divergence: event {index + 1} ({where}): {what}"


def _by_seat(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    streams: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        streams.setdefault(str(event.get("agent_id", event.get("sender_id", ""))), []).append(event)
    return streams


def first_divergence(recorded: Tape, replayed: Tape) -> Divergence | None:
    """The first call of the replay (in its log's order) whose fingerprint differs."""
    calls = sorted((c for seat in replayed.calls.values() for c in seat), key=lambda c: c.line)
    for call in calls:
        was = recorded.call(call.seat, call.call)
        if was is None or was.request_sha256 != call.request_sha256:
            return Divergence(
                seat=call.seat,
                call=call.call,
                round_number=call.round_number,
                recorded_sha256=was.request_sha256 if was else None,
                replayed_sha256=call.request_sha256,
            )
    for seat, seat_calls in recorded.calls.items():  # a call the replay never made
        made = len(replayed.calls.get(seat, []))
        if made < len(seat_calls):
            was = seat_calls[made]
            return Divergence(seat=seat, call=was.call, round_number=was.round_number,
                              recorded_sha256=was.request_sha256, replayed_sha256=None)  # fmt: skip
    return None


def replay_run(request: ReplayRequest) -> ReplayReport:
    """Replay the run at ``request.run_dir`` into ``request.runs_dir`` and compare.

    Raises:
        DeriveError: not a run folder or no log (66); a run that has not ended, or whose log
            lost an event (a damaged line; 65).
        LaunchError: its recorded knobs no longer validate (65).
    """
    return run_replay(_replay(request))


async def _replay(request: ReplayRequest) -> ReplayReport:
    from glossogen.derive import DeriveError

    source, started, recorded, config = _source(request.run_dir)
    if recorded.ended is None or recorded.status in ("running", "stopped"):
        raise DeriveError(f"run {started.run_id} has not ended: only an ended run is replayed")
    began = time.monotonic()
    folder, stalled = await _play_tape(recorded, config, started, request.runs_dir, None)
    seconds = time.monotonic() - began
    replayed = RunView.load(folder.log_url)
    tape = recorded.tape
    fingerprinted = tape.fingerprinted
    divergence = first_divergence(tape, replayed.tape) if fingerprinted else None
    event_diff, interleaved = first_event_diff(recorded, replayed, fingerprinted)
    event_line = (
        event_divergence_line(recorded, replayed, fingerprinted)
        if event_diff is not None and divergence is None and stalled is None
        else None
    )
    return ReplayReport(
        source_run_id=started.run_id,
        replay_run_id=folder.run_id,
        replay_url=folder.url,
        calls=tape.count,
        events=len(replayed.events),
        fingerprinted=fingerprinted,
        divergence=divergence,
        event_diff=event_diff,
        event_divergence=event_line,
        interleaved=interleaved,
        stalled=stalled,
        verdicts_equal=recorded.verdicts == replayed.verdicts,
        spend_equal=recorded.spend.total_cost_usd == replayed.spend.total_cost_usd,
        recorded_cost_usd=recorded.spend.total_cost_usd,
        replayed_cost_usd=replayed.spend.total_cost_usd,
        seconds=seconds,
    )


def _source(run_dir: str) -> tuple[Any, Any, RunView, Any]:
    """The recorded run's folder, ``simulation_started``, view and recorded config."""
    from glossogen.derive._resume import ResumePoint, read_run_view, run_folder
    from glossogen.derive._state import read_state
    from glossogen.launch import recorded_config

    source = run_folder(run_dir)
    recorded = read_run_view(source, whole_for="replayed")  # refuses a log that lost an event
    events, started = recorded.events, recorded.started
    assert started is not None  # read_run_view refuses a log that starts no run
    config = recorded_config(ResumePoint(source, read_state(events), started, events))
    return source, started, recorded, config


async def _play_tape(
    recorded: RunView, config: Any, started: Any, runs_dir: str, through: int | None
) -> tuple[Any, str | None]:
    """Play the recorded run from its tape into a new folder under ``runs_dir``.

    Process by process as recorded, each seat's steps in the recorded order
    (:class:`~glossogen.replay._sequencer.Sequencer`); with ``through``, only rounds
    1..``through`` (the last process sealed ``interrupted`` there). Returns the folder, and
    why the replay stalled (then sealed ``interrupted`` where it stalled), or None.
    """
    from glossogen.launch import (
        ResumeRequest,
        check_runs_dir,
        claim_run,
        open_session,
        plan_resume,
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
    times = game_times(
        recorded.events, found_over(recorded.events, cut_off(owners, recorded.events))
    )
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
            config, point = plan_resume(ResumeRequest(run_dir=folder.url))
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
            clock_of=partial(_recorded_clock, recorded.events, times, before) if real else None,
        )
        if point is not None and (stopped or number == 0):
            # each seat goes on from its calls the log holds (a derived run's: its prefix's)
            pacing.calls = {s: len(c) for s, c in read_tape(point.events).calls.items()}
        logged = partial(_logged, before, session.writer)
        returned = partial(_has_returned, session.engine.runners)
        quiet = partial(_steps_quietly, session.engine.runners)
        sequencer = Sequencer(recorded.events, logged, seats, hosted or real, real, returned,
                              quiet)  # fmt: skip
        pacing.bind(session.engine.clock.sleep, sequencer.reached)
        pacing.ordered = hosted or real
        first = point.next_round if point is not None else 1
        for round_number in range(first, process.last_round + 1):
            await sequencer.play(session.play_round(round_number))
            if session.ended_early() or sequencer.stalled:
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
            kept.append(_Process(through, "interrupted", "replayed through the fork point"))
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


def _logged(before: int, writer: EventLogWriter) -> int:
    """Events in the replay's log: those before this process, and those it appended."""
    return before + writer.count


def _recorded_clock(
    recorded: list[Event], times: list[float], before: int, writer: EventLogWriter
) -> RecordedClock:
    """The clock of a process that played on the real clock, read at the replay's place."""
    return RecordedClock(recorded, times, partial(_logged, before, writer))


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
    for index, event in enumerate(events):
        if isinstance(event, SimulationStarted | RunResumed):
            clock = event.clock  # the process that ends next played on it
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
            segments.append(_Process(last, event.status, event.error, cut, clock))
    return segments


class ForkPointCheck(BaseModel):
    """Whether a run's rounds 1..N replay from its tape as recorded (``fork-at-round --replay``)."""

    source_run_id: str
    after_round: int
    calls: int
    """The recorded model calls of rounds 1..N, each replayed."""
    events: int
    """The recorded events of rounds 1..N, each compared."""
    fingerprinted: bool
    divergence: Divergence | None
    event_divergence: str | None
    stalled: str | None = None
    """Why the replay of rounds 1..N could not go on, or None."""

    @property
    def reproduced(self) -> bool:
        """True when every request and every event of rounds 1..N is the same."""
        return self.divergence is None and self.event_divergence is None and not self.stalled

    def said(self) -> str:
        """The line every surface gives for a fork whose rounds 1..N were replayed."""
        n = self.after_round
        return (
            f"replayed rounds 1..{n} of {self.source_run_id} from its tape: {self.calls} calls, "
            f"{self.events} events reproduced"
            + ("" if self.fingerprinted else " (no request fingerprints in its log)")
            + f"; the new run's rounds 1..{n} are the replay's"
        )


def check_fork_point(run_dir: str, after_round: int) -> ForkPointCheck:
    """Replay rounds 1..``after_round`` of the run at ``run_dir`` from its tape, and compare.

    Played as :func:`replay_run` plays a whole run (the ``replay`` provider, the virtual
    clock), into a temporary folder removed afterwards; compared are the requests of those
    rounds (fingerprints, ``(seat, call)`` by ``(seat, call)``) and their events. Nothing is
    sent anywhere and nothing is written beside the source.

    Raises:
        DeriveError: not a run folder or no log (66); a log that lost an event (65).
        LaunchError: its recorded knobs no longer validate (65).
    """
    return run_replay(_check_fork_point(run_dir, after_round))


def replayed_fork_point(run_dir: str, after_round: int) -> ForkPointCheck:
    """:func:`check_fork_point`, refusing a fork point that does not reproduce.

    Raises:
        DeriveError: (1) the first differing request or event, in one line; or as
            :func:`check_fork_point`.
    """
    return replayed_rounds(run_dir, after_round).check


def replayed_rounds(run_dir: str, after_round: int) -> ReplayedRounds:
    """Rounds 1..``after_round`` of the run at ``run_dir`` played from its tape, and their log.

    As :func:`check_fork_point` plays and compares them; the replay's log (read before its
    temporary folder is removed) is kept for the fork to be written from: what
    ``fork-at-round --replay`` hands ``glossogen.derive.prepare_fork`` (its ``replay_check``).

    Raises:
        DeriveError: (1) the first differing request or event, in one line; or as
            :func:`check_fork_point`.
    """
    from glossogen.derive import DeriveError, ReplayedRounds

    events: list[Event] = []
    replayed = run_replay(_check_fork_point(run_dir, after_round, events))
    diverged = replayed.divergence.line() if replayed.divergence else replayed.event_divergence
    diverged = diverged or replayed.stalled
    if diverged is not None:
        raise DeriveError(f"rounds 1..{after_round} do not replay from the tape: {diverged}", 1)
    return ReplayedRounds(replayed, events)


def _rounds_through(view: RunView, through: int) -> list[Event]:
    return [
        e
        for e in view.counted
        if e.round_number <= through and not isinstance(e, SimulationEnded | RunResumed)
    ]


async def _check_fork_point(
    run_dir: str, after_round: int, keep: list[Event] | None = None
) -> ForkPointCheck:
    """:func:`check_fork_point`; ``keep``, when given, receives the replay's whole log."""
    import tempfile

    _, started, recorded, config = _source(run_dir)
    with tempfile.TemporaryDirectory(prefix="glossogen-fork-replay-") as scratch:
        folder, stalled = await _play_tape(recorded, config, started, scratch, after_round)
        replayed = RunView.load(folder.log_url)
    if keep is not None:
        keep.extend(replayed.read.events)
    tape = recorded.tape
    fingerprinted = tape.fingerprinted
    divergence = _prefix_divergence(tape, replayed.tape, after_round) if fingerprinted else None
    was, now = _rounds_through(recorded, after_round), _rounds_through(replayed, after_round)
    event_line = None
    if divergence is None:
        line = event_divergence_line(recorded, replayed, fingerprinted, (was, now))
        event_line = None if line == "first divergence: none" else line
    return ForkPointCheck(
        source_run_id=started.run_id,
        after_round=after_round,
        calls=sum(c.round_number <= after_round for cs in tape.calls.values() for c in cs),
        events=len(was),
        fingerprinted=fingerprinted,
        divergence=divergence,
        event_divergence=event_line,
        stalled=stalled,
    )


def _prefix_divergence(recorded: Tape, replayed: Tape, through: int) -> Divergence | None:
    """:func:`first_divergence` over the calls of rounds 1..``through`` only."""
    made = sorted(
        (c for seat in replayed.calls.values() for c in seat if c.round_number <= through),
        key=lambda c: c.line,
    )
    for call in made:
        was = recorded.call(call.seat, call.call)
        if was is None or was.request_sha256 != call.request_sha256:
            return Divergence(seat=call.seat, call=call.call, round_number=call.round_number,
                              recorded_sha256=was.request_sha256 if was else None,
                              replayed_sha256=call.request_sha256)  # fmt: skip
    for seat, seat_calls in recorded.calls.items():  # a call of those rounds never made
        wanted = [c for c in seat_calls if c.round_number <= through]
        count = sum(c.round_number <= through for c in replayed.calls.get(seat, []))
        if count < len(wanted):
            was = wanted[count]
            return Divergence(seat=seat, call=was.call, round_number=was.round_number,
                              recorded_sha256=was.request_sha256, replayed_sha256=None)  # fmt: skip
    return None
