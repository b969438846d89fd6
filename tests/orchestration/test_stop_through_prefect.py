"""``glossogen stop`` on a run a real process worker plays from a deployment cancels its flow
run through Prefect: the run ends ``interrupted``, its log sealed and its table published, and
``glossogen run --resume`` finishes it. A flow run still scheduled is cancelled before it starts
and its claimed folder removed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prefect.client.schemas.objects import StateType

from deployments.local_server import ProcessWorker
from glossogen.launch import RunRequest, claim_folder, plan_run
from glossogen.storage import FLOW_RUN
from orchestration.deployments import create_flow_run, record_flow_run
from tests.fixtures.artifacts import run_table_artifact
from tests.fixtures.model_stubs import StubModelServer
from tests.orchestration.flow_runs import (
    assert_resumed_once,
    flow_run_story,
    log_lines,
    wait_for_state,
)
from tests.orchestration.test_recovery import ROUNDS, _request, start_a_held_run


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "glossogen", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_stop_cancels_a_worker_played_run_through_prefect_and_resume_finishes_it(
    self_hosted_worker: ProcessWorker,
    self_hosted_env: dict[str, str],
    model_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    # Round 1 is answered, then every request is held: the worker's process stays live.
    hold, flow_run, run_dir = start_a_held_run(
        model_stub, runs, "the worker's flow run to reach a held request"
    )
    run_id = f"prisoners_dilemma/{run_dir.name}"
    recorded = json.loads((run_dir / FLOW_RUN).read_text())
    assert recorded["flow_run_id"] == str(flow_run.id)  # the flow run recorded itself
    assert recorded["deployment_id"] == str(flow_run.deployment_id)
    stop = _cli("stop", str(run_dir))
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout == (
        f"stopping {run_id} (flow run {flow_run.id}, Running): cancelled through Prefect, its "
        f"worker stops it and it ends 'interrupted'; resume it with glossogen run "
        f"prisoners_dilemma --resume {run_dir}\n"
    )
    cancelled = wait_for_state(flow_run.id)  # the worker's cancellation of its process
    assert cancelled.state_type is StateType.CANCELLED, flow_run_story(flow_run.id)
    events = log_lines(run_dir)
    assert (events[-1]["event_type"], events[-1]["status"]) == ("simulation_ended", "interrupted")
    played = events[-1]["rounds_played"]
    assert 1 <= played < ROUNDS  # the round whose requests were held was cut off
    artifact = run_table_artifact(str(run_dir))  # published once the log was sealed
    assert [row["round"] for row in artifact["rows"]] == list(range(1, played + 1))
    assert artifact["description"].startswith(
        f"run {run_id}: interrupted, {events[-1]['rounds_won']} of {played} rounds won, "
    )
    again = _cli("stop", str(run_dir))  # its flow run has ended and no process holds the run
    assert (again.returncode, again.stderr) == (
        65,
        f"glossogen: error: run {run_id} has no live writer: nothing to stop\n",
    )
    hold.released = True
    resumed = _cli("run", "prisoners_dilemma", "--resume", str(run_dir), env=self_hosted_env)
    assert resumed.returncode == 0, resumed.stderr
    assert_resumed_once(run_dir, ROUNDS)


def test_stop_cancels_a_scheduled_flow_run_and_removes_its_unbegun_claim(
    deployed: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    config = plan_run(RunRequest(**_request(runs, "llama-a")))
    folder = claim_folder(config, str(runs))
    later = datetime.now(UTC) + timedelta(hours=1)  # no worker takes it before the stop
    flow_run = asyncio.run(
        create_flow_run(
            "simulate/simulate-self-hosted",
            {"config": config.model_dump(mode="json"), "run_dir": folder.url},
            idempotency_key=f"test-stop-queued:{folder.url}",
            scheduled_time=later,
        )
    )
    assert record_flow_run(folder, flow_run)  # as a launcher records it
    stop = _cli("stop", folder.url)
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout == (
        f"cancelled queued run {folder.run_id}: flow run {flow_run.id} was Scheduled, no worker "
        "had started it; its claimed folder was removed\n"
    )
    assert wait_for_state(flow_run.id).state_type is StateType.CANCELLED
    assert not Path(folder.url).exists()
