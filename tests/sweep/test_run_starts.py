"""Runs played in one process: a run starting goes first, the runs playing hold their rounds."""

from __future__ import annotations

import asyncio
from pathlib import Path

from flows.simulate import RUN_STARTS, play_rounds
from glossogen.eventlog import read_events
from tests.sweep.test_run_timeout import scripted_session


def test_a_playing_run_holds_its_next_round_while_another_run_of_the_process_starts(
    prefect_api: str, tmp_path: Path
) -> None:
    """A sweep's runs share one event loop: a start waited one loop turn per await behind every
    run playing flat out (the fourth of four scripted runs started about a minute late). A run
    marked starting (``RUN_STARTS.starting``, as ``play_in_process`` marks each launch) now
    holds every playing run before its next round until it has started."""
    plan, claimed, session = scripted_session(tmp_path, 3)

    async def play_while_another_starts() -> tuple[list[str], int]:
        started = asyncio.Event()

        async def another_start() -> None:
            with RUN_STARTS.starting():
                await started.wait()

        starting = asyncio.create_task(another_start())
        await asyncio.sleep(0)  # it is starting
        playing = asyncio.create_task(play_rounds(plan, claimed, session))
        while not RUN_STARTS.holding:  # the run reaches its first round, and holds it
            await asyncio.sleep(0)
        held = [e.event_type for e in read_events(claimed.log_url).events]
        started.set()
        await starting
        result = await playing
        return held, result.rounds_played

    held, rounds_played = asyncio.run(play_while_another_starts())
    assert "round_started" not in held  # no round began while the other run started
    assert rounds_played == 3
    ended = read_events(claimed.log_url).events[-1]
    assert (ended.event_type, ended.status) == ("simulation_ended", "completed")
    assert RUN_STARTS.holding == 0
