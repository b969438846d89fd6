"""What a replay is compared on: each call's request, every event, in order.

:func:`first_divergence` finds the first call of the replay whose request fingerprint
(``request_sha256``) differs from the recorded call's, ``(seat, call)`` by ``(seat, call)``;
:func:`first_event_diff` and :func:`event_divergence_line` the first event that differs once
what a replay changes by design (:data:`IGNORED`: ids, timestamps, wall-clock seconds, the
code's versions) is left out. :func:`prefix_divergence` is the first over rounds 1..N only
(``fork-at-round --replay``).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from glossogen.engine._fingerprint import unstamped
from glossogen.eventlog import (
    AgentHistoryAppended,
    Event,
    RunResumed,
    RunView,
    SimulationEnded,
    SimulationStarted,
    Tape,
)

if TYPE_CHECKING:
    pass


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


def prefix_divergence(recorded: Tape, replayed: Tape, through: int) -> Divergence | None:
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
