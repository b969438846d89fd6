"""A replayed process's clock: its game time moved where the record's moved.

A process that played on the virtual clock with a hosted seat (ordered by the sequencer) plays
on a :class:`PacedClock`: see its docstring. One that played on the real clock plays on a
:class:`RecordedClock`.

On the real clock, time passed while the models answered, so how long a phase lasted
(``round_ended.elapsed_seconds``) and where a phase limit cut it off (``trigger: timeout``) were
the network's doing, not the run's: the virtual clock, on which a replay's answers take no
time, measures other phase times and ends a timed-out phase elsewhere. A
:class:`RecordedClock` tells instead the time the record shows at the replay's place in the
log (the sequencer, :mod:`glossogen.replay._sequencer`, keeps that place the record's):

- **Wall time** (what every event is stamped with): the timestamp of the recorded event the
  replay's log holds next, so a replayed event carries its recorded timestamp.
- **Game time** (what a phase measures): within each recorded phase, its start (seconds from
  the log's first timestamp to its ``round_started`` or ``postmortem_started``); at its end,
  that start plus its recorded ``elapsed_seconds``, so the replay's phase lasts as long. A
  phase the record ended by time is at its end from where its limit was found passed: the
  first of the events its end logged before ``round_ended`` (the seats' tool calls it closed,
  their requests it left, their histories' checkpoint). Then, and only then, the round's task
  finds the limit passed, as the record's did.
- **Waits**: a sleep takes no time (the log's place moves time, not the replay's waits); a
  wait for a change waits for the change, since every event logged is one and the time moves
  only when the log does.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from datetime import datetime

from glossogen.engine import ClockKind, VirtualClock
from glossogen.eventlog import (
    Event,
    PostmortemEnded,
    PostmortemStarted,
    RoundEnded,
    RoundStarted,
    SimulationEnded,
)


def _nothing() -> None:
    """A hold's release: a model call takes the time the record says, not the replay's."""


def _after(start: float, elapsed: float) -> float:
    """The least time ``t`` with ``t - start >= elapsed``.

    So a phase's limit test holds as it did, and ``round(t - start, 3)`` is the recorded
    ``elapsed`` (the nearest float sum may fall a unit short).
    """
    end = start + elapsed
    while end - start < elapsed:
        end = math.nextafter(end, math.inf)
    return end


def game_times(
    recorded: list[Event], found: dict[int, int], quiet: frozenset[int] = frozenset()
) -> list[float]:
    """The game time at each place of ``recorded`` (while its event is the next to be logged).

    ``found``: where the round's task found each phase over
    (:func:`~glossogen.replay._record.found_over`). ``quiet``: the places of the phases'
    ends (``round_ended``, ``postmortem_ended``) ended by their time limit in which no seat
    logged anything: where such a phase was found over is also where it began (its start is
    read there), so the time there stays the start's until the round's task waits for a
    change (:func:`quiet_ends`, :meth:`RecordedClock.wait`).
    """
    if not recorded:
        return []
    first = recorded[0].timestamp
    times: list[float] = []
    now = start = 0.0
    for place, event in enumerate(recorded):
        times.append(now)
        if isinstance(event, RoundStarted | PostmortemStarted):
            now = start = max(now, (event.timestamp - first).total_seconds())
        elif isinstance(event, RoundEnded | PostmortemEnded) and event.elapsed_seconds is not None:
            now = _after(start, event.elapsed_seconds)
            over = found.get(place, place) if event.trigger == "timeout" else place
            over += place in quiet
            times[over:] = [now] * (place + 1 - over)
    return times


def quiet_ends(
    recorded: list[Event], found: dict[int, int], seats: list[str | None]
) -> dict[int, int]:
    """The phases ended by time in which no seat logged anything: ``{end's place: found}``.

    ``seats``: each recorded event's seat, or None (the round's, the judge's: its owner as
    the sequencer reads it). ``found``: as :func:`game_times` takes it.
    """
    quiet: dict[int, int] = {}
    began = 0
    for place, event in enumerate(recorded):
        if isinstance(event, RoundStarted | PostmortemStarted):
            began = place
        elif isinstance(event, RoundEnded | PostmortemEnded) and event.trigger == "timeout":
            over = found.get(place, place)
            if not any(seats[began:over]):
                quiet[place] = over
    return quiet


class RecordedClock:
    """The replay's clock of a process that played on the real clock (the module docstring).

    ``times``: :func:`game_times` of the recorded log; ``logged``: how many events the replay's
    log holds (its place in the record).
    """

    kind: ClockKind = "real"

    def __init__(
        self,
        recorded: list[Event],
        times: list[float],
        logged: Callable[[], int],
        expiring: dict[int, float] | None = None,
    ):
        self._stamps = [e.timestamp for e in recorded]
        self._times = times
        self._logged = logged
        self._expiring = dict(expiring or {})
        """``{place: the phase's end}`` of each quiet phase ended by time (:func:`quiet_ends`):
        the time there is its start's until the round's task waits there."""

    def _place(self) -> int:
        return min(self._logged(), len(self._times) - 1)

    def now(self) -> float:
        """The game time the record shows at the replay's place."""
        return self._times[self._place()]

    def wall(self) -> datetime:
        """The timestamp of the recorded event the replay logs next."""
        return self._stamps[self._place()]

    async def sleep(self, seconds: float) -> None:  # noqa: ARG002 (the record's time passes)
        """Yield once: the time the record shows moves with the log, not with a sleep."""
        await asyncio.sleep(0)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait for ``event`` (every event logged sets it); True, or False for no time left.

        At the place where a quiet phase was found over by its time limit, the wait runs out
        there, as the record's did: after one step, in which the seats take the steps real time
        let them take first (the sequencer grants theirs before the round's there), the time
        moves on to the phase's end, and False.
        """
        if not event.is_set() and self._place() in self._expiring:
            await asyncio.sleep(0)
            place = self._place()
            if not event.is_set() and place in self._expiring:
                self._times[place] = self._expiring.pop(place)
                return False
        if not event.is_set() and timeout > 0:
            await event.wait()
        return event.is_set()

    def hold(self) -> Callable[[], None]:
        """Nothing to hold: a model call took the time the record shows."""
        return _nothing


def process_times(recorded: list[Event], first: int) -> list[float]:
    """The game time the record shows at each place of the process logged from ``first`` on.

    On the virtual clock an event is stamped with the process's start plus the game time it
    was logged at, and the process's first event (``simulation_started``, ``run_resumed``) at
    game time 0. Places before ``first`` are 0; those after the process's ``simulation_ended``
    are infinite (the process is over: nothing waits for them).
    """
    times = [0.0] * len(recorded)
    if first >= len(recorded):
        return times
    start = recorded[first].timestamp
    ended = False
    for place in range(first, len(recorded)):
        event = recorded[place]
        times[place] = math.inf if ended else (event.timestamp - start).total_seconds()
        ended = ended or isinstance(event, SimulationEnded)
    return times


_STAMP = 1e-3
"""How far a recorded time may fall short of a sleep's end and still be past it, seconds: a
timestamp is kept to the microsecond, game time as a sum of floats; latencies, backoffs and
idle floors are whole milliseconds at the least (``elapsed_seconds`` is rounded to them)."""


class PacedClock(VirtualClock):
    """The virtual clock of a replayed process whose seats the sequencer orders.

    On the virtual clock game time moved when a seat slept (a scripted seat's latency, a
    backoff, the idle floor), once no model call was in flight (:meth:`VirtualClock.hold`).
    Over HTTP, whether a sleep went before or after an answer came back was the network's
    doing, and the log shows it only in the timestamps: each event is stamped with the game
    time it was logged at. A replay's answers come at once, so the holds of its model calls
    (in tasks the sequencer holds to the recorded order) would release elsewhere, and a seat's
    sleep move the time before or after another event than it did: a phase ended at another
    time (``round_ended.elapsed_seconds``), or a seat's answer taken up after another seat's
    ruling instead of before it.

    So here a model call holds nothing, and a sleep moves the time where the record's did: once
    the recorded event the replay logs next (``logged``, its place in the record) was stamped
    at the sleep's end or later (``times``: :func:`process_times`), the sleep's seconds pass
    there (:meth:`catch_up`: whenever the time is read, and at every turn of the event loop
    as the sequencer watches the log, so the time moves before the sleeper's task steps). Sleeps
    waiting at once pass in the order they began, each at the earliest place whose time is
    past its end. When every task waits and nothing else can go on, the sequencer passes the
    first waiting sleep (:meth:`pass_first`); once the process's rounds are played
    (:meth:`unpace`), every sleep passes as on a plain virtual clock.
    """

    def __init__(self, start: datetime, times: list[float], logged: Callable[[], int]) -> None:
        super().__init__(start)
        self._times = times
        self._logged = logged
        self._sleeping: list[tuple[float, asyncio.Future[None]]] = []
        self._paced = True

    def hold(self) -> Callable[[], None]:
        """Nothing to hold: the record's timestamps say when the time moved."""
        return _nothing

    def now(self) -> float:
        """Game seconds since the process began, the sleeps the record's time passed passed."""
        self.catch_up()
        return super().now()

    def wall(self) -> datetime:
        """The process's start plus game time, as :meth:`now` reads it."""
        self.catch_up()
        return super().wall()

    def _recorded_now(self) -> float:
        place = self._logged()
        return self._times[place] if place < len(self._times) else math.inf

    async def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass once the record's time at the replay's place is past them."""
        if not self._paced:
            self.advance(seconds)
            await asyncio.sleep(0)
            return
        passed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (seconds, passed)
        self._sleeping.append(entry)  # behind the sleeps already waiting
        self.catch_up()
        try:
            await passed
        finally:
            if entry in self._sleeping:  # cancelled before it passed: no time moves
                self._sleeping.remove(entry)

    def catch_up(self) -> bool:
        """Pass the sleeps the record's time at the replay's place is past; whether any was."""
        passed = False
        for entry in list(self._sleeping):
            seconds, future = entry
            if self._recorded_now() >= self._now + seconds - _STAMP:
                self._pass(entry)
                passed = True
        return passed

    def pass_first(self) -> bool:
        """Pass the first waiting sleep whatever the record's time; whether there was one."""
        if not self._sleeping:
            return False
        self._pass(self._sleeping[0])
        return True

    def unpace(self) -> None:
        """From now on every sleep passes at once; the waiting ones pass now, in order."""
        self._paced = False
        while self.pass_first():
            pass

    def _pass(self, entry: tuple[float, asyncio.Future[None]]) -> None:
        self._sleeping.remove(entry)
        seconds, future = entry
        if not future.done():
            self.advance(seconds)
            future.set_result(None)


__all__ = ["PacedClock", "RecordedClock", "game_times", "process_times", "quiet_ends"]
