"""Tasks of the export flow: select runs, write one table, write the legend, write the raw zip.

The selected runs are plain records (live data, not ids), so no task keeps Prefect's result
cache (the task policy of :func:`orchestration.glossogen_task`): hashing them is wasted work and
an export must re-read runs that changed anyway. Only the writes do I/O worth retrying.
"""

from __future__ import annotations

from glossogen.export import (
    ExportPlan,
    ExportRunsRequest,
    RunRecord,
    plan_export,
    write_legend,
    write_table,
)
from glossogen.storage import join
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
def write_one_table(
    records: list[RunRecord],
    name: str,
    out: str,
    repeat_run_columns: bool,
    include_metric_summaries: bool,
) -> tuple[int, dict[str, int]]:
    """Write ``<out>/<name>.csv``; return its rows and per-column coverage."""
    return write_table(
        records,
        name,
        out,
        repeat_run_columns=repeat_run_columns,
        include_metric_summaries=include_metric_summaries,
    )


@glossogen_task(name="write_legend", retries=2)
def write_columns_legend(
    coverages: dict[str, dict[str, int]], records: list[RunRecord], out: str
) -> None:
    """Write ``<out>/columns.csv`` for the tables written."""
    write_legend(coverages, records, out)


@glossogen_task(name="write_raw_zip", retries=1)
def write_raw(records: list[RunRecord], out: str, include_logs: bool, include_atif: bool) -> int:
    """Write ``<out>/runs.zip`` (the run folders); return the runs archived."""
    from glossogen.export import publish, write_raw_zip

    with publish(join(out, "runs.zip")) as f:
        result = write_raw_zip(records, f, include_logs=include_logs, include_atif=include_atif)
    return int(result.runs)
