"""--run-timeout: a run past its time ends between rounds, recorded incomplete (injected clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

from flows.simulate import play_rounds
from glossogen.eventlog import read_events
from glossogen.launch import RunConfig, RunRequest, RunSession, claim_run, open_session, plan_run
from glossogen.storage import RunFolder


def _clock(readings: list[float]) -> Iterator[float]:
    yield from readings


def scripted_session(
    tmp_path: Path, rounds: int, timeout: float | None = None
) -> tuple[RunConfig, RunFolder, RunSession]:
    """A scripted prisoners_dilemma run of ``rounds`` rounds, planned, claimed and opened."""
    request = RunRequest(
        scenario="prisoners_dilemma",
        model="scripted",
        provider="scripted",
        runs_dir=str(tmp_path),
        config="knobs_default",
        overrides=[f"round_count={rounds}", "postmortem_enabled=false"],
        run_timeout_seconds=timeout,
    )
    plan = plan_run(request)
    claimed = claim_run(plan, request.runs_dir)
    return plan, claimed, open_session(plan, claimed)


def _play(tmp_path: Path, timeout: float | None, readings: list[float]) -> tuple:
    plan, claimed, session = scripted_session(tmp_path, 4, timeout)
    ticks = _clock(readings)
    result = asyncio.run(play_rounds(plan, claimed, session, clock=lambda: next(ticks)))
    return result, read_events(claimed.log_url).events


def test_a_run_past_its_timeout_stops_between_rounds_as_incomplete(
    prefect_api: str, tmp_path: Path
) -> None:
    # Start at 100 s; after round 1 it is 105 s (within 10 s), after round 2 it is 111 s.
    result, events = _play(tmp_path, 10, [100.0, 105.0, 111.0])
    assert (result.status, result.rounds_played) == ("incomplete", 2)
    assert result.error == "run timeout: 10 s passed after round 2 of 4"
    assert [e.round_number for e in events if e.event_type == "round_ended"] == [1, 2]
    ended = events[-1]
    assert (ended.event_type, ended.status, ended.rounds_played) == (
        "simulation_ended",
        "incomplete",
        2,
    )


def test_a_run_within_its_timeout_plays_every_round(prefect_api: str, tmp_path: Path) -> None:
    # No reading after the last round: the deadline is only checked between rounds.
    result, _ = _play(tmp_path, 10, [100.0, 101.0, 102.0, 103.0])
    assert (result.status, result.rounds_played) == ("completed", 4)
