"""A replay's seats take their steps in the order the recorded log shows.

Over HTTP, which answer came back first was the network's doing, and everything the seats did
after it (what each logged, when each read the other's message) followed from that order. A
replay answers every call at once, so left to the event loop its seats would interleave as the
loop runs them, not as the record did. The :class:`Sequencer` puts the record's order back:

- Every task of a seat (its phase task, and the tasks it starts: its model requests, its tools;
  :data:`~glossogen.engine.SEAT` names the seat) is wrapped (:class:`_Gated`, through the event
  loop's task factory) so that each of its steps first asks the sequencer. A seat may step while
  the next event of the recorded log is its own or the judge's: a seat whose next step may log
  an event that is not the next recorded one waits until it is. Its answer, handed over at
  once, is thus taken up exactly where the recorded run took its answer up, between the same
  two events.
- The round's own task (and what it starts: the phase's wait for a change) steps only while
  the next recorded event is one no seat logs, or a tool result the phase's end logged
  (:func:`cut_off`): it does not decide that the phase is settled, idle or over while the
  record shows a seat's event (its next request) still to come first.
- A request the record logged abandoned (a phase end or a stop cut its asker off; the ledger
  logged it when its answer came) is answered once the replay's log holds the events the
  record held before it (:meth:`Sequencer.reached`), not at once; one still open when its
  process's rounds are played is answered then (:meth:`Sequencer.release`).
- A process with no hosted seat that played on the virtual clock is not ordered: its seats'
  answers came on the game clock, which the replay plays again as it was. One that played on
  the real clock is ordered, hosted seat or not: real time interleaved its seats. An ordered
  one on the virtual clock plays on a :class:`~glossogen.replay._clock.PacedClock`: a sleep
  (a scripted seat's latency) passes where the record's timestamps show the game time moved,
  which :meth:`Sequencer._due` checks as the log moves, not when the model calls the sequencer
  holds to the recorded order release the clock.
- A step that receives a cancellation goes (a phase end, a stop: the round's task cancels the
  seats), but a seat's waits while the next recorded event is another seat's: the seats cut
  off close their histories (their tool results, :func:`cut_off`) in the recorded order. While
  the next is the seat's own ``llm_response_received`` (an answer that had come when the cut
  reached it), its other tasks' steps already due go first (:meth:`Sequencer._answer_first`).
- When every task waits (nothing is ready to run on the event loop, a :class:`ReplayLoop`) and
  some task waits for its turn, the round's own task, else the seat that has waited longest,
  takes one step: a step that logs nothing but that
  another seat waits on. When every task waits and none for its turn, a sleep the record's
  time has not passed yet passes (the first to begin). When nothing at all can go on, the
  replay is stuck:
  :attr:`Sequencer.stalled` names the recorded event it waited for (its place in the log, type,
  seat, round and the seat's call), and the round is cancelled. No time bounds either: "every
  task waits" is read from the event loop itself.
- A process of the run that was stopped mid-round (``cut``): once the replay's log holds as
  many events as the record did when the stop reached the round
  (``simulation_ended.stopped_after_events``), no seat takes another step and the round is
  cancelled, as the stop cancelled it. Once that cancellation reaches the round's own task (it
  then cancels the seats), the seats go on as the record's did after the stop came: a step
  already due (a tool's effect in a task of its own) and their cancellations, which close
  what each seat had open.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import Callable, Coroutine, Generator, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar, TypeVarTuple

import anyio

from glossogen.engine import SEAT
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
from glossogen.replay._clock import PacedClock

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

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


class Sequencer:
    """Orders the steps of a replay's seats by the recorded log (the module docstring).

    ``recorded``: the recorded log's events; ``logged``: how many events the replay's log holds
    (its place in ``recorded``); ``seats``: the run's seats; ``ordered``: whether the seats'
    steps are ordered by the log (a hosted seat, or a process on the real clock); ``real``:
    whether the process played on the real clock; ``returned``: whether a seat's tool call has
    returned in the replay (``agent_id``, ``tool_call_id``); ``quiet``: whether a seat's next
    step logs nothing (``agent_id``): it has given its final answer and not yet taken up its
    next prompt, or a wake reached it as it waited for news (:meth:`may_step`); ``asking``:
    whether an unbilled seat has built its next request and not yet handed it to its model.
    """

    def __init__(
        self,
        recorded: list[Event],
        logged: Callable[[], int],
        seats: Iterable[str],
        ordered: bool,
        real: bool = False,
        returned: Callable[[str, str], bool] | None = None,
        quiet: Callable[[str], bool] | None = None,
        asking: Callable[[str], bool] | None = None,
        paced: PacedClock | None = None,
    ) -> None:
        known = frozenset(seats)
        self._paced = paced
        """The process's clock when its sleeps pass where the record's time moved: the log's
        moves pass them (:meth:`_due`), and one passes when nothing else can go on."""
        self._asking = asking  # an unbilled seat preparing the request it built: logs nothing
        self._returned = returned
        """Whether a seat's tool call (``agent_id``, ``tool_call_id``) has returned in the
        replay (its result kept for the history): see :meth:`_closed_by_the_end`."""
        self._quiet = quiet
        """Whether a seat's next step logs nothing (``agent_id``): see :meth:`may_step`."""
        self._ordered = ordered
        self._recorded = recorded
        self._seats = known
        self._owners = [owner(e, known) for e in recorded]
        self._closing = cut_off(self._owners, recorded)
        self._owners = judge_askers(recorded, self._owners)  # gating only (not the calls')
        ends = found_over(recorded, self._closing)
        self._ends = sorted((place, end) for end, place in ends.items())
        """Each phase end's run of what the round's task logged as it ended the phase: from
        where it found the phase over to the end's own event (``(place, end)``)."""
        self._timed: frozenset[int] = frozenset()
        """Where the round's task found a phase over by time, on the real clock: there the
        seats take every step they can before it does (:meth:`_next_granted`)."""
        if real:
            self._timed = timed_out(recorded, ends)
        self.logged = logged
        self.cut: int | None = None
        self._stopping = False
        self.stalled: str | None = None
        """Why the replay could not go on (the recorded event it waited for), or None."""
        self._turns: list[asyncio.Future[None]] = []
        self._waiting: dict[_Gated, tuple[bool, int]] = {}
        self._order = itertools.count()
        self._granted: _Gated | None = None
        self._released = False
        self._deferred = False
        """A seat's cancellation waits for another of its tasks' step (:meth:`_answer_first`)."""
        self._places: list[tuple[int, Callable[[], bool], asyncio.Future[None]]] = []

    # -- the gate ------------------------------------------------------------------------------
    def may_step(self, gated: _Gated, exc: BaseException | None) -> bool:
        """Whether ``gated`` (a task's coroutine) may take its next step now."""
        seat = SEAT.get()
        cancelling = isinstance(exc, asyncio.CancelledError) or gated.cancelled
        if self._granted is gated:
            self._granted = None
            return True
        if self.stalled is not None:
            return True  # given up: every task goes (and a cancellation ends what it cuts)
        at = self.logged()
        if self._past_cut(at):
            return self._may_step_stopped(seat, cancelling, at)
        if not self._ordered:
            return True  # every seat on this machine: the game clock ordered them, as it does now
        if seat is None:  # the round's own task (and what it starts): not ahead of a seat's
            return cancelling or self._round_may_step(at)
        return self._seat_may_step(seat, cancelling, at)

    def _owner_at(self, at: int) -> str | None:
        """Who logged the recorded event ``at`` (a seat, the judge), or None past the record."""
        return self._owners[at] if at < len(self._owners) else None

    def _round_may_step(self, at: int) -> bool:
        """Whether the round's own task, not cancelling, may step now (the record is ordered)."""
        if at in self._timed:  # a limit the real clock passed: the seats had done theirs
            return False
        if self._unreturned(at):  # a tool the phase's end found returned is still running
            return False
        return self._owner_at(at) in (JUDGE, None) or at in self._closing

    def _seat_may_step(self, seat: str, cancelling: bool, at: int) -> bool:
        """Whether ``seat``'s task may step now (the record is ordered)."""
        next_owner = self._owner_at(at)
        if cancelling:  # a seat cut off: not ahead of another seat's closing events
            if next_owner == seat and self._answer_first(seat, at):
                self._deferred = True  # its answer is taken up first; asked again then
                return False
            return next_owner not in self._seats or next_owner == seat
        if next_owner == seat and self._closed_by_the_end(seat, at):
            return False  # the phase's end closes it: the seat goes on only cut off
        if seat in self._unreturned(at):
            return True  # its tool returns before the phase's end cuts it off, as recorded
        if self._asking is not None and self._asking(seat):
            return True  # it prepares the request it built, unbroken, as it did
        if self._quiet is not None and self._quiet(seat) and self._end_run(at) is None:
            return True  # it goes idle or takes up its news where it did: a step logging none
        return next_owner in (seat, JUDGE)

    def _answer_first(self, seat: str, at: int) -> bool:
        """Whether ``seat``, cut off, first takes up the answer the record shows it had.

        The next recorded event is the seat's ``llm_response_received`` while the phase's end
        cuts it off: the answer had come when the cut reached the seat, so its cycle's end found
        it in the history and logged it (not its ledger, as abandoned). In the replay the answer
        came at once; another of the seat's tasks (pydantic-ai's, which puts the answer in the
        history) has a step due. That step goes before the seat's cancellation, as in the record.
        """
        return isinstance(self._recorded[at], LlmResponseReceived) and any(
            waiting.seat == seat and waiting.due for waiting in self._waiting
        )

    def _end_run(self, at: int) -> int | None:
        """The place of the phase end whose run of closing events holds ``at``, if any."""
        run = bisect.bisect(self._ends, (at, len(self._recorded))) - 1
        if run < 0 or at >= self._ends[run][1]:
            return None
        return self._ends[run][1]

    def _unreturned(self, at: int) -> set[str]:
        """The seats whose tool the coming phase end closes with its result, not yet returned.

        ``at``: the replay's place, inside that end's run (:meth:`_end_run`). When the round's
        task found the phase over (settled by a seat's tool, say), the other seats' tools woken
        by the same change (a wait handed the last notice) had returned: their cancellation
        closed each with its real result. In the replay such a seat's steps wait while the next
        recorded event is another seat's (the closing events come in the record's order), so
        its tool returns only if let: it steps until it has returned (then
        :meth:`_closed_by_the_end` holds it), and the round's task ends the phase only after.
        """
        end = self._end_run(at)
        if self._returned is None or end is None:
            return set()
        return {
            seat
            for index in range(at, end)
            if index in self._closing
            and isinstance(closing := self._recorded[index], ToolResultReceived)
            and not closing.interrupted
            and (seat := str(self._owners[index])) in self._seats
            and not self._returned(seat, closing.tool_call_id)
        }

    def _closed_by_the_end(self, seat: str, at: int) -> bool:
        """Whether the next recorded event is ``seat``'s tool result closed by the phase's end.

        That is: logged as the phase's end cut the seat off (:func:`cut_off`), not
        ``interrupted``, and its tool has now returned in the replay.

        Its tool returned before the phase ended, but the seat did not go on to build its next
        request from it: the round's task cut it off first, and its cancellation logged the
        result as it closed the history. Left to step, the seat would log the same result as it
        built that request and send it (its turn counted, the request answered from the tape
        with the answer to the seat's next recorded call). Its steps (not its cancellation's)
        wait from the moment the tool has returned, so the round's task ends the phase first.
        """
        closing = self._recorded[at]
        return (
            at in self._closing
            and isinstance(closing, ToolResultReceived)
            and not closing.interrupted
            and self._returned is not None
            and self._returned(seat, closing.tool_call_id)
        )

    def _may_step_stopped(self, seat: str | None, cancelling: bool, at: int) -> bool:
        """:meth:`may_step` once the replay's log holds the events before the stop (``cut``).

        No seat steps until the stop's cancellation reaches the round's own task; from then
        on, every run's seats (hosted or not) step in the order of what the stop logged (the
        record's events up to its ``simulation_ended``): a tool's effect in a task of its own,
        the tool calls each seat's cancellation closes.
        """
        if seat is None:
            if cancelling:
                self._stopping = True  # the stop reached the round: it cuts its seats off now
            return True
        if not self._stopping:
            return False
        next_owner = self._owners[at] if at < len(self._owners) else None
        if cancelling:  # what a cut-off seat logs: its closed tool calls (its effects: not)
            if next_owner != seat:
                return next_owner not in self._seats
            closing = self._recorded[at]
            if isinstance(closing, ToolResultReceived) and not closing.interrupted:
                # its tool had returned when the seat closed it: the seat's other tasks (the
                # tool's) go first; the close is granted once every task waits (:meth:`_watch`)
                return False
            return isinstance(closing, ToolResultReceived | ModelRequestAbandoned)
        return next_owner in (seat, JUDGE)

    def _past_cut(self, at: int) -> bool:
        return self.cut is not None and at >= self.cut

    def wait_turn(self, gated: _Gated) -> asyncio.Future[None]:
        """A future resolved when the log moves on (or ``gated`` is granted a step).

        One future per wait: a task cancelled while it waits cancels its own alone, but one
        whose refused step was a cancellation is not woken by another (:class:`_Turn`). The
        round's own tasks are granted a step before any seat's (:meth:`_watch`).
        """
        self._waiting.setdefault(gated, (SEAT.get() is not None, next(self._order)))
        turn = _Turn(loop=asyncio.get_running_loop())
        turn.holds_cancellation = isinstance(gated.held, asyncio.CancelledError)
        self._turns.append(turn)
        return turn

    def stepped(self, gated: _Gated) -> None:
        """``gated`` took a step: it no longer waits for its turn."""
        if self._waiting.pop(gated, None) is not None and self._deferred:
            self._deferred = False
            self._wake()  # a cancellation put off for this step (:meth:`_answer_first`) goes on

    async def reached(self, place: int, ready: Callable[[], bool]) -> None:
        """Return once the log holds ``place`` events and ``ready()``, or its process played out.

        What a request the record logged abandoned waits for before it answers: the ledger
        logged it when its answer came, after its asker was cut off (``ready``) and once the
        record's log held ``place`` events; handed over at once, the replay's asker would take
        it up, or its ledger log it earlier. Checked at every turn of the event loop while a
        round plays (:meth:`_watch`).
        """
        if self._released or (self.logged() >= place and ready()):
            return
        due: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._places.append((place, ready, due))
        await due

    def _due(self, everything: bool = False) -> None:
        """Resolve what :meth:`reached` waits for that is due (``everything``: all of it).

        First the sleeps the record's time at the replay's place has passed (a
        :class:`~glossogen.replay._clock.PacedClock`'s): the time moves before anything else
        steps, where the record's moved.
        """
        if self._paced is not None:
            self._paced.catch_up()
        if not self._places:
            return
        at, kept = self.logged(), []
        for place, ready, due in self._places:
            if everything or (at >= place and ready()):
                if not due.done():
                    due.set_result(None)
            elif not due.done():
                kept.append((place, ready, due))
        self._places = kept

    def release(self) -> None:
        """The process's rounds are played: what waits in :meth:`reached` goes on now."""
        self._released = True
        if self._paced is not None:
            self._paced.unpace()
        self._due(everything=True)

    def _wake(self) -> None:
        turns, self._turns = self._turns, []
        for turn in turns:
            if not turn.done():
                turn.set_result(None)

    # -- playing a round -----------------------------------------------------------------------
    def _factory(
        self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
    ) -> asyncio.Task[Any]:
        return asyncio.Task(_Gated(coro, self), loop=loop, **kwargs)

    async def play(self, round_play: Coroutine[Any, Any, Any], cut: int | None = None) -> None:
        """Play ``round_play`` (a round of the replay) with the seats' steps in recorded order.

        With ``cut``: cancel it, as a stop did, once the replay's log holds ``cut`` events.
        Runs on a :class:`ReplayLoop` (:func:`run_replay`), whose own queues say when every
        task waits.
        """
        loop = asyncio.get_running_loop()
        if not isinstance(loop, ReplayLoop):
            raise TypeError(f"a replay plays on a ReplayLoop (run_replay), not {type(loop)}")
        previous = loop.get_task_factory()
        loop.set_task_factory(self._factory)
        self.cut = cut
        try:
            task = asyncio.ensure_future(round_play)
            await self._watch(loop, task)
        finally:
            loop.set_task_factory(previous)
            self.cut = None
            self._stopping = False

    async def _watch(self, loop: ReplayLoop, task: asyncio.Future[Any]) -> None:
        """Wake the seats as the log moves; cut, grant or give up when every task waits."""
        seen = self.logged()
        cancelled = spared = False
        while not task.done():
            await asyncio.sleep(0)
            self._due()
            now = self.logged()
            if task.done():
                break
            if now != seen:
                seen = now
                self._wake()
            elif self.cut is not None and now >= self.cut and not cancelled:
                task.cancel()  # the stop came here
                cancelled = True
            elif loop.busy():
                spared = False
                continue
            elif loop.redelivering() and not spared:
                spared = True  # one turn of the loop for what anyio's re-delivery reaches first
                continue
            elif self._waiting and self._granted is None:  # one waits for its turn: it steps
                self._granted = self._next_granted(now)
                self._wake()
            elif self._paced is not None and self._paced.pass_first():
                continue  # a sleep the record's time had not passed: nothing else can go on
            elif not cancelled:  # every task waits and none for its turn: stuck
                self.stalled = self._stall_line(now)
                self._wake()  # given up: what waits for its turn goes on (:meth:`may_step`)
                task.cancel()
                cancelled = True
            else:  # cancelled, and still every task waits: leave the round where it hangs
                self.stalled = self.stalled or self._stall_line(now)
                return
        await _awaited(task, cancelled)

    def _next_granted(self, at: int) -> _Gated:
        """Who takes a step when every task waits.

        The round's own task, else the seat that has waited longest; where a real-clock phase
        was found over by time (``_timed``), the seats first: by then real time had let them
        take every step they could.
        """
        waiting = self._waiting
        if at in self._timed:
            seats = [gated for gated, (is_seat, _) in waiting.items() if is_seat]
            if seats:
                return min(seats, key=waiting.__getitem__)
        return min(waiting, key=waiting.__getitem__)

    def _stall_line(self, at: int) -> str:
        """One line naming the recorded event the replay waited for when it stalled."""
        if at >= len(self._recorded):
            return f"replay stalled after event {at}, the record's last"
        return (
            "replay stalled: every task waits and none can go on; the record's next event is "
            f"event {at + 1} ({describe(self._recorded[at])})"
        )


