"""The export flow: check and select (``plan_export``), write each table as a task, the legend.

The flow's parameters are an :class:`~glossogen.export.ExportRunsRequest`'s fields, built into
that one value and checked once by the library (the CLI and MCP take the same value).

Scheduled by the ``nightly-export`` deployment (``runs_dir`` and ``out`` only, the default
tables of every run, straight to object storage). Publishes a table artifact with the rows
written per table.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_table_artifact

from glossogen.export import MAX_RUNS, ExportRefused, ExportRunsRequest
from tasks.export import select, write_columns_legend, write_one_table, write_raw


@flow(name="export")
async def export(
    runs_dir: str,
    out: str,
    selection: dict[str, Any] | None = None,
    frames: list[str] | None = None,
    raw: bool = False,
    include_logs: bool = False,
    include_atif: bool = False,
    repeat_run_columns: bool = True,
    include_metric_summaries: bool = False,
    max_runs: int = MAX_RUNS,
) -> dict[str, int]:
    """Export the selected runs of ``runs_dir`` to ``out`` (a folder or an fsspec URL).

    Args:
        runs_dir: The runs directory (local path or fsspec URL).
        out: Where the tables go (created as needed).
        selection: ``{"kind": "run_ids", ...}`` or ``{"kind": "filters", ...}``; None for all.
        frames: Tables to write; None for ``run_level``, ``round_level``, ``agent_level``.
        raw: Also write ``runs.zip``.
        include_logs: Keep debug and stdout logs in the zip.
        include_atif: Add each agent's ATIF trajectory to the zip.
        repeat_run_columns: Copy run context onto round, agent and message rows.
        include_metric_summaries: Add metric units, summaries and notes.
        max_runs: Ceiling on selected runs.

    Returns:
        Rows written per table.

    Raises:
        SelectionError: a bad selection (knob condition, over ``max_runs``, missing ids).
        RunsDirError: ``runs_dir`` does not exist or is not a folder.
        ValueError: an unknown table name, or a local ``out`` that is (or lies under) a file
            (the refusal of :func:`~glossogen.export.plan_export`, raised as the error it
            refused).
    """
    request = ExportRunsRequest.model_validate({
        "runs_dir": runs_dir, "out": out, "selection": selection, "frames": frames, "raw": raw,
        "include_logs": include_logs, "include_atif": include_atif, "max_runs": max_runs,
        "repeat_run_columns": repeat_run_columns,
        "include_metric_summaries": include_metric_summaries,
    })  # fmt: skip
    try:
        plan = select(request)
    except ExportRefused as exc:  # the library's own error, as the flow always raised it
        raise (exc.cause or exc) from None
    records, names = plan.records, plan.names
    counts: dict[str, int] = {}
    coverages: dict[str, dict[str, int]] = {}
    for name in names:
        counts[name], coverages[name] = write_one_table(
            records, name, out, repeat_run_columns, include_metric_summaries
        )
    if len(names) > 1:
        write_columns_legend(coverages, records, out)
    if raw:
        write_raw(records, out, include_logs, include_atif)
    get_run_logger().info("exported %d runs to %s: %s", len(records), out, counts)
    await acreate_table_artifact(
        key="export-row-counts",
        table=[{"table": f"{n}.csv", "rows": counts[n]} for n in names],
        description=f"{len(records)} runs from {runs_dir} exported to {out}",
    )
    return counts
