"""The export flow: check and select (``plan_export``), write each table as a task, the legend.

The flow takes the one request value, an :class:`~glossogen.export.ExportRunsRequest` (the
value the CLI and MCP export), checked once by the library. The ``nightly-export`` deployment
passes it as its ``request`` parameter (``runs_dir`` and ``out``: the default tables of every
run, straight to object storage). A deployment made before the flow took the request passes
the request's fields loose (``runs_dir``, ``out``, ...): they are read as that request, so an
older nightly deployment keeps exporting. Publishes a table artifact with the rows written per
table.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_table_artifact

from glossogen.export import ExportRefused, ExportRunsRequest
from tasks.export import select, write_columns_legend, write_one_table, write_raw


def request_of(request: ExportRunsRequest | None, fields: dict[str, Any]) -> ExportRunsRequest:
    """The export's request: ``request``, or the loose fields an older deployment passes.

    Raises:
        ValueError: both or neither given, or no ``out`` (one line naming them).
        pydantic.ValidationError: a loose field the request does not take, or of a bad type.
    """
    if request is not None and fields:
        raise ValueError(
            f"export takes request or, as an older deployment passes them, the request's "
            f"fields, not both: got request and {', '.join(sorted(fields))}"
        )
    if request is None and not fields:
        raise ValueError("export takes request (an ExportRunsRequest: runs_dir, out, ...)")
    request = request or ExportRunsRequest.model_validate(fields)
    if request.out is None:
        raise ValueError("export writes to request.out: give it a folder or an fsspec URL")
    return request


@flow(name="export")
async def export(request: ExportRunsRequest | None = None, **fields: Any) -> dict[str, int]:
    """Export the runs ``request`` selects to its ``out`` (a folder or an fsspec URL).

    Args:
        request: The export (:class:`~glossogen.export.ExportRunsRequest`; a dict of its
            fields as a deployment passes it).
        **fields: An older deployment's parameters, the request's fields loose (``runs_dir``,
            ``out``, ``selection``, ``frames``, ...): read as that request.

    Returns:
        Rows written per table.

    Raises:
        SelectionError: a bad selection (knob condition, over ``max_runs``, missing ids).
        RunsDirError: ``runs_dir`` does not exist or is not a folder.
        ValueError: an unknown table name, or a local ``out`` that is (or lies under) a file
            (the refusal of :func:`~glossogen.export.plan_export`, raised as the error it
            refused), or the request given both ways, or neither.
    """
    request = request_of(request, fields)
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
