"""The task of the derived-run flows: prepare the new run's folder from the source run's log."""

from __future__ import annotations

from glossogen.derive import ForkRequest, PreparedFork, prepare_fork
from glossogen.launch import derived_run_check
from glossogen.replay import replayed_rounds
from orchestration import glossogen_task


@glossogen_task(name="prepare_derived_run", once_per_flow_run=True)
def prepare_derived_run(request: ForkRequest) -> PreparedFork:
    """Check the derived run as a launch is, then claim its folder and write its log prefix.

    The folder gets ``lineage.json``, ``config.json`` and the log up to the boundary. Once per
    flow run: a retry of a crashed derived flow run continues the folder it prepared. With
    ``request.replay`` the source's rounds 1..N are played again from its tape first
    (``glossogen.replay.replayed_rounds``), as the CLI and MCP do.
    """
    return prepare_fork(
        request, check=derived_run_check(request.scenario), replay_check=replayed_rounds
    )
