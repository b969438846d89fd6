"""Which failed launches the in-process sweep may launch again: refused by the API, nothing started."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from prefect.exceptions import PrefectHTTPStatusError

from flows.sweep import launch_all, play_in_process
from glossogen.sweep import Launch, SweepOptions, SweepRun, load_spec, plan_sweep
from tasks.sweep import refused_before_start
from tests.sweep.test_spec import ISSUE_SPEC

TASK_RUNS = "http://127.0.0.1:4200/api/task_runs/"


def _answered(status: int) -> PrefectHTTPStatusError:
    request = httpx.Request("POST", TASK_RUNS)
    response = httpx.Response(status, request=request, json={"exception_message": "busy"})
    return PrefectHTTPStatusError.from_httpx_error(
        httpx.HTTPStatusError(f"{status}", request=request, response=response)
    )


def test_a_refused_start_is_retried_only_while_nothing_of_the_trial_exists(
    prefect_api: str, tmp_path: Path
) -> None:
    spec_file = tmp_path / "pd.yaml"
    spec_file.write_text(ISSUE_SPEC)
    spec, sweep_id = load_spec(spec_file)
    plan = plan_sweep(spec, sweep_id, str(spec_file), SweepOptions())
    key = plan.main_keys()[0]
    launch = Launch(key, plan.request(key, 1), "pd/k/1", 0.0)

    def verdicts() -> dict[str, bool]:
        return {
            name: refused_before_start(exc, launch, sweep_id, 1)
            for name, exc in {
                "503": _answered(503),
                "429": _answered(429),
                "500": _answered(500),
                "404": _answered(404),
                "connection refused": httpx.ConnectError(
                    "refused", request=httpx.Request("POST", TASK_RUNS)
                ),
                "a bug": ValueError("no"),
            }.items()
        }

    assert verdicts() == {
        "503": True,
        "429": True,
        "500": False,
        "404": False,
        "connection refused": True,
        "a bug": False,
    }
    resume = Launch(key, launch.request, "pd/k/1/resume1", 0.0, resume_url=str(tmp_path / "r"))
    assert refused_before_start(_answered(503), resume, sweep_id, 1) is False

    run = SweepRun(plan, "in-process")
    asyncio.run(
        launch_all(run, [key], lambda launch: play_in_process(launch, sweep_id, 1))
    )  # the trial is played: its folder exists now
    run.close()
    assert run.states[key] == "done"
    assert set(verdicts().values()) == {False}


def test_the_summary_names_the_spec_by_its_absolute_path(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from glossogen.cli import main

    monkeypatch.chdir(tmp_path)
    Path("pd.yaml").write_text(  # one run of one round: the summary's paths are the point
        ISSUE_SPEC.replace("round_count: [2, 3]", "round_count: [1]").replace(
            "trials: 2", "trials: 1"
        )
    )
    with pytest.raises(SystemExit) as exited:
        main(["sweep", "pd.yaml", "--concurrency", "2"])
    assert exited.value.code == 0
    summary = json.loads((tmp_path / "runs/sweeps/pd/run_summary.json").read_text())
    assert (summary["spec_path"], summary["runs_dir"]) == (
        str(tmp_path / "pd.yaml"),
        str(tmp_path / "runs"),
    )
