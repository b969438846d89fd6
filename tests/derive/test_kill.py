"""SIGKILL a real ``glossogen run`` process mid-run, then ``--resume`` it: nothing lost or repeated.

The killed run is a real process; the ``glossogen run --resume`` that continues it is the CLI
called in this process (``main``, the same command), and the uninterrupted run the verdicts are
compared with is the simulate flow called here: neither is about a process of its own, and each
spares a Python start (Prefect and pydantic-ai imported anew). Runs are 8 rounds: kills after
rounds 2, 4 and 6 land early, in the middle and with two rounds to go.

Where a kill lands is the test's choice, not the load's: the killed process is ``glossogen run``
(the CLI's ``main``) with a run observer that holds the run still once the next round's first
message is logged, mid-round; the test kills it there. (Killed on reading the round's progress
line instead, a loaded machine let the run play on to its end before the kill arrived.)
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.cli import main
from glossogen.eventlog import MessageSent, RoundResultRecorded, read_events
from glossogen.launch import RunRequest
from tests.fixtures.processes import reaped

ARGS = [
    "--model",
    "scripted",
    "--provider",
    "scripted",
    "--config",
    "knobs_default",
    "round_count=8",
]


HELD = "held mid-round"
"""What the killed process prints once its run is held still (it then waits to be killed)."""

_HELD_RUN = f"""
import sys, threading
from glossogen.cli import main
from glossogen.eventlog import MessageSent
from glossogen.launch import observing

held_round = int(sys.argv[1])


class Hold:
    def event(self, event):
        if isinstance(event, MessageSent) and event.round_number == held_round:
            print({HELD!r}, flush=True)
            threading.Event().wait()  # the run's loop stops here until SIGKILL


with observing(Hold()):
    main(sys.argv[2:])
"""


def _held_run(runs_dir: str, after_round: int) -> subprocess.Popen[str]:
    """``glossogen run veyru`` in a process of its own, held still once round
    ``after_round + 1`` has logged its first message."""
    return subprocess.Popen(
        [sys.executable, "-c", _HELD_RUN, str(after_round + 1), "run", "veyru",
         "--runs-dir", runs_dir, *ARGS],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group reaped() ends
    )  # fmt: skip


def _kill_when_held(child: subprocess.Popen[str]) -> str:
    """Read the held run's output to its hold, SIGKILL it there; return its run dir."""
    assert child.stdout is not None
    run_dir = ""
    for line in child.stdout:
        if line.startswith("new_run_dir="):
            run_dir = line.strip().removeprefix("new_run_dir=")
        if line.strip() == HELD:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait()
    assert child.returncode == -signal.SIGKILL
    return run_dir


def _verdicts(log: Path) -> list[tuple[int, bool, str]]:
    events = read_events(str(log)).events
    return [
        (e.round_number, e.success, e.reason) for e in events if isinstance(e, RoundResultRecorded)
    ]


@pytest.fixture(scope="module")
def uninterrupted(
    prefect_api: str, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[int, bool, str]]:
    runs = tmp_path_factory.mktemp("whole")
    request = RunRequest(scenario="veyru", model="scripted", provider="scripted",
                         runs_dir=str(runs), config="knobs_default", overrides=[ARGS[-1]])  # fmt: skip
    result = asyncio.run(simulate(request))
    assert (result.status, result.rounds_played) == ("completed", 8)
    (log,) = runs.glob("veyru/*/veyru.jsonl")
    return _verdicts(log)


def _resume(run_dir: str) -> None:
    """``glossogen run veyru --resume <run_dir>`` with the run's own flags, to its end."""
    with pytest.raises(SystemExit) as exited:
        main(["run", "veyru", "--resume", run_dir, *ARGS])
    assert exited.value.code == 0


@pytest.mark.parametrize("after_round", [2, 4, 6])
def test_a_killed_run_resumes_to_the_same_verdicts(
    prefect_api: str, uninterrupted: list, tmp_path: Path, after_round: int
) -> None:
    child = _held_run(str(tmp_path), after_round)
    with reaped(child):  # a failed test leaves no run playing
        run_dir = _kill_when_held(child)
    log = Path(run_dir) / "veyru.jsonl"
    cut = read_events(str(log)).events
    assert "simulation_ended" not in {e.event_type for e in cut}
    # Killed mid-round: round k+1 has begun (its first message logged), and has no verdict.
    assert [e.round_number for e in cut if isinstance(e, RoundResultRecorded)] == list(
        range(1, after_round + 1)
    )
    assert isinstance(cut[-1], MessageSent) and cut[-1].round_number == after_round + 1
    _resume(run_dir)
    events = read_events(str(log)).events
    assert _verdicts(log) == uninterrupted
    assert max(Counter(e.event_id for e in events).values()) == 1
    assert max(Counter(e.message_id for e in events if isinstance(e, MessageSent)).values()) == 1
    assert [e.event_type for e in events].count("simulation_ended") == 1
    assert [e.event_type for e in events].count("run_resumed") == 1


def test_a_run_on_s3_killed_mid_run_resumes_from_its_last_upload(
    prefect_api: str, s3_bucket: str, uninterrupted: list
) -> None:
    # The S3 log is uploaded whole at each round end, so a kill loses at most the round in
    # progress; the resume reopens it and plays on to the same verdicts.
    runs = f"{s3_bucket}/runs"
    child = _held_run(runs, 5)
    with reaped(child):  # a failed test leaves no run playing
        run_dir = _kill_when_held(child)
    cut = read_events(f"{run_dir}/veyru.jsonl").events  # the upload at round 5's end
    assert [e.round_number for e in cut if isinstance(e, RoundResultRecorded)] == [
        1, 2, 3, 4, 5
    ]  # fmt: skip
    assert "simulation_ended" not in {e.event_type for e in cut}
    _resume(run_dir)
    events = read_events(f"{run_dir}/veyru.jsonl").events
    assert [
        (e.round_number, e.success, e.reason) for e in events if isinstance(e, RoundResultRecorded)
    ] == uninterrupted
    assert max(Counter(e.event_id for e in events).values()) == 1
    assert [e.event_type for e in events].count("simulation_ended") == 1
