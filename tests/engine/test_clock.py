"""The virtual clock: game time moves only when someone sleeps on it."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from glossogen.engine import VirtualClock

pytestmark = pytest.mark.timeout(30)

START = datetime(2026, 1, 1, tzinfo=UTC)


def run(coro):
    return asyncio.run(coro)


def test_sleep_advances_now_and_wall():
    async def main():
        clock = VirtualClock(START)
        await clock.sleep(2.5)
        await clock.sleep(87.5)
        await clock.sleep(-3)  # time never runs backwards
        return clock.now(), clock.wall()

    # 2.5 + 87.5 = 90 s: wall = start + 1 min 30 s.
    assert run(main()) == (90.0, datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC))


def test_wall_is_start_plus_game_time_and_never_reads_the_real_clock():
    clock = VirtualClock(START)
    clock.advance(3600.25)
    assert clock.wall() - START == timedelta(hours=1, milliseconds=250)


def test_wait_times_out_once_another_coroutine_sleeps_past_the_deadline():
    async def main():
        clock = VirtualClock(START)
        event = asyncio.Event()
        waiter = asyncio.create_task(clock.wait(event, 3.0))
        await asyncio.sleep(0)
        await clock.sleep(2.0)  # deadline 3 not reached
        still_waiting = not waiter.done()
        await clock.sleep(1.5)  # 3.5 >= 3: the wait is due
        return still_waiting, await waiter, clock.now()

    assert run(main()) == (True, False, 3.5)


def test_wait_returns_true_when_the_event_is_set_before_the_deadline():
    async def main():
        clock = VirtualClock(START)
        event = asyncio.Event()

        async def setter():
            await clock.sleep(1.0)
            event.set()

        task = asyncio.create_task(setter())
        got = await clock.wait(event, 3.0)
        await task
        return got, clock.now()

    assert run(main()) == (True, 1.0)


@pytest.mark.parametrize(
    ("already_set", "timeout", "expected"), [(True, 0.0, True), (False, 0.0, False)]
)
def test_wait_does_not_block_when_the_answer_is_known(already_set, timeout, expected):
    async def main():
        clock = VirtualClock(START)
        event = asyncio.Event()
        if already_set:
            event.set()
        return await clock.wait(event, timeout), clock.now()

    assert run(main()) == (expected, 0.0)


def test_concurrent_sleepers_add_up():
    async def main():
        clock = VirtualClock(START)
        await asyncio.gather(clock.sleep(1.0), clock.sleep(1.0))
        return clock.now()

    assert run(main()) == 2.0
