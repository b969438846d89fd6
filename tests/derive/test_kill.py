"""SIGKILL a real ``glossogen run`` process mid-run, then ``--resume`` it: nothing lost or repeated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from glossogen.eventlog import read_events

ARGS = [
    "--model",
    "scripted",
    "--provider",
    "scripted",
    "--config",
    "knobs_default",
    "round_count=12",
]


def _verdicts(log: Path) -> list[tuple[int, bool, str]]:
    events = read_events(str(log)).events
    return [
        (e.round_number, e.success, e.reason)
        for e in events
        if e.event_type == "round_result_recorded"
    ]


@pytest.fixture(scope="module")
def uninterrupted(
    prefect_api: str, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[int, bool, str]]:
    runs = tmp_path_factory.mktemp("whole")
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--runs-dir", str(runs), *ARGS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (log,) = runs.glob("veyru/*/veyru.jsonl")
    return _verdicts(log)


@pytest.mark.parametrize("after_lines_of_round", [2, 6, 10])
def test_a_killed_run_resumes_to_the_same_verdicts(
    prefect_api: str, uninterrupted: list, tmp_path: Path, after_lines_of_round: int
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--runs-dir", str(tmp_path), *ARGS],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    run_dir = ""
    for line in child.stdout:  # read the live output; kill right after round k is reported
        if line.startswith("new_run_dir="):
            run_dir = line.strip().removeprefix("new_run_dir=")
        if line.startswith(f"round {after_lines_of_round}/"):
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    log = Path(run_dir) / "veyru.jsonl"
    cut = read_events(str(log)).events
    assert "simulation_ended" not in {e.event_type for e in cut}
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--resume", run_dir, *ARGS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    events = read_events(str(log)).events
    assert _verdicts(log) == uninterrupted
    assert max(Counter(e.event_id for e in events).values()) == 1
    assert (
        max(Counter(e.message_id for e in events if e.event_type == "message_sent").values()) == 1
    )
    assert [e.event_type for e in events].count("simulation_ended") == 1
    assert [e.event_type for e in events].count("run_resumed") == 1


def test_a_run_on_s3_killed_mid_run_resumes_from_its_last_upload(
    prefect_api: str, s3_bucket: str, uninterrupted: list
) -> None:
    # The S3 log is uploaded whole at each round end, so a kill loses at most the round in
    # progress; the resume reopens it and plays on to the same verdicts.
    runs = f"{s3_bucket}/runs"
    child = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--runs-dir", runs, *ARGS],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    run_dir = ""
    for line in child.stdout:
        if line.startswith("new_run_dir="):
            run_dir = line.strip().removeprefix("new_run_dir=")
        if line.startswith("round 5/"):
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--resume", run_dir, *ARGS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    events = read_events(f"{run_dir}/veyru.jsonl").events
    assert [
        (e.round_number, e.success, e.reason)
        for e in events
        if e.event_type == "round_result_recorded"
    ] == uninterrupted
    assert max(Counter(e.event_id for e in events).values()) == 1
    assert [e.event_type for e in events].count("simulation_ended") == 1