class ReplayLoop(asyncio.SelectorEventLoop):
    """The event loop a replay plays on: it can tell when every task waits on another.

    asyncio offers no public way to ask a loop whether anything is left to run, so
    :meth:`busy` reads the two queues of asyncio's base event loop (``BaseEventLoop._ready``,
    the callbacks to run now, and ``BaseEventLoop._scheduled``, the heap of timer handles), which
    CPython has kept under these names since asyncio began; a subclass reads them on itself,
    and ``tests/replay/test_sequencer_loop.py`` fails loudly if they change. The one thing
    those queues miss is work in a worker thread (the log's fsync at a round's end), whose
    completion arrives from outside: :meth:`run_in_executor`, overridden, counts it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.offloaded = 0
        """Calls running in a worker thread (:meth:`run_in_executor`) not yet returned."""

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*_Ts], _T], *args: *_Ts
    ) -> asyncio.Future[_T]:
        """As asyncio's, counted in :attr:`offloaded` until it returns."""
        future = super().run_in_executor(executor, func, *args)
        self.offloaded += 1
        future.add_done_callback(self._returned)
        return future

    def _returned(self, _: asyncio.Future[Any]) -> None:
        self.offloaded -= 1

    def busy(self) -> bool:
        """Whether the loop has anything to run now (callbacks ready, timers due, threads).

        False means every task waits on another task, or on real time: a replay plays on the
        virtual clock, so a timer not yet due (a request's deadline, which pydantic-ai keeps
        as a timer while a replayed request waits its turn) is nothing the replay waits for.
        Nor is an anyio cancel scope's re-delivery of its cancellation (:meth:`redelivering`),
        which anyio queues again at every turn of the loop until each task in the scope has
        ended: a task whose cancellation waits for its turn keeps it (:class:`_Turn`), so the
        re-delivery changes nothing, and counted as work it kept a stuck replay spinning for
        ever instead of saying where it stuck.
        """
        # Why asyncio's own queues and not a public mechanism (reviewed): the question is
        # whether any callback is due, not which tasks exist. The tasks the sequencer starts
        # (its task factory sees each) tell neither whether a task's wake-up is already queued
        # (a future resolved: ``Task`` keeps that in private state too) nor about callbacks that
        # are no task's (a future's done callbacks, ``call_soon`` from the engine or
        # pydantic-ai, the virtual clock's hand-offs). Overriding ``call_soon``/``call_at`` to
        # count handles until they run would be public, but it wraps every callback of the
        # replay (a frame each), must follow cancelled handles, and still misses what asyncio
        # queues without calling them (``call_soon_threadsafe``, selector events): a miss there
        # is a false "every task waits", a wrongly granted step. Two attributes, checked by
        # ``tests/replay/test_sequencer_loop.py``, are the smaller dependency.
        ready: Any = self._ready  # type: ignore[attr-defined]  # BaseEventLoop's (class doc)
        timers: Any = self._scheduled  # type: ignore[attr-defined]  # likewise
        now = self.time()
        due = any(not t.cancelled() and t.when() <= now for t in timers)
        work = any(not _redelivery(handle) for handle in tuple(ready))  # one copy: a thread's
        return bool(self.offloaded or work or due)  # call_soon_threadsafe appends to it too

    def redelivering(self) -> bool:
        """Whether an anyio cancel scope's re-delivery of its cancellation is queued.

        A cancelled scope cancels its tasks at once, and again at each turn of the loop those
        it could not reach then (the task that cancelled it, a task not yet started) until
        every task in it has ended. The replay gives it one turn of the loop before it calls
        every task waiting (:meth:`Sequencer._watch`).
        """
        ready: Any = self._ready  # type: ignore[attr-defined]  # BaseEventLoop's (class doc)
        return any(_redelivery(handle) for handle in tuple(ready))  # as :meth:`busy` reads it


