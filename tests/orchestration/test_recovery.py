"""Crash recovery through real workers: a Prefect retry of a crashed run resumes it, and a
killed worker's runs come back through reconcile with nothing lost or repeated."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from uuid import UUID

from prefect.client.schemas.objects import FlowRun, StateType
from prefect.deployments import run_deployment
from prefect.workers.base import get_infrastructure_exit_info

from deployments.local_server import ProcessWorker
from flows.reconcile import CANCELLED_TAG, reconcile
from glossogen.launch import RunRequest
from glossogen.storage import LOCK_NAME
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer, StubReply
from tests.fixtures.prefect_server import StartWorker
from tests.orchestration.flow_runs import (
    assert_nothing_lost,
    assert_resumed_once,
    flow_run_logs,
    flow_run_story,
    log_lines,
    read_flow_run,
    wait_for_state,
    wait_until,
)
from tests.providers.test_wire_formats import pd_player

ROUNDS = 3
HOLD_AFTER = 8  # requests per model: two agents play round 1 in about 6, so round 2 is cut


class HoldAfter:
    """Play the prisoners' dilemma, but hold each model's requests past ``after`` unanswered.

    A run whose request is held is stuck mid-round with its process alive: the moment to kill
    it. Once ``released``, every request is answered again (for the resumed runs).
    """

    def __init__(self, after: int) -> None:
        self.after = after
        self.counts: Counter[str] = Counter()
        self.held: Counter[str] = Counter()
        self.released = False

    def __call__(self, request: RecordedRequest) -> StubReply | StubFault:
        model = request.model or "?"
        self.counts[model] += 1
        if not self.released and self.counts[model] > self.after:
            self.held[model] += 1
            return StubFault(kind="timeout", seconds=600)  # until the client goes away
        return pd_player(request)


def _request(runs: Path, model: str) -> dict:
    return RunRequest(
        scenario="prisoners_dilemma",
        model=model,
        provider="self-hosted",
        runs_dir=str(runs),
        config="knobs_default",
        overrides=[f"round_count={ROUNDS}", "idle_floor_seconds=0.05", "postmortem_enabled=false"],
    ).model_dump()


def _stuck(runs: Path, hold: HoldAfter, models: list[str]) -> list[Path] | None:
    """The run folders once every run has a verdict, a held request and a live writer."""
    folder = runs / "prisoners_dilemma"
    dirs = sorted(folder.iterdir()) if folder.exists() else []
    if len(dirs) < len(models) or any(hold.held[m] == 0 for m in models):
        return None
    for run_dir in dirs:
        verdicts = [e for e in log_lines(run_dir) if e["event_type"] == "round_result_recorded"]
        lock = run_dir / LOCK_NAME
        if not verdicts or not lock.exists() or not lock.read_text().strip():
            return None
    return dirs


def _worker_done_with(flow_run_id: UUID) -> bool:
    """True once the worker has said its last word on a killed flow run.

    Prefect 3.9 reports a SIGKILLed flow run crashed twice: its runner at once, then the worker
    about 2 s later. A retry issued between the two is crashed again, or, if a worker already
    picked it up, keeps running under a Crashed state, so that a second retry starts a second
    process on the same run folder. The worker logs the exit code's resolution right after its
    report (accepted or not), so once that line is in the flow run's logs a retry is safe.
    """
    resolution = get_infrastructure_exit_info(-signal.SIGKILL).resolution
    assert resolution
    return any(resolution in line for line in flow_run_logs(flow_run_id))


def _kill_writer(run_dir: Path) -> None:
    """SIGKILL the process writing ``run_dir`` (its pid is in the folder's lock)."""
    os.kill(int((run_dir / LOCK_NAME).read_text()), signal.SIGKILL)


def start_a_held_run(
    model_stub: StubModelServer, runs: Path, what: str = "the run to be stuck"
) -> tuple[HoldAfter, FlowRun, Path]:
    """Start a run on ``simulate-self-hosted`` whose model holds its requests after
    :data:`HOLD_AFTER`; wait (``what``) until its worker's process is stuck mid-round, live.
    Returns the hold (release it for a resume), the flow run and the run folder."""
    hold = HoldAfter(HOLD_AFTER)
    model_stub.responder = hold
    flow_run = run_deployment(
        "simulate/simulate-self-hosted",
        parameters={"config": _request(runs, "llama-a")},
        timeout=0,
    )
    (run_dir,) = wait_until(lambda: _stuck(runs, hold, ["llama-a"]), what)
    return hold, flow_run, run_dir


def kill_a_run_mid_round(model_stub: StubModelServer, runs: Path) -> tuple[FlowRun, Path]:
    """Start a run on ``simulate-self-hosted``, SIGKILL it once stuck mid-round, then let the
    stub answer again (for its resume). Returns its flow run and run folder."""
    hold, flow_run, run_dir = start_a_held_run(model_stub, runs)
    _kill_writer(run_dir)
    hold.released = True
    return flow_run, run_dir


def test_a_prefect_retry_of_a_crashed_run_resumes_it(
    self_hosted_worker: ProcessWorker, model_stub: StubModelServer, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    flow_run, run_dir = kill_a_run_mid_round(model_stub, runs)
    crashed = wait_for_state(flow_run.id, {StateType.CRASHED})  # its worker saw it die
    assert crashed.name == f"prisoners_dilemma/{run_dir.name}"
    wait_until(lambda: _worker_done_with(flow_run.id), "the worker's report of the crash")
    subprocess.run(
        [sys.executable, "-m", "prefect", "flow-run", "retry", str(flow_run.id)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    )
    done = wait_for_state(flow_run.id)
    assert done.state_name == "Completed", flow_run_story(flow_run.id)
    assert sorted((runs / "prisoners_dilemma").iterdir()) == [run_dir]  # resumed in place
    events = assert_nothing_lost(run_dir, rounds=ROUNDS, teams=1)
    (resumed,) = [e for e in events if e["event_type"] == "run_resumed"]
    # HOLD_AFTER cuts round 2 when round 1 took its usual ~6 requests, but how many requests a
    # round takes depends on how the two seats' messages interleave (live processes): a bound.
    assert resumed["after_round"] >= 1
    assert [e["event_type"] for e in events].count("simulation_started") == 1


def test_a_hung_run_is_cancelled_then_resumed_by_reconcile(
    self_hosted_worker: ProcessWorker, model_stub: StubModelServer, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    hold, flow_run, run_dir = start_a_held_run(model_stub, runs, "the run to hang")
    log = run_dir / "prisoners_dilemma.jsonl"

    def cancelled_as_silent() -> bool:
        # Its log is backdated an hour: silent, to a 600 s threshold. An event of the cut round
        # written between the backdating and reconcile's reading makes the run live for that
        # pass (it is skipped, nothing done), and the next pass backdates it again.
        os.utime(log, (0, time.time() - 3600))
        assert asyncio.run(reconcile(str(runs), silent_seconds=600)) == []
        return CANCELLED_TAG in read_flow_run(flow_run.id).tags

    # Pass 1: its process is alive (it holds the lock) but silent: its flow run is cancelled.
    wait_until(cancelled_as_silent, "reconcile to find the held run silent")  # a live worker
    cancelled = wait_for_state(flow_run.id)
    assert cancelled.state_name == "Cancelled"
    assert CANCELLED_TAG in cancelled.tags
    wait_until(lambda: log_lines(run_dir)[-1]["event_type"] == "simulation_ended", "the stop")
    assert log_lines(run_dir)[-1]["status"] == "interrupted"
    # Pass 2: the interrupted run is resumed in place, through the resume deployment.
    hold.released = True
    run_id = f"prisoners_dilemma/{run_dir.name}"
    assert asyncio.run(reconcile(str(runs), silent_seconds=600)) == [run_id]  # not silence

    def resumed() -> bool:
        lines = log_lines(run_dir)
        return (
            lines[-1]["event_type"] == "simulation_ended" and lines[-1]["status"] != "interrupted"
        )

    wait_until(resumed, "the resumed run to end")
    assert_resumed_once(run_dir, ROUNDS)


def test_killing_a_worker_mid_run_then_reconcile_finishes_every_run(
    self_hosted_worker: ProcessWorker,
    process_workers: StartWorker,
    self_hosted_env: dict[str, str],
    model_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    hold = HoldAfter(HOLD_AFTER)
    model_stub.responder = hold
    runs = tmp_path / "runs"
    models = ["llama-a", "llama-b"]
    for model in models:
        run_deployment(
            "simulate/simulate-self-hosted",
            parameters={"config": _request(runs, model)},
            timeout=0,
        )
    run_dirs = wait_until(lambda: _stuck(runs, hold, models), "both runs to be stuck")
    self_hosted_worker.kill()  # the machine goes away: the worker and the runs it started
    for run_dir in run_dirs:
        _kill_writer(run_dir)
    hold.released = True
    process_workers("glossogen-self-hosted", env=self_hosted_env, name="replacement")
    run_ids = [f"prisoners_dilemma/{d.name}" for d in run_dirs]
    assert asyncio.run(reconcile(str(runs), silent_seconds=0)) == run_ids
    # Safe to run twice: the resumes are queued (or running), nothing is launched again.
    assert asyncio.run(reconcile(str(runs), silent_seconds=600)) == []

    def finished() -> bool:
        return all(
            (lines := log_lines(d)) and lines[-1]["event_type"] == "simulation_ended"
            for d in run_dirs
        )

    wait_until(finished, "the resumed runs to end")
    for run_dir in run_dirs:
        events = assert_nothing_lost(run_dir, rounds=ROUNDS, teams=1)
        assert [e["event_type"] for e in events].count("run_resumed") == 1
