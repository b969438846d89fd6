"""The replay's event loop tells when every task waits; it reads asyncio's base loop's queues.

asyncio has no public way to ask whether a loop has anything left to run, so
:class:`~glossogen.replay._sequencer.ReplayLoop` reads ``_ready`` and ``_scheduled``. If a
Python release renames or reshapes them, these tests fail here, by name, rather than a replay
hanging or calling a busy loop stuck.
"""

from __future__ import annotations

import asyncio
import time

from glossogen.replay._sequencer import ReplayLoop, run_replay


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
