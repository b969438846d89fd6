"""Tasks of the sweep flow: plan, find workers, launch one run (deployment or subflow), publish.

The sweep's loop, census and statistics live in ``glossogen.sweep`` (Prefect-free); these tasks
are its Prefect edge: the deployments and workers it can use, ``run_deployment`` with an
idempotency key, the in-process subflow, and the census table artifact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from glossogen.launch import ResumeRequest, notify, plan_resume, plan_run
from glossogen.storage import RunStore
from glossogen.sweep import (
    Launch,
    RunRecord,
    SweepOptions,
    SweepPlan,
    SweepSummary,
    load_spec,
    plan_sweep,
    read_run,
    scan_sweep,
    sweep_url,
    trial_labels,
)

POLL_SECONDS = 2.0
"""How often a launched deployment flow run is polled for its end (seconds)."""


def simulate_deployment(provider: str) -> str:
    """The deployment that plays runs of ``provider``: ``simulate/simulate-<provider>``."""
    return f"simulate/simulate-{provider}"


@task(name="plan_sweep", cache_policy=NONE)
def plan(spec_path: str, options: SweepOptions) -> SweepPlan:
    """Read the spec and check every cell as ``glossogen run`` would (raises ``SweepError``)."""
    spec, sweep_id = load_spec(spec_path)
    sweep = plan_sweep(spec, sweep_id, spec_path, options)
    get_run_logger().info(
        "sweep %s: %d cell(s) x %d trial(s), runs in %s",
        sweep_id,
        len(sweep.cells),
        spec.trials,
        spec.runs_dir,
    )
    return sweep


@task(name="find_workers", cache_policy=NONE)
async def find_workers(providers: list[str]) -> list[str]:
    """Return the providers whose ``simulate-<provider>`` deployment has a worker online.

    Only against a configured Prefect server (``PREFECT_API_URL``): a temporary server has no
    workers, so every cell then plays in-process.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import WorkerStatus
    from prefect.exceptions import ObjectNotFound

    from flows.runtime import api_url_configured

    if not api_url_configured():
        return []
    served = []
    async with get_client() as client:
        for provider in sorted(set(providers)):
            try:
                deployment = await client.read_deployment_by_name(simulate_deployment(provider))
            except ObjectNotFound:
                continue
            if not deployment.work_pool_name:
                continue
            workers = await client.read_workers_for_work_pool(deployment.work_pool_name)
            if any(w.status == WorkerStatus.ONLINE for w in workers):
                served.append(provider)
    get_run_logger().info("providers served by workers: %s", served or "none (in-process)")
    return served


def _find_record(launch: Launch, sweep_id: str, epoch: int) -> RunRecord | None:
    """The newest run in the ledger carrying ``launch``'s labels."""
    wanted = trial_labels(sweep_id, launch.key, epoch)
    found = [
        r
        for r in scan_sweep(launch.request.runs_dir, launch.request.scenario, sweep_id)
        if r.key == launch.key and str(r.epoch) == wanted["epoch"]
    ]
    return found[-1] if found else None


async def launch_deployment(launch: Launch, sweep_id: str, epoch: int) -> RunRecord:
    """Create the run's flow run on its provider's deployment and wait for it to end.

    ``run_deployment`` gets the launch's idempotency key, so a second launch of the same
    (sweep, cell, trial) returns the first flow run instead of paying twice. An interrupted
    run (``launch.resume_url``) continues in place on ``resume/resume-<provider>``.

    Raises:
        RuntimeError: the flow run ended without leaving a run folder (e.g. refused on the
            worker); its state is named.
    """
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound

    if launch.resume_url is None:
        name = simulate_deployment(launch.request.provider)
        config = plan_run(launch.request)
        parameters: dict[str, Any] = {
            "config": config.model_dump(mode="json"),
            "runs_dir": launch.request.runs_dir,
        }
    else:
        name = f"resume/resume-{launch.request.provider}"
        config, _ = plan_resume(ResumeRequest(run_dir=launch.resume_url))
        parameters = {"config": config.model_dump(mode="json"), "run_dir": launch.resume_url}
    try:
        flow_run = await run_deployment(
            name=name,
            parameters=parameters,
            idempotency_key=launch.idempotency_key,
            timeout=0,
            tags=[f"sweep:{sweep_id}"],
        )
    except ObjectNotFound:
        if launch.resume_url is None:
            raise
        return await launch_subflow(launch)  # no resume deployment: continue it here
    notify("run_queued", launch.key.label(), name, str(flow_run.id))
    try:
        async with get_client() as client:
            while True:
                flow_run = await client.read_flow_run(flow_run.id)
                if flow_run.state is not None and flow_run.state.is_final():
                    break
                await asyncio.sleep(POLL_SECONDS)
    except asyncio.CancelledError:  # also while the client opens: the flow run exists already
        await _cancel_unstarted(flow_run.id)
        raise
    record = _find_record(launch, sweep_id, epoch)
    if record is None:
        state = flow_run.state.name if flow_run.state else "unknown"
        raise RuntimeError(f"flow run {flow_run.name} ended {state} without a run folder")
    notify("run_returned", launch.key.label(), record.run_id, record.status)
    return record