def _redelivery(handle: asyncio.Handle) -> bool:
    """Whether ``handle`` is an anyio cancel scope re-delivering its cancellation.

    The one callback a scope queues to run soon (its deadline is a timer) is that re-delivery,
    a method of the scope: ``Handle._callback`` (asyncio's, read as :meth:`ReplayLoop.busy`
    reads the queues; ``tests/replay/test_sequencer_loop.py`` checks it) is bound to it.
    """
    callback: Any = handle._callback  # type: ignore[attr-defined]  # asyncio.Handle's (above)
    return isinstance(getattr(callback, "__self__", None), anyio.CancelScope)


class _Turn(asyncio.Future[None]):
    """What a task whose step was refused waits on: its turn, resolved when the log moves.

    A turn that holds a refused cancellation (``holds_cancellation``) is not cancelled by
    another: the task keeps that cancellation (asyncio's task takes it when its turn comes,
    :meth:`asyncio.Task.cancel`), and asks with it again then. Cancelled, it would wake the task
    only to be refused again, and an anyio cancel scope, which cancels each of its tasks
    at every turn of the loop until it ends, would do that for ever.
    """

    holds_cancellation = False

    def cancel(self, msg: Any | None = None) -> bool:
        """Cancel the wait, unless the task's cancellation is already held."""
        if self.holds_cancellation:
            return False
        return super().cancel(msg=msg)


