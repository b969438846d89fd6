"""Tasks of the export flow: select runs, write one table, write the legend, write the raw zip.

Each task takes the checked plan (:class:`~glossogen.export.ExportPlan`: the request and the
runs it selected) and writes one part of it to the request's ``out`` through the library's
writers (:func:`~glossogen.export.write_export_table`, ``write_export_raw``), the parts
:func:`~glossogen.export.write_export` writes in one call. The selected runs are plain records
(live data, not ids), so no task keeps Prefect's result cache (the task policy of
:func:`orchestration.glossogen_task`): hashing them is wasted work and an export must re-read
runs that changed anyway. Only the writes do I/O worth retrying.
"""

from __future__ import annotations

from glossogen.export import (
    ExportPlan,
    ExportRunsRequest,
    RunRecord,
    plan_export,
    write_export_raw,
    write_export_table,
    write_legend,
)
from orchestration import glossogen_task


@glossogen_task(name="select_runs")
def select(request: ExportRunsRequest) -> ExportPlan:
    """Check every value of ``request`` once and resolve its selection (:func:`plan_export`).

    Raises:
        ExportRefused: a bad selection (knob condition, over ``max_runs``, missing explicit
            run ids), an unknown table, an ``out`` under a file, a runs directory not there.
    """
    return plan_export(request)


@glossogen_task(name="write_table", retries=2, task_run_name="write-{name}")
def write_one_table(plan: ExportPlan, name: str) -> tuple[int, dict[str, int]]:
    """Write ``<out>/<name>.csv`` of the plan; return its rows and per-column coverage."""
    return write_export_table(plan, name, str(plan.request.out))


@glossogen_task(name="write_legend", retries=2)
def write_columns_legend(
    coverages: dict[str, dict[str, int]], records: list[RunRecord], out: str
) -> None:
    """Write ``<out>/columns.csv`` for the tables written."""
    write_legend(coverages, records, out)


@glossogen_task(name="write_raw_zip", retries=1)
def write_raw(plan: ExportPlan) -> str:
    """Write ``<out>/runs.zip`` (the run folders) of the plan; return its URL."""
    return write_export_raw(plan, str(plan.request.out))
