"""Tasks of the sweep flow: plan, find workers, launch a trial on a worker, read it, publish.

The sweep's steps, census and statistics live in ``glossogen.sweep`` (Prefect-free), the loop in
``flows/sweep.py``; deployments and their workers are ``orchestration/deployments.py``'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import re
from typing import Any

from prefect import get_run_logger

from glossogen.launch import ResumeRequest, claim_folder, notify, plan_resume
from glossogen.storage import LABELS, RunFolder, RunStore
from glossogen.sweep import (
    Launch,
    RunRecord,
    SweepPlan,
    SweepRequest,
    SweepSummary,
    prepare_sweep,
    read_run,
    scan_sweep,
    sweep_url,
    trial_labels,
)
from orchestration import glossogen_task
from orchestration.deployments import (
    create_flow_run,
    record_flow_run,
    resume_deployment,
    served,
    simulate_deployment,
)

POLL_SECONDS = 2.0
"""How often a launched deployment flow run is polled for its end (seconds)."""


@glossogen_task(name="plan_sweep")
def planned(request: SweepRequest) -> SweepPlan:
    """Plan a sweep a deployment's flow run was handed as a request (raises ``SweepError``).

    ``glossogen sweep`` hands the flow the plan it made; this plans it once when only the
    request came (:func:`glossogen.sweep.prepare_sweep`).
    """
    sweep = prepare_sweep(request)
    get_run_logger().info(
        "sweep %s: %d cell(s) x %d trial(s), runs in %s",
        sweep.sweep_id,
        len(sweep.cells),
        sweep.spec.trials,
        sweep.spec.runs_dir,
    )
    return sweep


@glossogen_task(name="find_workers")
async def find_workers(providers: list[str]) -> list[str]:
    """Return the providers whose ``simulate-<provider>`` deployment has a worker online."""
    names = {simulate_deployment(p): p for p in sorted(set(providers))}
    found = [names[name] for name in await served(list(names))]
    get_run_logger().info("providers served by workers: %s", found or "none (in-process)")
    return found


def _find_record(launch: Launch, sweep_id: str, epoch: int) -> RunRecord | None:
    """The newest run in the ledger carrying ``launch``'s labels."""
    wanted = trial_labels(sweep_id, launch.key, epoch)
    found = [
        r
        for r in scan_sweep(launch.request.runs_dir, launch.request.scenario, sweep_id)
        if r.key == launch.key and str(r.epoch) == wanted["epoch"]
    ]
    return found[-1] if found else None


CRASH_RELAUNCHES = 2
"""Times a fresh trial is launched again when its flow run crashed before its run began."""


class CrashedBeforeStart(RuntimeError):
    """A fresh trial's flow run crashed before it wrote its run's log: nothing was played."""


async def launch_deployment(launch: Launch, sweep_id: str, epoch: int) -> RunRecord | None:
    """Play ``launch`` on its provider's deployment (:func:`launch_once`), relaunching a crash.

    A fresh trial whose flow run crashed before its run began (its process died on the worker,
    say under load: nothing was played or spent, and the crashed flow run is final, so it cannot
    play later) is launched again under a new idempotency key (``~crashed<n>``), up to
    :data:`CRASH_RELAUNCHES` times; each relaunch is announced (``run_relaunched``).

    Raises:
        CrashedBeforeStart: it crashed so on every launch.
        RuntimeError: see :func:`launch_once`.
    """
    for relaunch in range(CRASH_RELAUNCHES + 1):
        key = launch.idempotency_key + (f"~crashed{relaunch}" if relaunch else "")
        try:
            return await launch_once(
                dataclasses.replace(launch, idempotency_key=key), sweep_id, epoch
            )
        except CrashedBeforeStart as exc:
            if relaunch == CRASH_RELAUNCHES:
                raise
            notify("run_relaunched", launch.key.label(), str(exc))
    raise AssertionError("unreachable: the last launch returned or raised")