async def _cancel_unstarted(flow_run_id: Any) -> None:
    """Cancel a launched flow run no worker has started yet (the sweep was interrupted).

    A run a worker already plays goes on (it is paying; the next launch counts it); one still
    ``Scheduled`` or ``Pending`` has spent nothing, and left alone it would start whenever a
    worker next polls, perhaps after the next launch played its trial in-process: paid twice.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled

    try:
        async with get_client() as client:
            flow_run = await client.read_flow_run(flow_run_id)
            if flow_run.state is not None and flow_run.state.type in (
                StateType.SCHEDULED,
                StateType.PENDING,
            ):
                await client.set_flow_run_state(
                    flow_run_id, Cancelled(message="its sweep was interrupted before it started")
                )
    except Exception:  # noqa: BLE001 (already interrupted: the run simply stays scheduled)
        logging.getLogger(__name__).warning("could not cancel unstarted flow run %s", flow_run_id)


LAUNCH_ATTEMPTS = 5
"""Attempts at starting an in-process run the Prefect API refused before it claimed a folder."""


def refused_before_start(exc: BaseException, launch: Launch, sweep_id: str, epoch: int) -> bool:
    """True when a fresh run failed only because the Prefect API refused to start it.

    That is: the error is the API's 429/502/503/504 (a SQLite server answers 503 while its
    database is locked) or a dropped connection, the launch is not a resume, and no run folder
    of this (cell, trial, epoch) exists, so nothing was written or spent and launching it again
    cannot pay twice.
    """
    import httpx
    from prefect.exceptions import PrefectHTTPStatusError

    if isinstance(exc, PrefectHTTPStatusError):
        refused = exc.response.status_code in (429, 502, 503, 504)
    else:
        refused = isinstance(exc, httpx.TransportError)
    return refused and launch.resume_url is None and _find_record(launch, sweep_id, epoch) is None


async def launch_subflow(
    launch: Launch, sweep_id: str | None = None, epoch: int | None = None
) -> RunRecord:
    """Play the run in this process as a ``simulate`` subflow and read its record back.

    An interrupted run (``launch.resume_url``) continues in place as a ``resume`` subflow.
    Given the sweep's id and epoch, a run the Prefect API refused to start
    (:func:`refused_before_start`) is launched again, up to :data:`LAUNCH_ATTEMPTS` times,
    after a jittered exponential wait (tenacity; 1 to 20 s).
    """
    from tenacity import (
        AsyncRetrying,
        retry_if_exception,
        stop_after_attempt,
        wait_random_exponential,
    )

    from flows.simulate import resume, simulate

    def retryable(exc: BaseException) -> bool:
        if sweep_id is None or epoch is None:
            return False
        return refused_before_start(exc, launch, sweep_id, epoch)

    async for attempt in AsyncRetrying(
        retry=retry_if_exception(retryable),
        stop=stop_after_attempt(LAUNCH_ATTEMPTS),
        wait=wait_random_exponential(multiplier=1, max=20),
        reraise=True,
    ):
        with attempt:
            if launch.resume_url is None:
                result = await simulate(plan_run(launch.request), runs_dir=launch.request.runs_dir)
            else:
                result = await resume(run_dir=launch.resume_url)
    store = RunStore(launch.request.runs_dir)
    labels = store.read_json(result.run_url, "labels.json")
    return read_run(store, result.run_id, launch.request.scenario, labels)


def artifact_key(sweep_id: str, runs_dir: str) -> str:
    """The census artifact's key: ``sweep-<id>-<hash>`` in lowercase letters, digits, dashes.

    ``<hash>`` is 8 hex digits of the SHA-256 of the sweep's folder URL, so two unrelated
    specs that share a file name (``spec.yaml``) in different runs folders never share an
    artifact.
    """
    digest = hashlib.sha256(sweep_url(runs_dir, sweep_id).encode()).hexdigest()[:8]
    return "sweep-" + re.sub(r"[^a-z0-9-]+", "-", sweep_id.lower()).strip("-") + "-" + digest


def census_rows(summary: SweepSummary) -> list[dict[str, Any]]:
    """One row per (cell, trial): grid values, state, run, round success, pass, cost (USD)."""
    rows = []
    for cell in summary.cells:
        for trial in cell.trials:
            rows.append(
                {
                    "cell": cell.cell_id,
                    "params": json.dumps(cell.params, sort_keys=True),
                    "trial": trial.trial,
                    "state": trial.state,
                    "run_id": trial.run_id or "",
                    "round_success": trial.scores.get("round_success"),
                    "passed": trial.passed.get("round_success"),
                    "cost_usd": trial.scores.get("cost_usd"),
                }
            )
    return rows


async def publish_census(summary: SweepSummary) -> None:
    """Create (or add a version to) the sweep's census table artifact."""
    from prefect.artifacts import acreate_table_artifact

    c = summary.census
    try:
        await acreate_table_artifact(
            table=census_rows(summary),
            key=artifact_key(summary.sweep_id, summary.runs_dir),
            description=(
                f"sweep {summary.sweep_id}: planned {c.planned} · running {c.running} · "
                f"done {c.done} · failed {c.failed} · incomplete {c.incomplete} · spent "
                f"${summary.spend.spent_usd:.4f} of "
                + ("no cap" if summary.spend.cap_usd is None else f"${summary.spend.cap_usd:.6f}")
            ),
        )
    except Exception as exc:  # noqa: BLE001 (a census display must never fail the sweep)
        get_run_logger().warning("could not publish the census artifact: %s", exc)
