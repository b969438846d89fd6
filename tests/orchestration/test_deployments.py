"""prefect.yaml, `glossogen pools apply` and `glossogen deploy` against a real server, and a
simulate run played by a real process worker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
from prefect.deployments import run_deployment

from deployments.local_server import ProcessWorker
from deployments.pools import check_limits
from flows.simulate import simulate
from glossogen.catalog import SIMULATION_PROVIDERS
from glossogen.launch import RunRequest
from tests.orchestration.conftest import run_cli
from tests.orchestration.flow_runs import log_lines, wait_for_state

REPO = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((REPO / "prefect.yaml").read_text())
SHARED = {"fork-at-round", "replace-agent", "evaluate", "evaluate-cohort", "export", "sweep",
          "reconcile", "nightly-export"}  # fmt: skip


def _deployment(name: str) -> dict:
    (found,) = [d for d in SPEC["deployments"] if d["name"] == name]
    return found


def test_prefect_yaml_has_a_simulate_and_resume_deployment_per_provider() -> None:
    by_name = {d["name"]: d for d in SPEC["deployments"]}
    for provider in SIMULATION_PROVIDERS:
        assert by_name[f"simulate-{provider}"]["entrypoint"] == "flows/simulate.py:simulate"
        assert by_name[f"resume-{provider}"]["entrypoint"] == "flows/simulate.py:resume"
        assert by_name[f"simulate-{provider}"]["work_pool"]["name"] == f"glossogen-{provider}"
    assert set(by_name) == {
        *(f"{kind}-{p}" for p in SIMULATION_PROVIDERS for kind in ("simulate", "resume")),
        *SHARED,
    }
    assert {by_name[n]["work_pool"]["name"] for n in SHARED} == {"glossogen"}
    assert _deployment("reconcile")["schedules"] == [{"interval": 300, "active": True}]
    assert _deployment("nightly-export")["schedules"][0]["cron"] == "0 3 * * *"
    assert _deployment("nightly-export")["parameters"]["request"]["out"].startswith("s3://")


def test_pools_apply_refuses_an_unknown_provider_before_reaching_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "limits.yaml"
    bad.write_text("providers:\n  bedrock: {llm_concurrency: 2}\n")
    assert run_cli("pools", "apply", "--limits", str(bad)) == 65
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("glossogen: error: limits file")
    assert "unknown provider(s) bedrock" in err[0]


def test_pools_apply_refuses_a_limit_below_one(tmp_path: Path) -> None:
    bad = tmp_path / "limits.yaml"
    bad.write_text("defaults: {llm_concurrency: 0}\n")
    assert run_cli("pools", "apply", "--limits", str(bad)) == 65


async def _pools_and_limits() -> tuple[dict[str, int | None], dict[str, tuple[int, bool]]]:
    async with get_client() as client:
        pools = {p.name: p.concurrency_limit for p in await client.read_work_pools()}
        limits = {
            g.name: (g.limit, g.active)
            for g in await client.read_global_concurrency_limits(limit=100)
        }
    return pools, limits


async def _default_commands() -> dict[str, str | None]:
    async with get_client() as client:
        pools = await client.read_work_pools()
    return {
        p.name: p.base_job_template["variables"]["properties"]["command"]["default"]
        for p in pools
        if p.name.startswith("glossogen")
    }


def test_pools_apply_creates_a_pool_per_provider_and_active_llm_limits(
    deployed: str, limits_file: Path
) -> None:
    pools, limits = asyncio.run(_pools_and_limits())
    assert pools["glossogen-openai"] == 4
    assert pools["glossogen-scripted"] == 4
    assert pools["glossogen-anthropic"] == 2  # the file's default
    assert pools["glossogen"] == 2
    assert {f"glossogen-{p}" for p in SIMULATION_PROVIDERS} <= set(pools)
    assert limits["llm:openai"] == (2, True)
    assert limits["llm:anthropic"] == (4, True)
    assert "llm:scripted" not in limits  # null: scripted calls no model
    # Each pool's flow runs start as Prefect's engine, not its workspace supervisor first.
    assert set(asyncio.run(_default_commands()).values()) == {"python -m glossogen._prefect_engine"}

    # Limits fail open when inactive: the check reports it, and applying again reactivates.
    async def deactivate() -> list[str]:
        async with get_client() as client:
            await client.update_global_concurrency_limit(
                "llm:anthropic", GlobalConcurrencyLimitUpdate(active=False)
            )
        return await check_limits(["anthropic", "openai", "scripted", "mistral"])

    assert asyncio.run(deactivate()) == ["llm:anthropic is inactive: Prefect would not enforce it"]
    assert run_cli("pools", "apply", "--limits", str(limits_file)) == 0
    assert asyncio.run(check_limits(["anthropic", "openai"])) == []
    assert asyncio.run(check_limits(["bedrock-never-applied"])) == [
        "llm:bedrock-never-applied does not exist (run `glossogen pools apply`)"
    ]


def test_a_limit_the_file_now_says_null_stops_being_enforced(
    deployed: str, limits_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unlimited = tmp_path / "limits.yaml"
    unlimited.write_text(
        limits_file.read_text().replace(
            "{pool_concurrency: 4, llm_concurrency: 2}",
            "{pool_concurrency: 4, llm_concurrency: null}",
            1,
        )
    )
    capsys.readouterr()
    assert run_cli("pools", "apply", "--limits", str(unlimited)) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "deactivated limit llm:openai (no limit: calls to it are not limited)" in printed
    assert asyncio.run(_pools_and_limits())[1]["llm:openai"] == (2, False)
    assert run_cli("pools", "apply", "--limits", str(unlimited)) == 0  # nothing more to say
    assert not [line for line in capsys.readouterr().out.splitlines() if "llm:openai" in line]
    assert run_cli("pools", "apply", "--limits", str(limits_file)) == 0  # as the others expect
    assert asyncio.run(_pools_and_limits())[1]["llm:openai"] == (2, True)


def test_deploy_registers_every_deployment_whose_flow_exists(deployed: str) -> None:
    async def read() -> tuple[dict, list]:
        async with get_client() as client:
            deployments = {d.name: d for d in await client.read_deployments(limit=200)}
            automations = await client.read_automations()
        return deployments, automations

    deployments, automations = asyncio.run(read())
    expected = {
        d["name"] for d in SPEC["deployments"] if (REPO / d["entrypoint"].split(":")[0]).exists()
    }
    assert set(deployments) == expected
    assert deployments["simulate-openai"].work_pool_name == "glossogen-openai"
    assert deployments["resume-openai"].work_pool_name == "glossogen-openai"
    assert deployments["reconcile"].parameters == {"runs_dir": "./runs", "silent_seconds": 600}
    (reacting,) = [a for a in automations if a.name.startswith("reconcile")]
    assert reacting.trigger.expect == {"prefect.flow-run.Crashed"}
    assert reacting.actions[0].deployment_id == deployments["reconcile"].id


def test_deployed_flows_run_in_the_scratch_project_never_the_checkout(
    deployed: str, project_dir: Path
) -> None:
    async def read() -> list:
        async with get_client() as client:
            return await client.read_deployments(limit=200)

    deployments = asyncio.run(read())
    assert deployments
    where = {"prefect.deployments.steps.set_working_directory": {"directory": str(project_dir)}}
    # Each flow run starts with this pull step: reconcile's `runs_dir: ./runs` (prefect.yaml's
    # default) is `<project_dir>/runs`, not the checkout's.
    assert {d.name: d.pull_steps for d in deployments} == {d.name: [where] for d in deployments}
    assert not project_dir.is_relative_to(REPO)


def test_a_simulate_run_through_a_process_worker_completes(
    scripted_worker: ProcessWorker, tmp_path: Path
) -> None:
    request = RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=3"],
    )
    flow_run = run_deployment(
        "simulate/simulate-scripted", parameters={"config": request.model_dump()}, timeout=0
    )
    done = wait_for_state(flow_run.id)
    assert done.state_name == "Completed"
    (run_dir,) = (tmp_path / "runs" / "veyru").iterdir()
    assert done.name == f"veyru/{run_dir.name}"  # renamed to the run id once claimed
    events = log_lines(run_dir)
    assert (events[-1]["event_type"], events[-1]["status"]) == ("simulation_ended", "completed")
    # The worker plays the same seed to the same verdicts as this process does.
    here = asyncio.run(simulate(request.model_copy(update={"runs_dir": str(tmp_path / "here")})))
    assert [e["success"] for e in events if e["event_type"] == "round_result_recorded"] == [
        e["success"]
        for e in log_lines(Path(here.run_url))
        if e["event_type"] == "round_result_recorded"
    ]
    assert len([e for e in events if e["event_type"] == "round_result_recorded"]) == 3
