"""The Prefect edge for deployments: which ones a worker serves, and creating their flow runs.

Shared by the sweep (``simulate-<provider>`` and ``resume-<provider>``) and reconcile
(``resume-<provider>``): a deployment counts as served when it exists, has a work pool, and
that pool has a worker online. Only a configured Prefect server (``PREFECT_API_URL``) can have
workers; a temporary server has none.

A run folder a deployment's flow run plays records that flow run (``flow_run.json``:
:func:`record_flow_run`), written by the launcher once the flow run exists and again by the flow
run when it starts; ``glossogen stop`` reads it and cancels the flow run
(:func:`cancel_flow_run`) instead of signalling a process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun, StateType, WorkerStatus
from prefect.deployments import arun_deployment
from prefect.exceptions import ObjectNotFound
from prefect.settings import get_current_settings
from prefect.states import Cancelling

from glossogen.storage import FLOW_RUN, RunFolder, StorageError
from orchestration.busy import ask_while_busy


def simulate_deployment(provider: str) -> str:
    """The deployment that plays runs of ``provider``: ``simulate/simulate-<provider>``."""
    return f"simulate/simulate-{provider}"


def resume_deployment(provider: str) -> str:
    """The deployment that continues runs of ``provider``: ``resume/resume-<provider>``."""
    return f"resume/resume-{provider}"


async def served(names: list[str]) -> list[str]:
    """Return those of the deployments ``names`` whose work pool has a worker online.

    Empty when no Prefect server is configured (a temporary one has no workers).
    """
    if not get_current_settings().api.url:
        return []
    found = []
    async with get_client() as client:
        for name in dict.fromkeys(names):
            try:
                deployment = await client.read_deployment_by_name(name)
            except ObjectNotFound:
                continue
            if not deployment.work_pool_name:
                continue
            workers = await client.read_workers_for_work_pool(deployment.work_pool_name)
            if any(w.status == WorkerStatus.ONLINE for w in workers):
                found.append(name)
    return found


async def served_resume_deployment(provider: str) -> str | None:
    """Return ``resume/resume-<provider>`` if that deployment exists and a worker serves it."""
    found = await served([resume_deployment(provider)])
    return found[0] if found else None


LAUNCH_BUSY_STATUSES = frozenset({429, 502, 503, 504})
"""Answers on which a launch asks again: rate limited, or the server (or its proxy) busy."""
LAUNCH_BUSY_SECONDS = 300.0
"""How long a launch keeps asking a busy server before its error is raised."""
LAUNCH_LONGEST_WAIT_SECONDS = 5.0
"""The longest wait between two asks of a launch (unless the server's ``Retry-After`` says)."""


async def create_flow_run(
    name: str, parameters: dict[str, Any], idempotency_key: str, **options: Any
) -> FlowRun:
    """Create a flow run of deployment ``name`` and return at once (it plays on a worker).

    ``idempotency_key`` makes a second call with the same key return the first flow run, so a
    launcher that runs twice never pays twice. That also makes asking again safe: a server
    that answers 429, 502, 503 or 504 (a SQLite-backed one answers 503 while its database is
    locked), or a connection dropped mid-request, is asked again after a short jittered wait
    (or the ``Retry-After`` it gave), for up to :data:`LAUNCH_BUSY_SECONDS`
    (:func:`orchestration.busy.ask_while_busy`): a busy server holds a sweep back, it does not
    fail its trials.

    Raises:
        ObjectNotFound: no such deployment.
        PrefectHTTPStatusError: any other refusal, or still busy after
            :data:`LAUNCH_BUSY_SECONDS`.
    """
    flow_run: FlowRun = await ask_while_busy(
        arun_deployment,
        statuses=LAUNCH_BUSY_STATUSES,
        seconds=LAUNCH_BUSY_SECONDS,
        longest_wait=LAUNCH_LONGEST_WAIT_SECONDS,
        dropped=True,
        name=name,
        parameters=parameters,
        idempotency_key=idempotency_key,
        timeout=0,
        **options,
    )
    return flow_run


def record_flow_run(folder: RunFolder, flow_run: FlowRun) -> bool:
    """Record in ``folder`` the deployment flow run that plays it; False if it could not be.

    Only a flow run of a deployment (a worker plays it) is recorded: a run played in the
    process that launched it is stopped by signalling that process. A record that could not
    be written (storage) is only a loss of that shortcut: ``glossogen stop`` then signals the
    pid the folder's writer lock records, on the worker's host.
    """
    if flow_run.deployment_id is None:
        return False
    record = {"flow_run_id": str(flow_run.id), "deployment_id": str(flow_run.deployment_id)}
    try:
        folder.write_json(FLOW_RUN, record)
    except StorageError:
        return False
    return True


@dataclass(frozen=True)
class FlowRunCancel:
    """What cancelling a run's flow run did: the state it was in and the state it is in now."""

    flow_run_id: UUID
    before: str
    after: str

    @property
    def never_started(self) -> bool:
        """True when Prefect cancelled it at once: no worker had started it (it was queued)."""
        return self.after == "Cancelled"


def cancel_flow_run(flow_run_id: UUID, reason: str) -> FlowRunCancel | None:
    """Move the flow run to ``Cancelling`` (its worker stops the process); None if it has ended.

    None too when the server holds no such flow run (another server's record). Orchestrated,
    not forced: Prefect cancels a scheduled flow run no worker has started at
    once (``Cancelled``), and a running one goes ``Cancelling`` until its worker has stopped it.
    A flow run already ``Cancelling`` is left as it is. Synchronous (the CLI, a FastAPI worker
    thread and MCP tools call it).

    Raises:
        httpx.HTTPError: the server cannot be reached.
    """
    with get_client(sync_client=True) as client:
        try:
            flow_run = client.read_flow_run(flow_run_id)
        except ObjectNotFound:
            return None
        state = flow_run.state
        if state is None or state.is_final():
            return None
        if state.type is not StateType.CANCELLING:
            client.set_flow_run_state(flow_run_id, Cancelling(message=reason))
        now = client.read_flow_run(flow_run_id).state
        return FlowRunCancel(flow_run_id, _state_name(state), _state_name(now))


def _state_name(state: Any) -> str:
    return "" if state is None else str(state.name or state.type.value)
