"""A 2x2x2 sweep (knob x model x trials) played through the simulate deployment by a worker."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

from deployments.local_server import ProcessWorker
from glossogen.cli import main
from glossogen.launch import RunRequest
from glossogen.sweep import Launch, TrialKey
from tests.orchestration.flow_runs import api

SPEC = """\
scenario: prisoners_dilemma
config: knobs_default
runs_dir: ./runs
knobs:
  postmortem_enabled: false
grid:
  round_count: [2, 3]
  models: [{model: scripted, provider: scripted}, {model: scripted-b, provider: scripted}]
trials: 2
spend_cap_usd: 1.0
"""


def _sweep(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", *args])
    return int(exited.value.code)


def _deployed_flow_runs(run_ids: list[str]) -> list[tuple[str, str]]:
    deployment = api().read_deployment_by_name("simulate/simulate-scripted")
    flow_runs = api().read_flow_runs(
        flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=run_ids))
    )
    return sorted((f.name, f.state_name) for f in flow_runs if f.deployment_id == deployment.id)


def test_a_2x2x2_sweep_runs_every_cell_on_the_worker_then_launches_nothing(
    scripted_worker: ProcessWorker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "grid.yaml"
    spec.write_text(SPEC)
    # All 8 launched at once, twice the scripted pool's limit of 4 runs: the flow runs wait
    # for the pool, and a launch the server answers 503 (busy) is asked again.
    assert _sweep(str(spec), "--concurrency", "8") == 0
    runs = tmp_path / "runs"
    summary = json.loads((runs / "sweeps" / "grid" / "run_summary.json").read_text())
    # The terminal follows each trial handed to the worker: queued, then how its run ended.
    out = capsys.readouterr().out.splitlines()
    trials = {f"{c['cell_id']}/{t['trial']}": t["run_id"] for c in summary["cells"]
              for t in c["trials"]}  # fmt: skip
    # Each trial's run is named when it is queued, before a worker plays it: the folder is
    # claimed by the launcher and handed to the flow run.
    queued = {}
    for line in out:
        if " queued on " in line:
            found = re.fullmatch(
                r"trial (\S+) queued on simulate/simulate-scripted as run (\S+) "
                r"\(flow run [0-9a-f-]{36}\)",
                line,
            )
            assert found is not None, line
            queued[found[1]] = found[2]
    assert queued == trials
    assert sorted(line for line in out if " ended " in line) == sorted(
        f"trial {trial} ended completed: run {run_id}" for trial, run_id in trials.items()
    )
    assert summary["mode"] == "deployments"
    assert summary["census"] == {"planned": 0, "running": 0, "done": 8, "failed": 0,
                                 "incomplete": 0}  # fmt: skip
    assert len(summary["cells"]) == 4
    run_ids = sorted(t["run_id"] for c in summary["cells"] for t in c["trials"])
    folders = sorted((runs / "prisoners_dilemma").iterdir())
    assert [f"prisoners_dilemma/{f.name}" for f in folders] == run_ids
    # Every run was played by the worker, through the deployment, and named after its run id.
    assert _deployed_flow_runs(run_ids) == [(r, "Completed") for r in run_ids]
    for folder in folders:
        started = json.loads((folder / "prisoners_dilemma.jsonl").read_text().splitlines()[0])
        labels = json.loads((folder / "labels.json").read_text())
        cell = next(c for c in summary["cells"] if c["cell_id"] == labels["cell"])
        assert started["scenario_config"]["round_count"] == cell["params"]["round_count"]
    # The same spec again launches nothing: same folders, no new flow runs.
    assert _sweep(str(spec), "--concurrency", "8") == 0
    assert sorted((runs / "prisoners_dilemma").iterdir()) == folders
    assert _deployed_flow_runs(run_ids) == [(r, "Completed") for r in run_ids]


def test_a_spec_of_the_same_name_elsewhere_or_after_its_runs_were_deleted_plays_its_own_runs(
    scripted_worker: ProcessWorker, tmp_path: Path
) -> None:
    one_cell = (
        SPEC.replace("[2, 3]", "[2]")
        .replace(
            "[{model: scripted, provider: scripted}, {model: scripted-b, provider: scripted}]",
            "[{model: scripted, provider: scripted}]",
        )
        .replace("trials: 2", "trials: 1")
    )
    played: list[str] = []
    for folder in ("a", "b", "b"):  # b twice: its runs folder deleted in between
        project = tmp_path / folder
        project.mkdir(exist_ok=True)
        shutil.rmtree(project / "runs", ignore_errors=True)
        (project / "spec.yaml").write_text(one_cell)
        assert _sweep(str(project / "spec.yaml")) == 0
        summary = json.loads((project / "runs/sweeps/spec/run_summary.json").read_text())
        assert summary["mode"] == "deployments"
        ((trial,),) = [c["trials"] for c in summary["cells"]]
        assert (trial["state"], trial["status"], trial["error"]) == ("done", "completed", None)
        (run,) = (project / "runs" / "prisoners_dilemma").iterdir()
        assert trial["run_id"] == f"prisoners_dilemma/{run.name}"
        played.append(trial["run_id"])
    assert len(set(played)) == 3  # three runs, none another folder's flow run handed back
    assert _deployed_flow_runs(played) == [(r, "Completed") for r in sorted(played)]


def _unserved_launch(tmp_path: Path, key: str) -> Launch:
    """A fresh trial (cell c0, trial 1) on glossogen-google-gla, a pool no worker serves here."""

    request = RunRequest(
        scenario="prisoners_dilemma",
        model="gemini-2.5-flash",
        provider="google-gla",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
    )
    return Launch(TrialKey("c0", 1), request, key, 0.0)


def test_an_interrupted_launch_cancels_its_flow_run_that_no_worker_started(
    deployed: str, tmp_path: Path
) -> None:
    import asyncio

    from glossogen.launch import observing
    from tasks.sweep import launch_deployment

    # glossogen-google-gla has no worker here: the flow run stays Scheduled until cancelled.
    key = f"unstarted-{tmp_path.name}"
    launch = _unserved_launch(tmp_path, key)

    class Queued:
        """Learns the flow run's id the moment the launch has created it."""

        def __init__(self) -> None:
            self.flow_run_id = ""
            self.held: list[str] = []
            self.created = asyncio.Event()

        def run_queued(self, trial: str, deployment: str, flow_run_id: str, run_id: str) -> None:
            self.flow_run_id = flow_run_id
            self.held = sorted(p.name for p in (tmp_path / "runs" / run_id).iterdir())
            self.created.set()

    async def interrupt() -> str:
        queued = Queued()
        with observing(queued):
            launching = asyncio.create_task(launch_deployment(launch, "unstarted", 1))
            await asyncio.wait_for(queued.created.wait(), timeout=None)
            launching.cancel()
            with pytest.raises(asyncio.CancelledError):
                await launching
        async with get_client() as client:
            flow_run = await client.read_flow_run(UUID(queued.flow_run_id))
        assert flow_run.idempotency_key == key and flow_run.state is not None
        # The folder was claimed (its config files written) before the flow run was created,
        # and names that flow run (flow_run.json: glossogen stop cancels it through Prefect).
        assert queued.held == ["config.json", "flow_run.json", "labels.json"]
        return flow_run.state.name

    assert asyncio.run(interrupt()) == "Cancelled"
    # Cancelled before any worker took it: nothing was played, and its folder is gone again.
    assert list((tmp_path / "runs" / "prisoners_dilemma").iterdir()) == []


