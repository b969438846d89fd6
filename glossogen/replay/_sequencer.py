"""A replay's seats take their steps in the order the recorded log shows.

Over HTTP, which answer came back first was the network's doing, and everything the seats did
after it (what each logged, when each read the other's message) followed from that order. A
replay answers every call at once, so left to the event loop its seats would interleave as the
loop runs them, not as the record did. The :class:`Sequencer` puts the record's order back:

- Every task of a seat (its phase task, and the tasks it starts: its model requests, its tools;
  :data:`~glossogen.engine.SEAT` names the seat) is wrapped
  (:class:`~glossogen.replay._gate.Gated`, through the event loop's task factory) so that each
  of its steps first asks the sequencer. A seat may step while
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
- When every task waits (nothing is ready to run on the event loop, a
  :class:`~glossogen.replay._loop.ReplayLoop`) and
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
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from glossogen.engine import SEAT
from glossogen.eventlog import (
    Event,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ToolResultReceived,
)
from glossogen.replay._clock import PacedClock
from glossogen.replay._gate import Gated, Turn
from glossogen.replay._loop import ReplayLoop, run_replay
from glossogen.replay._record import (
    JUDGE,
    cut_off,
    describe,
    found_over,
    judge_askers,
    owner,
    timed_out,
)


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
        self._waiting: dict[Gated, tuple[bool, int]] = {}
        self._order = itertools.count()
        self._granted: Gated | None = None
        self._released = False
        self._deferred = False
        """A seat's cancellation waits for another of its tasks' step (:meth:`_answer_first`)."""
        self._places: list[tuple[int, Callable[[], bool], asyncio.Future[None]]] = []

    # -- the gate ------------------------------------------------------------------------------
    def may_step(self, gated: Gated, exc: BaseException | None) -> bool:
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

    def wait_turn(self, gated: Gated) -> asyncio.Future[None]:
        """A future resolved when the log moves on (or ``gated`` is granted a step).

        One future per wait: a task cancelled while it waits cancels its own alone, but one
        whose refused step was a cancellation is not woken by another
        (:class:`~glossogen.replay._gate.Turn`). The round's own tasks are granted a step
        before any seat's (:meth:`_watch`).
        """
        self._waiting.setdefault(gated, (SEAT.get() is not None, next(self._order)))
        turn = Turn(loop=asyncio.get_running_loop())
        turn.holds_cancellation = isinstance(gated.held, asyncio.CancelledError)
        self._turns.append(turn)
        return turn

    def stepped(self, gated: Gated) -> None:
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
        return asyncio.Task(Gated(coro, self), loop=loop, **kwargs)

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

    def _next_granted(self, at: int) -> Gated:
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


async def _awaited(task: asyncio.Future[Any], cancelled: bool) -> None:
    """Await the round's task; its cancellation is its end when the watch cancelled it."""
    try:
        await task
    except asyncio.CancelledError:
        if not cancelled:
            raise


__all__ = ["ReplayLoop", "Sequencer", "run_replay"]