def run_replay(replay: Coroutine[Any, Any, _T]) -> _T:
    """Run ``replay`` (what plays a recorded run) on a fresh :class:`ReplayLoop`.

    Called where an event loop already runs (a Prefect flow's task of a derived run), it runs
    on its own loop in a worker thread, and the caller waits for it as for any blocking call.
    """

    def on_its_own_loop() -> _T:
        with asyncio.Runner(loop_factory=ReplayLoop) as runner:
            return runner.run(replay)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return on_its_own_loop()
    with ThreadPoolExecutor(1, thread_name_prefix="glossogen-replay") as worker:
        return worker.submit(on_its_own_loop).result()


class _Gated(Coroutine[Any, Any, Any]):
    """A task's coroutine whose every step first asks the :class:`Sequencer`.

    The task drives it as it drives any coroutine (``send``/``throw``); a step the sequencer
    refuses yields a future that resolves when the log moves on, and is asked again then.
    """

    def __init__(self, inner: Coroutine[Any, Any, Any], sequencer: Sequencer) -> None:
        self._inner = inner
        self._sequencer = sequencer
        self.__qualname__ = getattr(inner, "__qualname__", type(inner).__name__)
        self.__name__ = getattr(inner, "__name__", self.__qualname__)
        self.held: BaseException | None = None
        """The cancellation (or error) its refused step was to receive, kept for its turn."""
        self._gate: asyncio.Future[None] | None = None
        self.cancelled = False
        """True once a cancellation reached the coroutine (it then goes on unasked)."""
        self.seat: str | None = None
        """The seat whose task this is (:data:`~glossogen.engine.SEAT`), once it first steps."""

    @property
    def due(self) -> bool:
        """Whether the step it waits to take is a plain one (no cancellation, no error)."""
        return self._gate is not None and self.held is None and not self.cancelled

    def send(self, value: Any) -> Any:
        if self._gate is not None:  # the gate's future resolved: ask again
            self._gate = None
            return self._step(self.held)
        return self._step(None)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:  # noqa: ARG002
        exc = typ if isinstance(typ, BaseException) else typ(val)
        if self._gate is not None:  # cancelled (or the gate's future failed) while waiting
            self._gate = None
        return self._step(exc)

    def close(self) -> None:
        self._inner.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._inner.__await__()

    def _step(self, exc: BaseException | None) -> Any:
        sequencer = self._sequencer
        self.seat = SEAT.get()
        if not sequencer.may_step(self, exc):
            self.held = exc
            gate = sequencer.wait_turn(self)
            self._gate = gate
            gate._asyncio_future_blocking = True  # what a task awaits it on (Future.__await__)
            return gate
        sequencer.stepped(self)
        self.held = None
        if exc is None:
            return self._inner.send(None)
        if isinstance(exc, asyncio.CancelledError):
            self.cancelled = True
        return self._inner.throw(exc)


async def _awaited(task: asyncio.Future[Any], cancelled: bool) -> None:
    """Await the round's task; its cancellation is its end when the watch cancelled it."""
    try:
        await task
    except asyncio.CancelledError:
        if not cancelled:
            raise


__all__ = [
    "ReplayLoop",
    "Sequencer",
    "cut_off",
    "describe",
    "found_over",
    "owner",
    "run_replay",
]
