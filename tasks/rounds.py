"""Tasks that play a run: claim its folder, open it, play one round per task run, finish."""

from __future__ import annotations

import asyncio
import hashlib
import re

from prefect import get_run_logger

from glossogen.engine import RoundSummary
from glossogen.eventlog import EndStatus
from glossogen.launch import (
    RunConfig,
    RunResult,
    RunSession,
    RunSpend,
    claim_run_async,
    notify,
    open_session,
    resume_point,
)
from glossogen.launch import (
    price_spend as price,
)
from glossogen.refusals import LimitReached
from glossogen.storage import RunFolder
from orchestration import glossogen_task


# No task retries: a claim is retried into the same folder or not at all. A failed claim
# removes what it made (glossogen.launch) and raises a LaunchError with its exit code; a
# retry of the flow run finds the folder it claimed (once_per_flow_run) and reuses it.
@glossogen_task(name="claim_run_dir", once_per_flow_run=True)
async def claim_run_dir(config: RunConfig, runs_dir: str, run_dir: str = "") -> RunFolder:
    """Claim ``<runs_dir>/<scenario>/<unix_ts>/`` atomically and write its config files.

    With ``run_dir`` (a folder its launcher claimed before creating the flow run, as a sweep
    through deployments does) that folder is taken as it is. Cached per flow run: a retry of
    the same flow run gets the folder it claimed before, so a crashed run is resumed in place
    instead of started over. The flow run is renamed to the run id, so the Prefect UI and the
    runs folder name a run alike.
    """
    if run_dir:
        folder = RunFolder.at(run_dir)
        notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    else:
        folder = await claim_run_async(config, runs_dir)
    await _name_flow_run(folder.run_id)
    await record_own_flow_run(folder)
    return folder


async def record_own_flow_run(folder: RunFolder) -> None:
    """Record this flow run in the folder when a worker plays it from a deployment.

    So ``glossogen stop`` (and the run page's Stop, MCP ``stop_run``) cancel it through
    Prefect: ``orchestration.deployments.record_flow_run``. A run played in its launcher's own
    process records nothing.
    """
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    if flow_run is None or flow_run.deployment_id is None:
        return
    from orchestration.deployments import record_flow_run  # a worker's run only

    if not await asyncio.to_thread(record_flow_run, folder, flow_run):
        get_run_logger().warning("could not record flow run %s in %s", flow_run.id, folder.url)


async def _name_flow_run(run_id: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    try:
        async with get_client() as client:  # the flow run's own client, when there is one
            await client.update_flow_run(context.flow_run.id, name=run_id)
    except Exception as exc:  # noqa: BLE001 (a cosmetic rename must never fail a run)
        get_run_logger().warning("could not rename the flow run to %s: %s", run_id, exc)


@glossogen_task(name="start_run")
async def start_run(config: RunConfig, folder: RunFolder) -> RunSession:
    """Open the event log and the engine: a fresh start, or a resume if the log has begun.

    A log that already holds events means this flow run is a retry of one that crashed: its
    state is rebuilt from the log and the cut-off round reopens (``run_resumed``), under the
    same config (limits included) the flow run was given.
    """
    if folder.has_log():
        point = resume_point(config, folder.url, allow_config_change=False)
        return open_session(config, folder, resume=point)
    return open_session(config, folder)


@glossogen_task(name="play_round", task_run_name="play_round-{round_number}")
async def play_round(session: RunSession, round_number: int) -> RoundSummary:
    """Play one round (and its postmortem) inside the run's event loop."""
    return await session.play_round(round_number)


@glossogen_task(name="price_spend", retries=2, retry_delay_seconds=1)
async def price_spend(folder: RunFolder) -> RunSpend:
    """Sum the run's spend (USD) from its event log (read in a worker thread, off the loop)."""
    return await asyncio.to_thread(price, folder)


@glossogen_task(name="finalize")
async def finalize(
    session: RunSession, spend: RunSpend, status: EndStatus, error: str | LimitReached | None = None
) -> RunResult:
    """Log ``simulation_ended`` with status, messages and cost, and close the log."""
    return await session.finish_async(spend, status, error)


def _run_artifact_key(folder: RunFolder) -> str:
    """``run-<scenario>-<ts>-<8 hex of the folder URL>``: one key per run folder."""
    digest = hashlib.sha256(folder.url.encode()).hexdigest()[:8]
    return "run-" + re.sub(r"[^a-z0-9-]+", "-", folder.run_id.lower()).strip("-") + "-" + digest


async def publish_run_table(folder: RunFolder) -> None:
    """Publish the run's round table (``glossogen.launch._run_table``) as a table artifact.

    Its description names the run, how it ended, its folder and, with
    ``GLOSSOGEN_BROWSER_URL`` set, its page in the run browser. A failure to publish is a
    warning, never the run's failure.
    """
    from prefect.artifacts import acreate_table_artifact

    from glossogen.eventlog import RunView
    from glossogen.launch._run_table import browser_url, round_table

    try:
        view = await asyncio.to_thread(RunView.load, folder.log_url)
        total = view.spend.total_cost_usd
        link = browser_url(folder.run_id)
        description = (
            f"run {folder.run_id}: {view.status}, {view.rounds_won} of {view.rounds_played} "
            f"rounds won, {len(view.messages)} messages, {view.total_chars} chars, "
            + ("cost unknown" if total is None else f"${total:.6f}")
            + f"; folder {folder.url}"
            + (f"; page [{link}]({link})" if link else "")
        )
        await acreate_table_artifact(
            table=round_table(view), key=_run_artifact_key(folder), description=description
        )
    except Exception as exc:  # noqa: BLE001 (a display must never fail the run)
        get_run_logger().warning("could not publish the run's table artifact: %s", exc)
