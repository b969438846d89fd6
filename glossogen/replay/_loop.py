"""The event loop a replay plays on (it can tell when every task waits), and how one is run.

A :class:`ReplayLoop` answers the sequencer's one question of the event loop: whether anything
is left to run now (:meth:`ReplayLoop.busy`); :func:`run_replay` runs a replay on a fresh one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar, TypeVarTuple

import anyio

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


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
        ended: a task whose cancellation waits for its turn keeps it
        (:class:`~glossogen.replay._gate.Turn`), so the re-delivery changes nothing, and
        counted as work it kept a stuck replay spinning for ever instead of saying where it
        stuck.
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
        every task waiting (:meth:`~glossogen.replay._sequencer.Sequencer._watch`).
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


__all__ = ["ReplayLoop", "run_replay"]