async def launch_once(launch: Launch, sweep_id: str, epoch: int) -> RunRecord | None:
    """Create the run's flow run on its provider's deployment and wait for it to end.

    A fresh run's folder is claimed here, before the flow run is created, and handed to it as
    ``run_dir``: the launcher names the run at once (``run_queued``), and the worker plays into
    that folder. The flow run gets the launch's idempotency key, so a second launch of the same
    (sweep, cell, trial) returns the first flow run (and its folder; the one just claimed is
    removed) instead of paying twice. A folder whose flow run never started a log (refused by
    the API, cancelled before a worker took it, refused on the worker) is removed again:
    nothing was played in it. An interrupted run (``launch.resume_url``) continues in place on
    ``resume/resume-<provider>``; None when that deployment does not exist (the caller plays it
    in-process).

    Raises:
        CrashedBeforeStart: a fresh run's flow run crashed before it started the run's log
            (its process died on the worker, say under load); its folder was removed.
        RuntimeError: the flow run ended otherwise without starting its run's log (e.g.
            refused on the worker); its state is named.
    """
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    claimed: RunFolder | None = None
    if launch.resume_url is None:
        name = simulate_deployment(launch.request.provider)
        config = launch.config
        claimed = await asyncio.to_thread(claim_folder, config, launch.request.runs_dir)
        folder = claimed
        parameters: dict[str, Any] = {
            "config": config.model_dump(mode="json"),
            "run_dir": folder.url,
        }
    else:
        name = resume_deployment(launch.request.provider)
        folder = RunFolder.at(launch.resume_url)
        config, _ = plan_resume(ResumeRequest(run_dir=folder.url))
        parameters = {"config": config.model_dump(mode="json"), "run_dir": folder.url}
    try:
        flow_run = await create_flow_run(
            name, parameters, launch.idempotency_key, tags=[f"sweep:{sweep_id}"]
        )
    except BaseException as exc:
        if claimed is not None:
            await asyncio.to_thread(claimed.discard_unstarted)
        if isinstance(exc, ObjectNotFound) and claimed is None:
            return None  # no resume deployment: the flow continues it in-process
        raise
    given = str(flow_run.parameters.get("run_dir", ""))
    if claimed is not None and given != claimed.url:  # the key's first flow run, handed back
        await asyncio.to_thread(claimed.discard_unstarted)
        folder = RunFolder.at(given)
    await asyncio.to_thread(record_flow_run, folder, flow_run)  # so `glossogen stop` cancels it
    notify("run_queued", launch.key.label(), name, str(flow_run.id), folder.run_id)
    try:
        async with get_client() as client:
            while True:
                flow_run = await client.read_flow_run(flow_run.id)
                if flow_run.state is not None and flow_run.state.is_final():
                    break
                await asyncio.sleep(POLL_SECONDS)
    except asyncio.CancelledError:  # also while the client opens: the flow run exists already
        if await _cancel_unstarted(flow_run.id):
            await asyncio.to_thread(folder.discard_unstarted)
        raise
    if not folder.has_log():
        await asyncio.to_thread(folder.discard_unstarted)
        state = flow_run.state.name if flow_run.state else "unknown"
        said = f"flow run {flow_run.name} ended {state} without starting run {folder.run_id}"
        crashed = flow_run.state is not None and flow_run.state.is_crashed()
        raise (CrashedBeforeStart if crashed and claimed is not None else RuntimeError)(said)
    record = read_run(
        RunStore(folder.runs_dir),
        folder.run_id,
        launch.request.scenario,
        folder.read_json_or(LABELS, {}),
    )
    notify("run_returned", launch.key.label(), record.run_id, record.status)
    return record


async def _cancel_unstarted(flow_run_id: Any) -> bool:
    """Cancel a launched flow run no worker has started yet (the sweep was interrupted).

    A run a worker already plays goes on (it is paying; the next launch counts it); one still
    ``Scheduled`` or ``Pending`` has spent nothing, and left alone it would start whenever a
    worker next polls, perhaps after the next launch played its trial in-process: paid twice.

    Returns:
        True when the flow run was cancelled before any worker started it.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import State, StateType
    from prefect.client.schemas.responses import SetStateStatus
    from prefect.states import Cancelled

    try:
        async with get_client() as client:
            flow_run = await client.read_flow_run(flow_run_id)
            if flow_run.state is None or flow_run.state.type not in (
                StateType.SCHEDULED,
                StateType.PENDING,
            ):
                return False
            cancelled: State[None] = Cancelled(
                message="its sweep was interrupted before it started"
            )
            result = await client.set_flow_run_state(flow_run_id, cancelled)
            return result.status == SetStateStatus.ACCEPT
    except Exception:  # noqa: BLE001 (already interrupted: the run simply stays scheduled)
        logging.getLogger(__name__).warning("could not cancel unstarted flow run %s", flow_run_id)
        return False


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


def _api_refused(task: Any, task_run: Any, state: Any) -> bool:
    """Retry a ``launch_trial`` the Prefect API refused (a 429/5xx or a dropped connection).

    Launching again is safe: the flow run's idempotency key returns the first one.
    """
    import httpx
    from prefect.exceptions import PrefectHTTPStatusError

    exc = getattr(state, "data", None)  # the engine hands a raised exception in as the data
    if isinstance(exc, PrefectHTTPStatusError):
        return exc.response.status_code in (429, 502, 503, 504)
    return isinstance(exc, httpx.TransportError)


@glossogen_task(
    name="launch_trial",
    task_run_name="launch_trial-{launch.key.cell_id}",
    retries=3,
    retry_delay_seconds=[1, 2, 4],
    retry_condition_fn=_api_refused,
)
async def launch_trial(launch: Launch, sweep_id: str, epoch: int) -> RunRecord | None:
    """Play one trial on its provider's worker (:func:`launch_deployment`).

    A launch the Prefect API refused (a SQLite server answers 503 while its database is locked)
    is tried again, up to 3 times; the idempotency key keeps it from paying twice.
    """
    return await launch_deployment(launch, sweep_id, epoch)


@glossogen_task(name="read_trial")
def read_trial(launch: Launch, run_id: str, run_url: str) -> RunRecord:
    """Read back the record of a trial's run from its folder (labels and log)."""
    store = RunStore(launch.request.runs_dir)
    labels = store.read_json(run_url, "labels.json")
    return read_run(store, run_id, launch.request.scenario, labels)


def artifact_key(sweep_id: str, runs_dir: str) -> str:
    """The census artifact's key: ``sweep-<id>-<hash>`` in lowercase letters, digits, dashes.

    ``<hash>`` is 8 hex digits of the SHA-256 of the sweep's folder URL, so two unrelated
    specs that share a file name (``spec.yaml``) in different runs folders never share an
    artifact.
    """
    digest = hashlib.sha256(sweep_url(runs_dir, sweep_id).encode()).hexdigest()[:8]
    return "sweep-" + re.sub(r"[^a-z0-9-]+", "-", sweep_id.lower()).strip("-") + "-" + digest


def census_rows(summary: SweepSummary) -> list[dict[str, Any]]:
    """One row per (cell, trial): grid values, state, run, round success, pass, cost (USD).

    ``page`` is the run's page in the run browser when ``GLOSSOGEN_BROWSER_URL`` is set.
    """
    from glossogen.launch._run_table import browser_url

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
                    "page": browser_url(trial.run_id) if trial.run_id else None,
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
