"""The reconcile flow: bring back every run that stopped without ending (crash recovery).

Each pass surveys the run folders (:func:`glossogen.derive.survey_unfinished_runs`) and joins
them with the latest ``simulate``/``resume`` flow run named after each run id (the simulate flow
run is renamed to the run id once its folder is claimed; resume flow runs carry it from the
start; the tasks that read and act are ``tasks/reconcile.py``'s). Then, per run:

- **crashed** (its flow run is ``Crashed``, or ``Running`` while no process holds the folder's
  lock and the log is silent past the threshold): marked ``Crashed`` and resumed;
- **hung** (a live process holds the lock, a local ``flock`` or an S3 lease, but the log has
  been silent past the threshold):
  its flow run is cancelled and tagged ``glossogen-reconcile-cancelled``; once it has ended
  ``interrupted``, the next pass resumes it;
- **stopped** (no flow run known, log silent past the threshold, not locked): resumed.

A resume goes through the ``resume/resume-<provider>`` deployment when it exists and its work
pool has an online worker (an idempotency key made of the run id and its last event id, so a
second pass launches nothing new), else it plays in this process. Safe to run twice: a run
being resumed is locked, queued under the same key, or finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import FlowRun, StateType

from flows.simulate import resume
from glossogen.derive import DeriveError, StaleRun
from glossogen.launch import LaunchError, ResumeRequest, RunConfig, plan_resume
from orchestration.deployments import create_flow_run, served_resume_deployment
from tasks.reconcile import CANCELLED_TAG, cancel_hung, latest_flow_runs, mark_crashed, survey

Action = Literal["resume", "cancel", "skip"]
WAITING = {StateType.SCHEDULED, StateType.PENDING, StateType.CANCELLING}


@dataclass(frozen=True)
class Decision:
    """What reconcile does with one unfinished run, and why (logged)."""

    action: Action
    reason: str
    mark_crashed: bool = False


def decide(run: StaleRun, flow_run: FlowRun | None, silent_seconds: float) -> Decision:
    """Decide what to do with ``run`` given its latest flow run (or None) and the threshold.

    Args:
        run: The run as its folder shows it.
        flow_run: The latest ``simulate``/``resume`` flow run named after the run, if any.
        silent_seconds: Seconds without a new event after which a run counts as hung or dead.
    """
    state = flow_run.state_type if flow_run is not None else None
    silent = run.silent_seconds >= silent_seconds
    quiet_for = f"no new event for {run.silent_seconds:.0f} s"
    if run.locked:
        if not silent:
            return Decision("skip", "live")
        if flow_run is None or state in WAITING or CANCELLED_TAG in flow_run.tags:
            return Decision("skip", f"hung ({quiet_for}) but no flow run to cancel")
        return Decision("cancel", f"hung: {quiet_for} while its process holds the lock")
    if run.ended_status == "interrupted":
        if flow_run is not None and state is StateType.CANCELLED and CANCELLED_TAG in flow_run.tags:
            return Decision("resume", "cancelled by reconcile as hung")
        return Decision("skip", "interrupted by its user")
    if run.ended_status is not None:
        return Decision("skip", f"ended {run.ended_status}")
    if state is StateType.CRASHED:
        return Decision("resume", "its flow run crashed")
    if state in WAITING:
        return Decision("skip", f"its flow run is {state.value.lower()}")
    if not silent:
        return Decision("skip", f"not silent long enough ({quiet_for})")
    if state is StateType.RUNNING:
        return Decision("resume", f"its process is gone ({quiet_for})", mark_crashed=True)
    return Decision("resume", f"stopped without ending ({quiet_for})")


def resume_config(run: StaleRun) -> RunConfig:
    """The config a run is resumed with: all it recorded (knobs, model, provider, limits).

    Raises:
        DeriveError: the run cannot be resumed (its log, its lock).
        LaunchError: its recorded config no longer validates.
    """
    config, _ = plan_resume(ResumeRequest(run_dir=run.run_url, scenario=run.scenario))
    return config


@flow(name="reconcile")
async def reconcile(
    runs_dir: str, silent_seconds: float = 600.0, use_deployments: bool = True
) -> list[str]:
    """Resume crashed, dead and (once cancelled) hung runs under ``runs_dir``; return their ids.

    Args:
        runs_dir: Runs root (local folder or fsspec URL), as the runs were launched with.
        silent_seconds: Seconds without a new event after which a run counts as hung or dead.
        use_deployments: Queue resumes on ``resume-<provider>`` when a worker serves it (they
            run after this flow returns); False plays every resume here, one after another.

    Returns:
        The run ids resumed or queued for resume in this pass, in folder order.
    """
    logger = get_run_logger()
    runs = survey(runs_dir)
    flow_runs = await latest_flow_runs([r.run_id for r in runs])
    resumed: list[str] = []
    for run in runs:
        flow_run = flow_runs.get(run.run_id)
        decision = decide(run, flow_run, silent_seconds)
        if decision.action == "skip":
            logger.debug("%s: left alone (%s)", run.run_id, decision.reason)
            continue
        if decision.action == "cancel":
            assert flow_run is not None
            await cancel_hung(flow_run.id, list(flow_run.tags), decision.reason)
            logger.warning("%s: cancelled flow run %s (%s)", run.run_id, flow_run.id,
                           decision.reason)  # fmt: skip
            continue
        if decision.mark_crashed and flow_run is not None:
            await mark_crashed(flow_run.id, decision.reason)
        if await launch_resume(run, runs_dir, decision.reason, use_deployments):
            resumed.append(run.run_id)
    return resumed


async def launch_resume(
    run: StaleRun, runs_dir: str, reason: str, use_deployments: bool = True
) -> bool:
    """Resume ``run`` through its provider's deployment, else in this process; True if launched."""
    logger = get_run_logger()
    try:
        config = resume_config(run)
    except (DeriveError, LaunchError) as exc:
        logger.warning("%s: %s, but it cannot be resumed: %s", run.run_id, reason, exc)
        return False
    deployment = await served_resume_deployment(run.provider) if use_deployments else None
    if deployment is not None:
        flow_run = await create_flow_run(
            deployment,
            {"config": config.model_dump(mode="json"), "run_dir": run.run_url},
            f"reconcile:{run.run_id}:{run.last_event_id}",
            flow_run_name=run.run_id,
            as_subflow=False,
        )
        logger.info("%s: %s; resume queued as flow run %s on %s", run.run_id, reason,
                    flow_run.id, deployment)  # fmt: skip
        return True
    try:
        result = await resume(config, run.run_url)
    except (DeriveError, LaunchError) as exc:
        logger.warning("%s: %s, but it cannot be resumed: %s", run.run_id, reason, exc)
        return False
    logger.info("%s: %s; resumed here: %s", run.run_id, reason, result.status)
    return True
