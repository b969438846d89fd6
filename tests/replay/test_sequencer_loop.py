"""The replay's event loop tells when every task waits; it reads asyncio's base loop's queues.

asyncio has no public way to ask whether a loop has anything left to run, so
:class:`~glossogen.replay._sequencer.ReplayLoop` reads ``_ready`` and ``_scheduled``. If a
Python release renames or reshapes them, these tests fail here, by name, rather than a replay
hanging or calling a busy loop stuck.
"""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest

from glossogen.engine._runner import seat_context
from glossogen.eventlog import ToolCallInvoked
from glossogen.replay._sequencer import ReplayLoop, Sequencer, run_replay


def test_asyncio_still_keeps_the_queues_the_replay_loop_reads() -> None:
    loop = ReplayLoop()
    try:
        assert type(loop._ready).__name__ == "deque"  # noqa: SLF001 (what busy() reads)
        assert type(loop._scheduled).__name__ == "list"  # noqa: SLF001
    finally:
        loop.close()


def test_the_replay_loop_is_busy_with_a_callback_a_due_timer_or_a_thread_and_idle_without() -> None:
    async def probe() -> list[bool]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, ReplayLoop)
        seen = [loop.busy()]  # this task runs: nothing else is queued
        handle = loop.call_soon(lambda: None)
        seen.append(loop.busy())
        handle.cancel()
        await asyncio.sleep(0)  # the cancelled callback is dropped
        later = loop.call_later(3600, lambda: None)  # real time: no replay waits for it
        seen.append(loop.busy())
        due = loop.call_at(loop.time() - 1, lambda: None)
        seen.append(loop.busy())
        due.cancel()
        later.cancel()
        seen.append(loop.busy())
        worker = loop.run_in_executor(None, time.sleep, 0)
        seen.append(loop.busy())
        await worker
        seen.append(loop.busy())
        return seen

    assert run_replay(probe()) == [False, True, False, True, False, True, False]


HANG = pytest.mark.timeout(30, method="thread")
"""pytest-timeout, the one bound on a hang (its thread ends a loop that spins, which its signal
cannot): a sequencer that spins never returns; one that works returns in milliseconds."""


def _locked(seat: str) -> ToolCallInvoked:
    return ToolCallInvoked(
        agent_id=seat, tool_name="lock_in", tool_call_id=f"{seat}-1", args={}, round_number=1
    )


@HANG
def test_a_seat_cut_off_in_a_cancelled_anyio_scope_is_granted_its_step_not_spun_on() -> None:
    """Seat a's cancellation waits while the record's next event is seat b's; its cancel scope
    re-delivers the cancellation at every turn of the loop. The loop is then idle all the same
    (was: busy for ever, a replay at full CPU without end), and a's held step is granted."""
    log: list[str] = []
    sequencer = Sequencer([_locked("a"), _locked("b")], lambda: len(log), ["a", "b"], True)
    scopes: list[anyio.CancelScope] = []
    entered = asyncio.Event()

    async def seat_a() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            log.append("a locked")
            entered.set()
            await asyncio.Event().wait()
        log.append("a cut off")

    async def round_play() -> None:
        seat = asyncio.create_task(seat_a(), context=seat_context("a"))
        await entered.wait()
        scopes[0].cancel()  # the phase's end, as pydantic-ai's scopes pass it on
        await seat
        log.append("round ended")

    run_replay(sequencer.play(round_play()))
    assert (log, sequencer.stalled) == (["a locked", "a cut off", "round ended"], None)


@HANG
def test_a_replay_where_no_task_can_go_on_says_where_it_stalled_and_ends() -> None:
    """Every task waits and none for its turn (the record's next event is seat b's, which no
    task will log): the round is cancelled, it cancels a's scope, and the sequencer returns with
    the stall named instead of spinning."""
    sequencer = Sequencer([_locked("b")], lambda: 0, ["a", "b"], True)
    scopes: list[anyio.CancelScope] = []
    ended: list[str] = []

    async def seat_a() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await asyncio.Event().wait()
        ended.append("a")

    async def round_play() -> None:
        seat = asyncio.create_task(seat_a(), context=seat_context("a"))
        try:
            await asyncio.shield(seat)
        except asyncio.CancelledError:
            scopes[0].cancel()  # a round's cancellation reaches its seats through their scopes
            await seat
            ended.append("round")
            raise

    run_replay(sequencer.play(round_play()))
    assert sequencer.stalled == (
        "replay stalled: every task waits and none can go on; the record's next event is "
        "event 1 (tool_call_invoked, b, round 1)"
    )
    assert ended == ["a", "round"]