def test_a_trial_whose_flow_run_crashed_before_its_run_began_is_launched_again(
    deployed: str, tmp_path: Path
) -> None:
    import asyncio

    from prefect.states import Crashed

    from glossogen.launch import observing
    from tasks.sweep import CRASH_RELAUNCHES, CrashedBeforeStart, launch_deployment

    # glossogen-google-gla has no worker here: each flow run stays Scheduled until the test
    # crashes it, as a worker whose flow-run process died before the run began leaves it.
    key = f"crashing-{tmp_path.name}"
    launch = _unserved_launch(tmp_path, key)

    class Crasher:
        """Crashes each flow run the launch creates; keeps what the launch said."""

        def __init__(self) -> None:
            self.flow_run_ids: list[str] = []
            self.said: list[str] = []

        def run_queued(self, trial: str, deployment: str, flow_run_id: str, run_id: str) -> None:
            self.flow_run_ids.append(flow_run_id)
            asyncio.get_running_loop().create_task(self.crash(flow_run_id))

        async def crash(self, flow_run_id: str) -> None:
            async with get_client() as client:
                await client.set_flow_run_state(
                    UUID(flow_run_id), Crashed(message="its process died"), force=True
                )

        def run_relaunched(self, trial: str, why: str) -> None:
            self.said.append(f"{trial}: {why}")

    async def launch_crashing() -> tuple[Crasher, list[str | None]]:
        crasher = Crasher()
        with observing(crasher), pytest.raises(CrashedBeforeStart):
            await launch_deployment(launch, "crashing", 1)
        async with get_client() as client:
            keys = [
                (await client.read_flow_run(UUID(i))).idempotency_key for i in crasher.flow_run_ids
            ]
        return crasher, keys

    crasher, keys = asyncio.run(launch_crashing())
    # Launched once, then again under a new key each time it crashed before its run began.
    assert CRASH_RELAUNCHES == 2
    assert keys == [key, f"{key}~crashed1", f"{key}~crashed2"]
    assert len(crasher.said) == 2
    assert all(
        line.startswith("c0/1: flow run ") and " ended Crashed without starting run " in line
        for line in crasher.said
    )
    # Nothing was played in any of them: each claimed folder was removed again.
    assert list((tmp_path / "runs" / "prisoners_dilemma").iterdir()) == []
