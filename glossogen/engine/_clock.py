"""Game clocks: the real one, and a virtual one that never sleeps (tests, scripted runs).

The engine reads time and waits only through a :class:`Clock`, so a test or an offline run can
play hours of game time in milliseconds, deterministically.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

ClockKind = Literal["virtual", "real"]
"""What a run's time is: ``virtual`` (it moves only by the run's own waits) or ``real``."""


class Clock(Protocol):
    """What the engine needs of time. ``now()`` is in seconds from an arbitrary origin."""

    kind: ClockKind
    """Logged with the process's start (``simulation_started.clock``, ``run_resumed.clock``)."""

    def now(self) -> float:
        """Return the current game time, seconds (monotonic)."""
        ...

    def wall(self) -> datetime:
        """Return the current wall time, UTC (event timestamps)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Let ``seconds`` of game time pass."""
        ...

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait until ``event`` is set (True) or ``timeout`` seconds pass (False)."""
        ...

    def hold(self) -> Callable[[], None]:
        """Mark a model call in flight until the returned function is called (idempotent)."""
        ...


def _nothing() -> None:
    """The release of a hold on the real clock: there is nothing to release."""


class SystemClock:
    """The real clock: monotonic time, real sleeps."""

    kind: ClockKind = "real"

    def now(self) -> float:
        """Return ``time.monotonic()``, seconds."""
        return time.monotonic()

    def wall(self) -> datetime:
        """Return the current UTC time."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of real time."""
        await asyncio.sleep(seconds)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait for ``event`` at most ``timeout`` real seconds."""
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def hold(self) -> Callable[[], None]:
        """Nothing to mark: real time moves during a call whatever the engine does."""
        return _nothing


class VirtualClock:
    """A clock whose time moves only when someone sleeps on it, and never during a model call.

    ``sleep(s)`` moves game time forward by ``s`` at once and wakes every ``wait`` whose deadline
    has passed. Concurrent sleepers add up rather than overlap: simulated latencies of two agents
    in the same moment both count. Wall time is ``start`` plus game time.

    A model call takes no game time: while any seat waits for a call's answer (:meth:`hold`,
    released by the engine once the answer is back, or once a failed call is logged), a
    ``sleep`` (another seat's backoff, a scripted seat's latency, the idle floor) first waits
    until no hold is left, so a phase limit never cuts off an answer the machine was slow to
    give. Game time can still move while a seat builds a request it has not yet sent.
    :meth:`advance` (a test moving time by hand) does not wait.
    """

    kind: ClockKind = "virtual"

    def __init__(self, start: datetime | None = None) -> None:
        """Start game time at 0 and wall time at ``start`` (default: now, UTC)."""
        self._now = 0.0
        self._start = start or datetime.now(UTC)
        self._waiters: list[tuple[float, asyncio.Future[None]]] = []
        self._calls = 0
        self._quiet: list[asyncio.Future[None]] = []

    def now(self) -> float:
        """Return game seconds since the clock was made."""
        return self._now

    def wall(self) -> datetime:
        """Return ``start`` plus game time."""
        return self._start + timedelta(seconds=self._now)

    def advance(self, seconds: float) -> None:
        """Move game time forward by ``seconds`` and wake the waits that are due."""
        self._now += max(0.0, seconds)
        due = [w for w in self._waiters if w[0] <= self._now]
        self._waiters = [w for w in self._waiters if w[0] > self._now]
        for _, fut in due:
            if not fut.done():
                fut.set_result(None)

    def hold(self) -> Callable[[], None]:
        """Hold game time (one model call in flight) until the returned function is called.

        The release is idempotent; once no hold is left, the sleeps waiting for quiet go on.
        """
        self._calls += 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self._calls -= 1
            if not self._calls:
                quiet, self._quiet = self._quiet, []
                for fut in quiet:
                    if not fut.done():
                        fut.set_result(None)

        return release

    async def sleep(self, seconds: float) -> None:
        """Once no model call is in flight, advance game time by ``seconds``; yield once."""
        while self._calls:
            quiet: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._quiet.append(quiet)
            await quiet
        self.advance(seconds)
        await asyncio.sleep(0)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait for ``event`` or for game time to pass ``now() + timeout`` (by others' sleeps)."""
        if event.is_set():
            return True
        if timeout <= 0:
            return False
        loop = asyncio.get_running_loop()
        deadline: asyncio.Future[None] = loop.create_future()
        self._waiters.append((self._now + timeout, deadline))
        setter = asyncio.ensure_future(event.wait())
        either: set[asyncio.Future[Any]] = {setter, deadline}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            setter.cancel()
            if not deadline.done():
                deadline.cancel()
            self._waiters = [w for w in self._waiters if w[1] is not deadline]
        return event.is_set()
