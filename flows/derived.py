"""Deployable flows of derived runs: fork-at-round and replace-agent (and cross-run swaps).

Each prepares the new run folder from the source run's log (the source is only read), then
plays it as a resumed run in the same flow run (``resume`` as a subflow). The folder is claimed
once per flow run: a retry of a crashed derived flow run continues the folder it prepared.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.context import TaskRunContext

from flows.simulate import resume
from glossogen.derive import DeriveError, ForkRequest, PreparedFork, prepare_fork
from glossogen.launch import RunResult, derived_run_check
from tasks.gate import install_call_gate


def _per_flow_run(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    return f"prepare_derived_run-{context.task_run.flow_run_id}"


@task(name="prepare_derived_run", cache_key_fn=_per_flow_run, persist_result=True)
def prepare_derived_run(request: ForkRequest) -> PreparedFork:
    """Check the derived run as a launch is, then claim its folder and write its log prefix.

    The folder gets ``lineage.json``, ``config.json`` and the log up to the boundary.
    """
    return prepare_fork(request, check=derived_run_check(request.scenario))


async def _derive(request: ForkRequest) -> RunResult:
    install_call_gate()
    prepared = prepare_derived_run(request)
    return await resume(run_dir=prepared.folder.url)


@flow(name="fork-at-round", flow_run_name="fork-{request.scenario}")
async def fork_at_round(request: ForkRequest) -> RunResult:
    """Copy rounds 1..``after_round`` of the source run into a new folder and play on.

    Raises:
        DeriveError: a bad source, round or knobs file (the CLI's bad-input cases).
    """
    return await _derive(request)


@flow(name="replace-agent", flow_run_name="replace-{request.scenario}")
async def replace_agent(request: ForkRequest) -> RunResult:
    """Fork after ``after_round`` with ``replaced_agent_id`` on ``model``/``provider``.

    With ``donor_run_dir`` and ``donor_agent_id`` the incoming agent brings its donor-run
    history (cross-run-replace-agent).

    Raises:
        DeriveError: no ``replaced_agent_id``, or the CLI's bad-input cases.
    """
    if not request.replaced_agent_id:
        raise DeriveError("replace-agent needs replaced_agent_id (and model, provider)", 64)
    return await _derive(request)
