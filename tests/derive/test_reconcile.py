"""The reconcile flow resumes runs that stopped without ending, and is safe to run twice."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from flows.reconcile import reconcile
from flows.simulate import simulate
from glossogen.eventlog import read_events
from glossogen.launch import RunRequest


def test_reconcile_resumes_a_silent_unfinished_run_once(prefect_api: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = asyncio.run(
        simulate(
            RunRequest(
                scenario="prisoners_dilemma",
                model="scripted",
                provider="scripted",
                runs_dir=str(runs),
                config="knobs_default",
                overrides=["round_count=3"],
            )
        )
    )
    finished = Path(done.run_url)
    crashed = finished.parent / str(int(finished.name) + 100)
    shutil.copytree(finished, crashed)
    log = crashed / "prisoners_dilemma.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[: len(lines) // 2]))  # the process died mid-run
    os.utime(log, (0, os.path.getmtime(log) - 3600))  # and has been silent for an hour
    resumed = asyncio.run(reconcile(str(runs), silent_seconds=600, use_deployments=False))
    assert resumed == [f"prisoners_dilemma/{crashed.name}"]
    events = read_events(str(log)).events
    assert events[-1].event_type == "simulation_ended" and events[-1].status == "completed"
    assert [e.success for e in events if e.event_type == "round_result_recorded"] == [
        e.success
        for e in read_events(str(finished / "prisoners_dilemma.jsonl")).events
        if e.event_type == "round_result_recorded"
    ]
    again = asyncio.run(reconcile(str(runs), silent_seconds=0, use_deployments=False))
    assert again == []  # nothing left to do
