"""The export flow: check and select (``plan_export``), write each table as a task, the legend.

The flow takes the one request value, an :class:`~glossogen.export.ExportRunsRequest` (the
value the CLI and MCP export), checked once by the library. The ``nightly-export`` deployment
passes it as its ``request`` parameter (``runs_dir`` and ``out``: the default tables of every
run, straight to object storage). A ``nightly-export`` deployment made before the flow took
the request passes ``runs_dir`` and ``out`` loose: the flow still takes those two, read as
that request, so an older nightly deployment keeps exporting (Prefect refuses any other
parameter the flow does not declare, naming it). Publishes a table artifact with the rows
written per table.
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_table_artifact

from glossogen.export import ExportRefused, ExportRunsRequest
from tasks.export import select, write_columns_legend, write_one_table, write_raw


def request_of(
    request: ExportRunsRequest | None, runs_dir: str | None, out: str | None
) -> ExportRunsRequest:
    """The export's request: ``request``, or an older deployment's ``runs_dir`` and ``out``.

    Raises:
        ValueError: both or neither given, or no ``out`` (one line naming them).
    """
    loose = {k: v for k, v in (("runs_dir", runs_dir), ("out", out)) if v is not None}
    if request is not None and loose:
        raise ValueError(
            f"export takes request or, as an older deployment passes them, runs_dir and out, "
            f"not both: got request and {', '.join(loose)}"
        )
    if request is None and runs_dir is None:
        raise ValueError("export takes request (an ExportRunsRequest: runs_dir, out, ...)")
    request = request or ExportRunsRequest(runs_dir=str(runs_dir), out=out)
    if request.out is None:
        raise ValueError("export writes to request.out: give it a folder or an fsspec URL")
    return request


@flow(name="export")
async def export(
    request: ExportRunsRequest | None = None, runs_dir: str | None = None, out: str | None = None
) -> dict[str, int]:
    """Export the runs ``request`` selects to its ``out`` (a folder or an fsspec URL).

    Args:
        request: The export (:class:`~glossogen.export.ExportRunsRequest`; a dict of its
            fields as a deployment passes it).
        runs_dir: Only for a ``nightly-export`` deployment made before the flow took
            ``request`` (it passes ``runs_dir`` and ``out``): read as the request of the
            default tables of every run under it (``glossogen deploy`` again passes
            ``request``).
        out: With ``runs_dir``, that deployment's ``out``.

    Returns:
        Rows written per table.

    Raises:
        SelectionError: a bad selection (knob condition, over ``max_runs``, missing ids).
        RunsDirError: ``runs_dir`` does not exist or is not a folder.
        ValueError: an unknown table name, or a local ``out`` that is (or lies under) a file
            (the refusal of :func:`~glossogen.export.plan_export`, raised as the error it
            refused), or the request given both ways, or neither.
    """
    request = request_of(request, runs_dir, out)
    try:
        plan = select(request)
    except ExportRefused as exc:  # the library's own error, as the flow always raised it
        raise (exc.cause or exc) from None
    out = str(request.out)
    counts: dict[str, int] = {}
    coverages: dict[str, dict[str, int]] = {}
    for name in plan.names:
        counts[name], coverages[name] = write_one_table(plan, name)
    if len(plan.names) > 1:
        write_columns_legend(coverages, plan.records, out)
    if request.raw:
        write_raw(plan)
    get_run_logger().info("exported %d runs to %s: %s", len(plan.records), out, counts)
    await acreate_table_artifact(
        key="export-row-counts",
        table=[{"table": f"{n}.csv", "rows": counts[n]} for n in plan.names],
        description=f"{len(plan.records)} runs from {request.runs_dir} exported to {out}",
    )
    return counts
