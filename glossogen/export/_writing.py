"""Writing a checked export: each table, the legend, the raw zip, to a folder or URL.

:func:`write_export` writes an :class:`~glossogen.export._runs.ExportPlan` to the request's
``out`` or to the folder its caller hands it (REST builds a download in a temporary folder,
then sends it); the export flow writes the same parts one task each
(:func:`write_export_table`, :func:`write_export_raw`). :func:`export_runs` is
:func:`~glossogen.export._runs.plan_export` then :func:`write_export`: what the CLI and MCP
call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from glossogen import exit_codes
from glossogen.export._runs import ExportPlan, ExportRefused, ExportRunsRequest, plan_export
from glossogen.refusals import Refusal
from glossogen.storage import StorageError


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: the runs, the rows per table, the files, the columns filled."""

    out: str
    runs: int
    rows: dict[str, int]
    files: list[str]
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per table, each column's non-empty cells."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """The runs the selection skipped as unreadable: run id to why (its file by its path)."""


def write_export_table(plan: ExportPlan, name: str, out: str) -> tuple[int, dict[str, int]]:
    """Write the plan's table ``name`` to ``<out>/<name>.csv``; return its rows and coverage.

    Streamed (:func:`~glossogen.export.write_table`) unless the request picks columns or
    metrics: then built whole with its picks (:func:`~glossogen.export.build_frames`).

    Raises:
        StorageError: if ``out`` is unreachable.
    """
    from glossogen.export._tables import build_frames, coverage
    from glossogen.export._write import csv_bytes, publish, write_table
    from glossogen.storage import join

    request = plan.request
    if not request.picks:
        return write_table(plan.records, name, out, repeat_run_columns=request.repeat_run_columns,
                           include_metric_summaries=request.include_metric_summaries)  # fmt: skip
    (frame,) = build_frames(
        plan.records, [name], columns=request.columns, metrics=request.metrics,
        repeat_run_columns=request.repeat_run_columns,
        include_metric_summaries=request.include_metric_summaries,
    ).values()  # fmt: skip
    with publish(join(out, f"{name}.csv")) as f:
        f.write(csv_bytes(frame))
    return frame.height, coverage(frame)


def write_export_raw(plan: ExportPlan, out: str) -> str:
    """Write the plan's raw zip as ``<out>/runs.zip``; return its URL.

    The zip alone (``tables`` off) of one run always carries its ATIF trajectories.

    Raises:
        StorageError: if ``out`` is unreachable.
    """
    from glossogen.export._write import write_raw_export

    request = plan.request
    alone = not request.tables and len(plan.records) == 1
    return write_raw_export(plan.records, out, include_logs=request.include_logs,
                            include_atif=request.include_atif or alone,
                            max_bytes=request.max_raw_bytes)  # fmt: skip


def write_export(plan: ExportPlan, out: str | None = None) -> ExportResult:
    """Write the plan's tables, the legend (two tables or more) and, asked, the raw zip.

    Args:
        plan: A plan of :func:`plan_export`.
        out: The folder or URL to write to; None for the request's ``out``.

    Raises:
        ExportRefused: 64 with no folder to write to; 69 for unreachable storage or a write
            failing after the checks (disk full, a race), 66 for a run file gone since it was
            selected, 65 for a run file that cannot be read.
    """
    request = plan.request
    out = out if out is not None else request.out
    if out is None:
        said = Refusal(field="out", reason="names no folder: nothing to write to", colon=True)
        raise ExportRefused(said.worded(), exit_codes.USAGE, "out", said)
    try:
        return _written(plan, out)
    except StorageError as exc:
        raise ExportRefused(str(exc), exit_codes.TRANSPORT, cause=exc) from exc
    except FileNotFoundError as exc:
        line = f"not found: {exc.filename or exc}"
        raise ExportRefused(line, exit_codes.UNREADABLE, cause=exc) from exc
    except OSError as exc:
        line = f"cannot write to {out}: {exc}"
        raise ExportRefused(line, exit_codes.TRANSPORT, cause=exc) from exc
    except ValueError as exc:
        raise ExportRefused(str(exc).splitlines()[0], exit_codes.REFUSED, cause=exc) from exc


def _written(plan: ExportPlan, out: str) -> ExportResult:
    """Write the plan under ``out`` (the library's errors raised as they come)."""
    from glossogen.export._write import write_legend, write_tables
    from glossogen.storage import join

    request, names = plan.request, plan.names
    files = [join(out, f"{n}.csv") for n in names]
    coverage: dict[str, dict[str, int]] = {}
    rows: dict[str, int] = {}
    if names and not request.picks:  # both event-log tables from one read of each log
        rows = write_tables(
            plan.records, names, out, repeat_run_columns=request.repeat_run_columns,
            include_metric_summaries=request.include_metric_summaries, filled=coverage,
        )  # fmt: skip
    elif names:
        for name in names:
            rows[name], coverage[name] = write_export_table(plan, name, out)
        if len(names) > 1:
            write_legend(coverage, plan.records, out)
    if len(names) > 1:
        files.append(join(out, "columns.csv"))
    if request.raw:
        files.append(write_export_raw(plan, out))
    return ExportResult(out=out, runs=len(plan.records), rows=rows, files=files,
                        coverage=coverage, unreadable=plan.selected.unreadable)  # fmt: skip


def export_runs(request: ExportRunsRequest) -> ExportResult:
    """Check ``request`` (:func:`plan_export`) and write its export (:func:`write_export`).

    Raises:
        ExportRefused: see :func:`plan_export` and :func:`write_export`.
    """
    return write_export(plan_export(request))
