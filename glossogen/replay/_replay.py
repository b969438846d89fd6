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

import asyncio
import difflib
import json
import re
import time
from functools import partial
from typing import Any

from pydantic import BaseModel
from pydantic_ai.models import Model

from glossogen.engine._fingerprint import unstamped
from glossogen.engine._requests import UNBILLED
from glossogen.eventlog import (
    AgentHistoryAppended,
    Event,
    EventLogWriter,
    RunResumed,
    RunView,
    SimulationEnded,
    Tape,
)
from glossogen.replay._model import Pacing, replay_model

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
    """True when the events are the same seat by seat but interleave otherwise (HTTP order)."""
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

    The diff is None when the events are the same; the flag is True when they are the same
    only once each seat's events are read apart.

    Events are compared in log order. When that fails but every seat's own events (by
    ``agent_id``; events of no seat as one more stream) are the same in the same order, the
    logs differ only in how the seats' events interleave: over HTTP that is which answer the
    event loop handled first, not something the run decided. That is no divergence (the
    second value says it happened). A recorded log without fingerprints (``fingerprinted``
    False) is compared without them.
    """
    ids = (recorded.started.run_id if recorded.started else "",
           replayed.started.run_id if replayed.started else "")  # fmt: skip
    ignored = IGNORED if fingerprinted else IGNORED | {"request_sha256"}
    left = [normalized(e, ids, ignored) for e in recorded.events]
    right = [normalized(e, ids, ignored) for e in replayed.events]
    if left == right:
        return None, False
    if _by_seat(left) == _by_seat(right):
        return None, True
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
            return "\n".join(diff), False
    raise AssertionError("unreachable: the logs differ")


def first_differing(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> int | None:
    """The index of the first event that differs between two normalised logs, or None."""
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a != b:
            return index
    return None


def event_divergence_line(recorded: RunView, replayed: RunView, fingerprinted: bool) -> str:
    """One line naming the first event the replay logged otherwise than the record.

    ``first divergence: event 12 (tool_call_invoked, player_b, round 1): args differ``: its
    place in the log (from 1), type, seat, round and the fields that differ; or the event one
    log has and the other lacks.
    """
    ids = (recorded.started.run_id if recorded.started else "",
           replayed.started.run_id if replayed.started else "")  # fmt: skip
    ignored = IGNORED if fingerprinted else IGNORED | {"request_sha256"}
    left = [normalized(e, ids, ignored) for e in recorded.events]
    right = [normalized(e, ids, ignored) for e in replayed.events]
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
        DeriveError: not a run folder or no log (66); a run that has not ended (65).
        LaunchError: its recorded knobs no longer validate (65).
    """
    return asyncio.run(_replay(request))


async def _replay(request: ReplayRequest) -> ReplayReport:
    from glossogen.derive import DeriveError
    from glossogen.derive._resume import ResumePoint, read_run_log, run_folder
    from glossogen.derive._state import read_state
    from glossogen.launch import (
        ResumeRequest,
        check_runs_dir,
        claim_run,
        open_session,
        plan_resume,
        price_spend,
        recorded_config,
    )

    source = run_folder(request.run_dir)
    events, started = read_run_log(source)
    recorded = RunView.load(source.log_url)
    if recorded.ended is None or recorded.status in ("running", "stopped"):
        raise DeriveError(f"run {started.run_id} has not ended: only an ended run is replayed")
    check_runs_dir(request.runs_dir)
    config = recorded_config(ResumePoint(source, read_state(events), started, events))
    tape = recorded.tape
    seats = {seat.agent_id: seat for seat in config.seats}
    latency = config.build().scripted_latency_seconds
    pacing = Pacing()
    models: dict[str, Model] = {
        agent_id: replay_model(
            tape,
            agent_id,
            seat.model,
            pacing,
            latency if seat.provider == "scripted" else 0.0,
            paced=seat.provider not in UNBILLED,
        )
        for agent_id, seat in seats.items()
    }
    judge: Model | None = None
    if config.judge is not None and config.judge.provider != "scripted":
        judge = replay_model(tape, "judge", config.judge.model, pacing)
    segments = _segments(recorded.events)
    began = time.monotonic()
    folder = claim_run(config, request.runs_dir)
    first = 1
    for number, (last_round, ended) in enumerate(segments):
        point = None
        if number:
            config, point = plan_resume(ResumeRequest(run_dir=folder.url))
        session = open_session(
            config,
            folder,
            clock_start=started.timestamp,
            resume=point,
            agent_models=models,
            judge_model=judge,
            virtual_clock=True,
        )
        before = len(point.events) if point is not None else 0
        pacing.bind(session.engine.clock.sleep, partial(_logged, before, session.writer))
        first = point.next_round if point is not None else 1
        for round_number in range(first, last_round + 1):
            await session.play_round(round_number)
            if session.ended_early():
                break
        await session.settle_requests()
        session.finish(price_spend(folder), ended.status, ended.error)
    seconds = time.monotonic() - began
    replayed = RunView.load(folder.log_url)
    fingerprinted = tape.fingerprinted
    divergence = first_divergence(tape, replayed.tape) if fingerprinted else None
    event_diff, interleaved = first_event_diff(recorded, replayed, fingerprinted)
    event_line = (
        event_divergence_line(recorded, replayed, fingerprinted)
        if event_diff is not None and divergence is None
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
        verdicts_equal=recorded.verdicts == replayed.verdicts,
        spend_equal=recorded.spend.total_cost_usd == replayed.spend.total_cost_usd,
        recorded_cost_usd=recorded.spend.total_cost_usd,
        replayed_cost_usd=replayed.spend.total_cost_usd,
        seconds=seconds,
    )


def _logged(before: int, writer: EventLogWriter) -> int:
    """Events in the replay's log: those before this process, and those it appended."""
    return before + writer.count


def _segments(events: list[Event]) -> list[tuple[int, SimulationEnded]]:
    """Each recorded process's last round and its ending: the rounds it played, how it ended.

    A process ends at its ``simulation_ended``; the next begins at ``run_resumed``, whose
    ``after_round`` is where the earlier one stopped.
    """
    segments: list[tuple[int, SimulationEnded]] = []
    played = 0
    for event in events:
        if isinstance(event, RunResumed) and segments:
            last, ended = segments[-1]
            segments[-1] = (event.after_round, ended)
        elif isinstance(event, SimulationEnded):
            played = max(played, event.rounds_played or 0)
            segments.append((max(played, event.round_number), event))
    return segments
