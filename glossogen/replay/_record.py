"""What a recorded log says of who logged each event, and where each phase was found over.

Read once from the recorded events before a replay plays (pure functions of them), for the
sequencer (:mod:`glossogen.replay._sequencer`) and the recorded clock
(:mod:`glossogen.replay._clock`): each event's owner (a seat, the judge, or the round's own
task: :func:`owner`, :func:`judge_askers`), the seats' tool results a phase's end logged as it
cut them off (:func:`cut_off`), where the round's task found each phase over
(:func:`found_over`) and which phases it found over by their time limit (:func:`timed_out`).
"""

from __future__ import annotations

import bisect

from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    InjectionDelivered,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestSent,
    PostmortemEnded,
    RoundEnded,
    ToolResultReceived,
    WorldEventDelivered,
)

_ROUND_EVENTS = (
    AgentRegistered,
    AgentSwappedMidRun,
    AgentHistoryAppended,
    InjectionDelivered,
    WorldEventDelivered,
)
"""Events naming a seat that the round's task (briefings, notices, checkpoints, swaps) logs, not
the seat's own tasks."""


JUDGE = "judge"
"""The owner of the in-run judge's events (logged by whichever task asked it: a seat's tool, the
round's): any task may step towards them."""


def event_agent(event: Event) -> str | None:
    """The ``agent_id`` an event names, if any."""
    return getattr(event, "agent_id", None)


def owner(event: Event, seats: frozenset[str]) -> str | None:
    """The seat whose tasks logged ``event``, :data:`JUDGE`, or None (the round's task).

    An event naming a seat (``agent_id``; a message its ``sender_id``) is that seat's, a
    scenario's own included (a tool's effect), but for what the round's task or a callback
    logs about a seat (:data:`_ROUND_EVENTS`).
    """
    if isinstance(event, JudgeCalled) or event_agent(event) == JUDGE:
        return JUDGE
    if isinstance(event, ModelRequestAbandoned):  # its seat's request's end (the judge's: above)
        return event.agent_id if event.agent_id in seats else JUDGE
    if isinstance(event, _ROUND_EVENTS):
        return None
    who = getattr(event, "sender_id", None) or getattr(event, "agent_id", None)
    return who if who in seats else None


def judge_askers(recorded: list[Event], owners: list[str | None]) -> list[str | None]:
    """``owners`` with each judge ruling, and the requests it settled, given to the seat that asked.

    The log shows which seat asked where the event right after ``judge_called`` is a seat's. A
    seat's tool that asks the judge logs the ruling (``judge_called``) and what the scenario
    made of it for that seat in one step (``spot_the_difference_submission_judged``, naming
    the seat), so the seat whose event follows is the one that asked. Several seats' rulings
    in flight at once are then taken up, and asked, in the recorded order. A ruling followed
    by no seat's event stays the judge's (any task may step towards it).
    """
    found = list(owners)
    asked = {e.request_id: i for i, e in enumerate(recorded) if isinstance(e, ModelRequestSent)}
    for index, event in enumerate(recorded[:-1]):
        seat = owners[index + 1]
        if not isinstance(event, JudgeCalled) or seat in (JUDGE, None):
            continue
        found[index] = seat
        for request_id in event.request_ids:
            if request_id in asked:
                found[asked[request_id]] = seat
    return found


def _call_of(event: Event) -> int | None:
    """The seat's call a request or an answer names (its turn), or None."""
    if isinstance(event, ModelRequestSent):
        return event.call
    if isinstance(event, LlmResponseReceived):
        return event.cycle
    return None


def cut_off(owners: list[str | None], recorded: list[Event]) -> frozenset[int]:
    """The places of the seats' tool results the phase's end logged (the round's steps first).

    A seat's tool result is logged when pydantic-ai builds the next request from it (and the
    seat's turn count goes up), or, when the phase ended first, as the seat's cancellation
    closes its history. The second comes from the round's step that ends the phase, which must
    then go first. It shows in the record: the seat's next call is in a later phase and its
    turns go on without a gap (a gap: the request was built, then cut off before it was sent);
    an interrupted result, or one after which the seat made no call, is always the second.
    """
    closing: set[int] = set()
    calls: dict[str, list[int]] = {}  # each seat's call events, by place in the log
    for index, event in enumerate(recorded):
        if _call_of(event) is not None and owners[index] is not None:
            calls.setdefault(str(owners[index]), []).append(index)
    for index, event in enumerate(recorded):
        seat = owners[index]
        if not isinstance(event, ToolResultReceived) or seat is None:
            continue
        places = calls.get(seat, [])
        at = bisect.bisect(places, index)
        before = _call_of(recorded[places[at - 1]]) if at else 0
        later = recorded[places[at]] if at < len(places) else None
        if (
            event.interrupted
            or later is None
            or (
                (later.round_number, later.phase) != (event.round_number, event.phase)
                and _call_of(later) == (before or 0) + 1
            )
        ):
            closing.add(index)
    return frozenset(closing)


def found_over(recorded: list[Event], closing: frozenset[int]) -> dict[int, int]:
    """Where the round's task found each phase over: ``{its end's place: that place}``.

    A phase's end (``round_ended``, ``postmortem_ended``) is logged after what the round's task
    logs as it ends the phase: the tool calls the seats' cancellation closed (``closing``,
    :func:`cut_off`), the requests it left (logged abandoned) and the seats' history
    checkpoints. The first of those is where the phase was found over.
    """
    found: dict[int, int] = {}
    for end, event in enumerate(recorded):
        if not isinstance(event, RoundEnded | PostmortemEnded):
            continue
        place = end
        while place > 0:
            before = recorded[place - 1]
            left = isinstance(before, ModelRequestAbandoned) or place - 1 in closing
            checkpoint = isinstance(before, AgentHistoryAppended) and before.phase != "setup"
            if not (left or checkpoint):
                break
            place -= 1
        found[end] = place
    return found


def timed_out(recorded: list[Event], found: dict[int, int]) -> frozenset[int]:
    """Where the round's task found a phase over by its time limit (``trigger: timeout``)."""
    return frozenset(
        place
        for end, place in found.items()
        if getattr(recorded[end], "trigger", None) == "timeout"
    )


def describe(event: Event) -> str:
    """``event`` as a stall names it: type, seat, round and the seat's call."""
    seat = getattr(event, "agent_id", None) or getattr(event, "sender_id", None)
    call = getattr(event, "call", None) or getattr(event, "cycle", None)
    parts = [event.event_type, seat, f"round {event.round_number}", call and f"call {call}"]
    return ", ".join(str(p) for p in parts if p)


__all__ = [
    "JUDGE",
    "cut_off",
    "describe",
    "event_agent",
    "found_over",
    "judge_askers",
    "owner",
    "timed_out",
]
