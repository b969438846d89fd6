"""The nightly-export deployment, played by a process worker, writes the CSVs to S3 (moto)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import s3fs
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment

from flows.simulate import simulate
from glossogen.launch import RunRequest
from tests.fixtures.prefect_server import StartWorker
from tests.orchestration.flow_runs import wait_for_state


def test_nightly_export_writes_the_csvs_to_s3(
    deployed: str, process_workers: StartWorker, s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    played = [
        asyncio.run(
            simulate(
                RunRequest(
                    scenario="prisoners_dilemma",
                    model="scripted",
                    provider="scripted",
                    runs_dir=str(runs),
                    config="knobs_default",
                    overrides=[f"round_count={rounds}"],
                )
            )
        )
        for rounds in (2, 3)
    ]
    process_workers("glossogen")  # started now: its runs inherit the moto endpoint and keys

    async def schedule() -> list[str]:
        async with get_client() as client:
            deployment = await client.read_deployment_by_name("export/nightly-export")
        return [s.schedule.cron for s in deployment.schedules]  # type: ignore[union-attr]  # every shipped schedule is a cron one

    assert asyncio.run(schedule()) == ["0 3 * * *"]
    fs = s3fs.S3FileSystem(endpoint_url=s3_server)
    # the deployment's parameter (the request), then an older deployment's runs_dir and out
    for given in ("request", "loose"):
        out = f"{s3_bucket}/nightly-{given}"
        fields = {"runs_dir": str(runs), "out": out}
        # an older deployment holds runs_dir and out and no request: this one's default
        # request is overridden with none, so the flow run gets what an older one's gets
        parameters = {"request": fields} if given == "request" else {"request": None, **fields}
        flow_run = run_deployment("export/nightly-export", parameters=parameters, timeout=0)
        assert wait_for_state(flow_run.id).state_name == "Completed"
        fs.invalidate_cache()
        names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(out.removeprefix("s3://")))
        # the three default tables and, as more than one table is written, the columns legend
        assert names == ["agent_level.csv", "columns.csv", "round_level.csv", "run_level.csv"]
        with fs.open(f"{out}/run_level.csv", "r") as f:
            rows = f.read().splitlines()
        assert len(rows) == 1 + len(played)  # a header and one row per run
        assert sorted(row.split(",", 1)[0] for row in rows[1:]) == sorted(r.run_id for r in played)
