"""A retry of a crashed simulate flow run takes the resume path: same folder, nothing played twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.eventlog import read_events
from glossogen.launch import RunRequest, RunSession


def _request(runs: Path) -> RunRequest:
    return RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(runs),
        config="knobs_default",
    )


def test_a_flow_retry_after_a_crash_resumes_in_place(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = asyncio.run(simulate(_request(tmp_path / "whole")))
    expected = [
        (e.round_number, e.success)
        for e in read_events(f"{whole.run_url}/veyru.jsonl").events
        if e.event_type == "round_result_recorded"
    ]
    # The process "dies" in round 3 of the first attempt (fault injection: a flow run cannot
    # SIGKILL itself and then be retried in the same test process).
    original = RunSession.play_round
    crashed: list[int] = []

    async def crash_once(self: RunSession, round_number: int):  # type: ignore[no-untyped-def]
        if round_number == 3 and not crashed:
            crashed.append(round_number)
            raise RuntimeError("worker lost")
        return await original(self, round_number)

    monkeypatch.setattr(RunSession, "play_round", crash_once)
    result = asyncio.run(simulate.with_options(retries=1)(_request(tmp_path / "runs")))
    assert crashed == [3]
    assert result.status == "completed"
    assert (
        len(list((tmp_path / "runs" / "veyru").iterdir())) == 1
    )  # one folder: resumed, not restarted
    events = read_events(f"{result.run_url}/veyru.jsonl").events
    assert [
        (e.round_number, e.success) for e in events if e.event_type == "round_result_recorded"
    ] == expected
    (resumed,) = [e for e in events if e.event_type == "run_resumed"]
    assert (resumed.after_round, resumed.reopened_round) == (2, 3)
    ended = [e for e in events if e.event_type == "simulation_ended"]
    assert [e.status for e in ended] == ["error", "completed"]
