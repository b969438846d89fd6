"""A replay's seats take their steps in the order the recorded log shows.

Over HTTP, which answer came back first was the network's doing, and everything the seats did
after it (what each logged, when each read the other's message) followed from that order. A
replay answers every call at once, so left to the event loop its seats would interleave as the
loop runs them, not as the record did. The :class:`Sequencer` puts the record's order back:

- Every task of a seat (its phase task, and the tasks it starts: its model requests, its tools;
  :data:`~glossogen.engine.SEAT` names the seat) is wrapped (:class:`_Gated`, through the event
  loop's task factory) so that each of its steps first asks the sequencer. A seat may step while
  the next event of the recorded log is its own, or is one no seat logs (the round's own
  events, the judge's, a world event): a seat whose next step may log an event that is not the
  next recorded one waits until it is. Its answer, handed over at once, is thus taken up exactly
  where the recorded run took its answer up, between the same two events.
- A run with no hosted seat is not ordered: its seats' answers came on the game clock, which
  the replay plays again as it was.
- A step that receives a cancellation always goes (a phase end, a stop: the round's task
  cancels the seats in order, as it did when the run was recorded).
- When every task waits (nothing is ready to run on the event loop) and some seat waits for its
  turn, the seat that has waited longest takes one step: a step that logs nothing but that
  another seat waits on (a model call's release of the game clock, which a scripted seat's
  latency waits for). When every task waits and no seat waits for its turn, the replay is stuck:
  :attr:`Sequencer.stalled` names the recorded event it waited for (its place in the log, type,
  seat, round and the seat's call), and the round is cancelled. No time bounds either: "every
  task waits" is read from the event loop itself.
- A process of the run that was stopped mid-round (``cut``): once the replay's log holds as
  many events as the record did when the stop came, no seat takes another step (but to receive
  its cancellation) and the round is cancelled, as the stop cancelled it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine, Generator, Iterable
from typing import Any

from glossogen.engine import SEAT
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    InjectionDelivered,
    JudgeCalled,
    ModelRequestAbandoned,
    WorldEventDelivered,
)

_ROUND_EVENTS = (
    AgentRegistered,
    AgentSwappedMidRun,
    AgentHistoryAppended,
    InjectionDelivered,
    WorldEventDelivered,
    ModelRequestAbandoned,
)
"""Events naming a seat that the round's task (briefings, notices, checkpoints, swaps) or the
request ledger's callbacks log, not the seat's own tasks."""


JUDGE = "judge"
"""The owner of the in-run judge's events (logged by whichever task asked it: a seat's tool, the
round's) and of an abandoned request's (logged by the ledger when the request ends): any task
may step towards them."""


def event_agent(event: Event) -> str | None:
    """The ``agent_id`` an event names, if any."""
    return getattr(event, "agent_id", None)


def owner(event: Event, seats: frozenset[str]) -> str | None:
    """The seat whose tasks logged ``event``, :data:`JUDGE`, or None (the round's task).

    An event naming a seat (``agent_id``; a message its ``sender_id``) is that seat's, a
    scenario's own included (a tool's effect), but for what the round's task or a callback
    logs about a seat (:data:`_ROUND_EVENTS`).
    """
    if isinstance(event, JudgeCalled | ModelRequestAbandoned) or event_agent(event) == JUDGE:
        return JUDGE
    if isinstance(event, _ROUND_EVENTS):
        return None
    who = getattr(event, "sender_id", None) or getattr(event, "agent_id", None)
    return who if who in seats else None


def describe(event: Event) -> str:
    """``event`` as a stall names it: type, seat, round and the seat's call."""
    seat = getattr(event, "agent_id", None) or getattr(event, "sender_id", None)
    call = getattr(event, "call", None) or getattr(event, "cycle", None)
    parts = [event.event_type, seat, f"round {event.round_number}", call and f"call {call}"]
    return ", ".join(str(p) for p in parts if p)


