"""Deployable flows of derived runs: fork-at-round and replace-agent (and cross-run swaps).

Each prepares the new run folder from the source run's log (the source is only read), then
plays it as a resumed run in the same flow run (``resume`` as a subflow). The folder is claimed
once per flow run (``tasks/derived.py``): a retry of a crashed derived flow run continues the
folder it prepared.
"""

from __future__ import annotations

from prefect import flow

from flows.simulate import resume
from glossogen.derive import DeriveError, ForkRequest
from glossogen.launch import RunResult
from orchestration.gate import install_call_gate
from tasks.derived import prepare_derived_run


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
