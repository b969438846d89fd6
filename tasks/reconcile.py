"""Tasks of the reconcile flow: survey the unfinished runs, read their flow runs, act on them.

What reconcile decides for each run is ``flows/reconcile.py``'s; these tasks read the runs
folder and the Prefect API, and move a flow run to ``Cancelling`` or ``Crashed``.
"""

from __future__ import annotations

import time
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterName,
)
from prefect.client.schemas.objects import FlowRun
from prefect.client.schemas.sorting import FlowRunSort
from prefect.states import Cancelling, Crashed

from glossogen.derive import StaleRun, survey_unfinished_runs
from orchestration import glossogen_task

CANCELLED_TAG = "glossogen-reconcile-cancelled"
"""Tag put on a hung flow run that reconcile cancelled: its ``interrupted`` run is resumed."""


@glossogen_task(name="survey_unfinished_runs")
def survey(runs_dir: str) -> list[StaleRun]:
    """List the runs under ``runs_dir`` that have not finished (folder, log and lock)."""
    return survey_unfinished_runs(runs_dir, time.time())


@glossogen_task(name="read_flow_runs")
async def latest_flow_runs(run_ids: list[str]) -> dict[str, FlowRun]:
    """Return the latest ``simulate``/``resume`` flow run named after each run id."""
    if not run_ids:
        return {}
    latest: dict[str, FlowRun] = {}
    async with get_client() as client:
        for start in range(0, len(run_ids), 200):
            flow_runs = await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["simulate", "resume"])),
                flow_run_filter=FlowRunFilter(
                    name=FlowRunFilterName(any_=run_ids[start : start + 200])
                ),
                sort=FlowRunSort.EXPECTED_START_TIME_DESC,
            )
            for flow_run in flow_runs:
                latest.setdefault(flow_run.name, flow_run)
    return latest


@glossogen_task(name="cancel_hung_flow_run")
async def cancel_hung(flow_run_id: UUID, tags: list[str], reason: str) -> None:
    """Tag the flow run and move it to ``Cancelling`` (its worker then stops the process)."""
    async with get_client() as client:
        await client.update_flow_run(flow_run_id, tags=[*tags, CANCELLED_TAG])
        await client.set_flow_run_state(
            flow_run_id, Cancelling(message=f"glossogen reconcile: {reason}"), force=True
        )


@glossogen_task(name="mark_crashed")
async def mark_crashed(flow_run_id: UUID, reason: str) -> None:
    """Record that the flow run's process is gone (``Running`` -> ``Crashed``)."""
    async with get_client() as client:
        await client.set_flow_run_state(
            flow_run_id, Crashed(message=f"glossogen reconcile: {reason}"), force=True
        )
