"""The task of the derived-run flows: prepare the new run's folder from the source run's log."""

from __future__ import annotations

from glossogen.derive import ForkRequest, PreparedFork, prepare_fork
from glossogen.launch import derived_run_check
from orchestration import glossogen_task


@glossogen_task(name="prepare_derived_run", once_per_flow_run=True)
def prepare_derived_run(request: ForkRequest) -> PreparedFork:
    """Check the derived run as a launch is, then claim its folder and write its log prefix.

    The folder gets ``lineage.json``, ``config.json`` and the log up to the boundary. Once per
    flow run: a retry of a crashed derived flow run continues the folder it prepared.
    """
    return prepare_fork(request, check=derived_run_check(request.scenario))
