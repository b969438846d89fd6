"""Runs for provider tests, played by the simulate flow's round loop under the open call gate.

These tests are about wire formats and faults, not about the ``llm:<provider>`` gate. The
``simulate`` flow installs a gate backed by the Prefect server's limits, so an active
``llm:anthropic`` limit on a shared server (another user's) would make each call wait for a
slot: on a SQLite server two simultaneous asks are answered about 1.9 s apart, longer than the
1 s rounds of the fault tests. Here a flow of the tests plans, claims and opens the run through
the library and plays its rounds with ``flows.simulate.play_rounds`` (the simulate flow's own
loop, statuses and tasks) while :func:`glossogen.concurrency.install_gate` ``(None)`` is in
force, whatever the server's limits. The gate is tested in ``tests/orchestration/test_limits.py``.
"""

from __future__ import annotations

import asyncio

from prefect import flow

from flows.simulate import play_rounds
from glossogen.concurrency import install_gate
from glossogen.launch import RunRequest, RunResult, claim_run, open_session, plan_run


@flow(name="simulate-ungated", flow_run_name="{request.scenario}")
async def _simulate_ungated(request: RunRequest) -> RunResult:
    """The simulate flow's body without its gate (credentials are the test's business)."""
    plan = plan_run(request)
    claimed = claim_run(plan, request.runs_dir)
    return await play_rounds(plan, claimed, open_session(plan, claimed))


def play_ungated(request: RunRequest) -> RunResult:
    """Play ``request`` to its end with every model call ungated; return how it ended.

    Needs a Prefect API (the round loop's tasks report to it): use the ``prefect_api`` fixture.
    """
    previous = install_gate(None)
    try:
        return asyncio.run(_simulate_ungated(request))
    finally:
        install_gate(previous)
