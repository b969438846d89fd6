"""The Prefect edge for deployments: which ones a worker serves, and creating their flow runs.

Shared by the sweep (``simulate-<provider>`` and ``resume-<provider>``) and reconcile
(``resume-<provider>``): a deployment counts as served when it exists, has a work pool, and
that pool has a worker online. Only a configured Prefect server (``PREFECT_API_URL``) can have
workers; a temporary server has none.
"""

from __future__ import annotations

from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun, WorkerStatus
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.settings import get_current_settings


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


async def create_flow_run(
    name: str, parameters: dict[str, Any], idempotency_key: str, **options: Any
) -> FlowRun:
    """Create a flow run of deployment ``name`` and return at once (it plays on a worker).

    ``idempotency_key`` makes a second call with the same key return the first flow run, so a
    launcher that runs twice never pays twice.

    Raises:
        ObjectNotFound: no such deployment.
    """
    flow_run: FlowRun = await run_deployment(  # type: ignore[misc]  # sync-or-async in its stub
        name=name,
        parameters=parameters,
        idempotency_key=idempotency_key,
        timeout=0,
        **options,
    )
    return flow_run