class Sequencer:
    """Orders the steps of a replay's seats by the recorded log (the module docstring).

    ``recorded``: the recorded log's events; ``logged``: how many events the replay's log holds
    (its place in ``recorded``); ``seats``: the run's seats.
    """

    def __init__(
        self,
        recorded: list[Event],
        logged: Callable[[], int],
        seats: Iterable[str],
        hosted: Iterable[str],
    ) -> None:
        known = frozenset(seats)
        self._hosted = frozenset(hosted)
        self._recorded = recorded
        self._owners = [owner(e, known) for e in recorded]
        self.logged = logged
        self.cut: int | None = None
        self.stalled: str | None = None
        """Why the replay could not go on (the recorded event it waited for), or None."""
        self._turns: list[asyncio.Future[None]] = []
        self._waiting: dict[_Gated, tuple[bool, int]] = {}
        self._order = itertools.count()
        self._granted: _Gated | None = None
        self._offloaded = 0

    # -- the gate ------------------------------------------------------------------------------
    def may_step(self, gated: _Gated, exc: BaseException | None) -> bool:
        """Whether ``gated`` (a task's coroutine) may take its next step now."""
        seat = SEAT.get()
        if isinstance(exc, asyncio.CancelledError) or gated.cancelled:
            return True
        if self._granted is gated:
            self._granted = None
            return True
        at = self.logged()
        if self.cut is not None and at >= self.cut and seat is not None:
            return False  # the stop came here: no seat takes another step
        if not self._hosted:
            return True  # every seat on this machine: the game clock ordered them, as it does now
        next_owner = self._owners[at] if at < len(self._owners) else None
        if seat is None:  # the round's own task (and what it starts)
            return True
        return next_owner in (seat, JUDGE, None)

    def wait_turn(self, gated: _Gated) -> asyncio.Future[None]:
        """A future resolved when the log moves on (or ``gated`` is granted a step).

        One future per wait: a task cancelled while it waits cancels its own alone. The round's
        own tasks are granted a step before any seat's (:meth:`_watch`).
        """
        self._waiting.setdefault(gated, (SEAT.get() is not None, next(self._order)))
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turns.append(turn)
        return turn

    def stepped(self, gated: _Gated) -> None:
        """``gated`` took a step: it no longer waits for its turn."""
        self._waiting.pop(gated, None)

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
        """
        loop = asyncio.get_running_loop()
        previous = loop.get_task_factory()
        loop.set_task_factory(self._factory)
        offload = loop.run_in_executor
        # mypy: an instance attribute over the method, counting what runs in a worker thread
        loop.run_in_executor = self._counted(offload)  # type: ignore[method-assign,assignment]
        self.cut = cut
        try:
            task = asyncio.ensure_future(round_play)
            await self._watch(loop, task)
        finally:
            loop.set_task_factory(previous)
            del loop.run_in_executor  # the loop's own method again
            self.cut = None

    def _counted(self, offload: Callable[..., asyncio.Future[Any]]) -> Callable[..., Any]:
        """``loop.run_in_executor``, counting the calls running in a worker thread.

        While one runs (the log's fsync at a round's end), the loop waits on no task.
        """

        def run_in_executor(*args: Any) -> asyncio.Future[Any]:
            future = offload(*args)
            self._offloaded += 1
            future.add_done_callback(self._returned)
            return future

        return run_in_executor

    def _returned(self, _: asyncio.Future[Any]) -> None:
        self._offloaded -= 1

    async def _watch(self, loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any]) -> None:
        """Wake the seats as the log moves; cut, grant or give up when every task waits."""
        seen = self.logged()
        cancelled = False
        while not task.done():
            await asyncio.sleep(0)
            now = self.logged()
            if task.done():
                break
            if now != seen:
                seen = now
                self._wake()
            elif self.cut is not None and now >= self.cut and not cancelled:
                task.cancel()  # the stop came here
                cancelled = True
            elif self._offloaded or _busy(loop):
                continue
            elif self._waiting and self._granted is None:  # one waits for its turn: it steps
                self._granted = min(self._waiting, key=self._waiting.__getitem__)
                self._wake()
            elif not cancelled:  # every task waits and none for its turn: stuck
                self.stalled = self._stall_line(now)
                task.cancel()
                cancelled = True
            else:  # cancelled, and still every task waits: leave the round where it hangs
                self.stalled = self.stalled or self._stall_line(now)
                return
        try:
            await task
        except asyncio.CancelledError:
            if not cancelled:
                raise

    def _stall_line(self, at: int) -> str:
        """One line naming the recorded event the replay waited for when it stalled."""
        if at >= len(self._recorded):
            return f"replay stalled after event {at}, the record's last"
        return (
            "replay stalled: every task waits and none can go on; the record's next event is "
            f"event {at + 1} ({describe(self._recorded[at])})"
        )


def _busy(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the event loop has anything to run now or later (callbacks ready, timers).

    Read from the loop's own queues (asyncio's base event loop): nothing ready and no timer
    means every task waits on another.
    """
    ready = getattr(loop, "_ready", None)
    scheduled = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None:  # not asyncio's loop: never call it stuck
        return True
    return bool(ready) or any(not timer.cancelled() for timer in scheduled)


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
        self._held: BaseException | None = None
        self._gate: asyncio.Future[None] | None = None
        self.cancelled = False
        """True once a cancellation reached the coroutine (it then goes on unasked)."""

    def send(self, value: Any) -> Any:
        if self._gate is not None:  # the gate's future resolved: ask again
            self._gate = None
            return self._step(self._held)
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
        if not sequencer.may_step(self, exc):
            self._held = exc
            gate = sequencer.wait_turn(self)
            self._gate = gate
            gate._asyncio_future_blocking = True  # what a task awaits it on (Future.__await__)
            return gate
        sequencer.stepped(self)
        self._held = None
        if exc is None:
            return self._inner.send(None)
        if isinstance(exc, asyncio.CancelledError):
            self.cancelled = True
        return self._inner.throw(exc)


__all__ = ["Sequencer", "describe", "owner"]
