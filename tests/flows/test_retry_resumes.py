"""A retry of a crashed simulate flow run takes the resume path: same folder, nothing played twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

from flows.simulate import simulate
from glossogen.eventlog import Event, RoundStarted, read_events
from glossogen.launch import RunRequest, observing


def _request(runs: Path) -> RunRequest:
    return RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(runs),
        config="knobs_default",
    )


def test_a_flow_retry_after_a_crash_resumes_in_place(prefect_api: str, tmp_path: Path) -> None:
    whole = asyncio.run(simulate(_request(tmp_path / "whole")))
    expected = [
        (e.round_number, e.success)
        for e in read_events(f"{whole.run_url}/veyru.jsonl").events
        if e.event_type == "round_result_recorded"
    ]
    # The first attempt dies in round 3: a live watcher of the run (a public seam, as the CLI's
    # progress display is one) raises as the round starts, the way a lost worker ends a flow
    # run with an exception. No code of the run is replaced; the fault comes in from outside.
    crashed: list[int] = []

    class LostWorker:
        def event(self, event: Event) -> None:
            if isinstance(event, RoundStarted) and event.round_number == 3 and not crashed:
                crashed.append(event.round_number)
                raise RuntimeError("worker lost")

    with observing(LostWorker()):
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
