"""The reconcile flow: resume every run that stopped without ending (crash recovery)."""

from __future__ import annotations

import time

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE

from flows.simulate import resume
from glossogen.derive import StaleRun, find_stale_runs
from glossogen.launch import RunRequest
from glossogen.storage import join


@task(name="find_stale_runs", cache_policy=NONE)
def find_stale(runs_dir: str, silent_seconds: float) -> list[StaleRun]:
    """List runs with no ``simulation_ended``, silent past the threshold and not being written."""
    return find_stale_runs(runs_dir, silent_seconds, time.time())


@flow(name="reconcile")
async def reconcile(runs_dir: str, silent_seconds: float = 600.0) -> list[str]:
    """Resume each stale run under ``runs_dir`` in place, one after another; return their ids.

    Safe to run twice: a run being resumed is locked (and then ends), so it is skipped.
    """
    resumed: list[str] = []
    for run in find_stale(runs_dir, silent_seconds):
        request = RunRequest(
            scenario=run.scenario,
            model=run.model,
            provider=run.provider,
            runs_dir=runs_dir,
            config=join(run.run_url, "config.json"),
        )
        result = await resume(request, run.run_url)
        get_run_logger().info("resumed %s: %s", run.run_id, result.status)
        resumed.append(run.run_id)
    return resumed
