"""The export endpoints: ``POST /api/g/{slug}/runs/export/preview``, ``/csv`` and ``/raw``.

All three take one body, :class:`ExportRequest`: the selection as a tagged union (explicit run
ids or filters, never a mix) plus the table, column and metric picks, so the preview describes
exactly what a download produces. Fields a route does not use are ignored by it. Each route
only translates: the body (with the group and the server's ceilings) into the library's
:class:`~glossogen.export.ExportRunsRequest`, planned by ``plan_export`` (``survey_export`` for
the preview) and written by ``write_export`` into a temporary folder, then sent; a refusal,
:class:`~glossogen.export.ExportRefused`, into its HTTP status and fields (:func:`refused`). The
CLI and MCP plan and write the same request, so every surface refuses with the same line.

Group: ``{slug}`` names a group of runs, the ``group_slug`` a run recorded in
``simulation_started`` (``local`` when it recorded none, GlossoGen 0.5 runs included). Each route
sees only its group's runs: filters select within the group, and an explicit id of a run in
another group is treated as one that does not resolve.

Errors (JSON ``{"detail": {...}}``, every one naming what to change):

- 404: an explicit run id that no longer resolves (``field`` ``run_ids``, ``missing_run_ids``),
  as the analysis routes refuse it, or one naming a run that cannot be read (``field``
  ``run_ids``, ``unreadable_runs``: ``runs that cannot be read: veyru/<ts>: veyru/<ts>/labels.json
  is not UTF-8 text (...)``, as the CLI's exit 66); the preview lists such ids instead of
  refusing (``missing_run_ids``, ``unreadable_runs``);
- 413: past a ceiling (``limit`` is ``max_runs``, ``raw_zip_bytes`` or ``csv_bytes``, with
  its ``value``);
- 422: a knob condition that is malformed or cannot be read as the recorded type (``field``
  ``knob``), an unknown table, an empty name, a table named twice or an empty ``frames``
  list (``frames``), ``columns`` or ``metrics`` naming what the selection's tables do not
  hold (``columns``/``metrics``; the preview lists it under ``refusals`` instead), an empty
  ``run_ids`` list (``run_ids needs a run id ...``: ``export._selection.check_run_ids``);
  ``/raw`` refuses these as ``/csv`` does;
- 503: the runs directory cannot be read (missing, not a folder, unreachable); a refusal names
  it as the server's runs directory, never by its path (the client did not give one).

A body the library refuses on more than one value (``plan_export`` gathers each: the options,
the tables, the selection) is answered with the first as ``field``/``message`` and each under
``errors``, as a body its schema refuses (:func:`refused`).

A filter that matches no run is not an error, as on the command line: the preview counts 0
runs, ``/csv`` answers header-only tables and ``/raw`` a zip holding only ``manifest.csv``.

The export is written into a temporary folder under ``TMPDIR``; the CSV ceiling is counted
while the download (the one table, or the zip of tables) is written there, and checked before
the first byte is sent: a refusal is a plain 413, never a truncated body (a table cut
mid-stream would look like a complete one). The raw zip is built there too; the folder is
deleted once sent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from typing import IO, Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict
from starlette.background import BackgroundTask

from glossogen.export import (
    DEFAULT_GROUP,
    ExportPlan,
    ExportRefused,
    ExportRunsRequest,
    RunsMissing,
    RunsUnreadable,
    Selection,
    SelectionError,
    available_columns,
    plan_export,
    served_line,
    survey_export,
    write_export,
)
from glossogen.export._select import without_runs_dir

_CHUNK = 1024 * 1024

MAX_RUNS_NAMED = "it on the command line (`glossogen export --max-runs`)"
"""How a REST refusal names ``max_runs``: the server's ceiling, raised only on the command line
(the line ends ``narrow the selection or raise it on the command line ...``)."""

router = APIRouter(prefix="/api/g/{slug}/runs/export", tags=["export"])


class ExportRequest(BaseModel):
    """The body of every export route.

    Attributes:
        selection: ``{"kind": "run_ids", "run_ids": [...]}`` or ``{"kind": "filters",
            "scenario", "labels", "run_id_contains", "status", "contains_agent_id", "knob"}``.
        frames: Tables to write (default ``run_level``, ``round_level``, ``agent_level``).
        columns: Non-metric columns to keep (``run_id``, ``scenario_name`` and each table's
            keys always stay); None keeps every column.
        metrics: Metrics whose columns to keep; None keeps every metric.
        repeat_run_columns: Copy the run context onto round, agent and message rows.
        include_metric_summaries: Add each metric's unit, summary and notes.
        include_logs: Raw zip: keep debug and stdout logs.
        include_atif: Raw zip: add ``atif/<agent_id>.json`` per run (always for one run).
    """

    model_config = ConfigDict(extra="forbid")
    selection: Selection
    frames: list[str] | None = None
    columns: list[str] | None = None
    metrics: list[str] | None = None
    repeat_run_columns: bool = True
    include_metric_summaries: bool = False
    include_logs: bool = False
    include_atif: bool = False


class CsvTooLarge(ValueError):
    """The CSV download passed its ceiling while being written."""


class _CountedWriter:
    """A write-only binary stream that counts bytes and refuses past ``limit``."""

    def __init__(self, sink: IO[bytes], limit: int) -> None:
        self._sink, self._limit, self.count = sink, limit, 0

    def write(self, data: bytes) -> int:
        self.count += len(data)
        if self.count > self._limit:
            raise CsvTooLarge(self.count)
        return self._sink.write(data)

    def flush(self) -> None:
        self._sink.flush()

    def close(self) -> None:
        """Leave the sink open: the caller owns it (zipfile's stream type asks for close)."""


def export_request(slug: str, body: ExportRequest, request: Request, *, csv: bool = False,
                   raw: bool = False) -> ExportRunsRequest:  # fmt: skip
    """The library's request of a route's body.

    With the group, the server's ceilings, the tables (``csv``) and the raw zip (``raw``) the
    route writes; the preview asks for both. Every route carries the body's tables, columns
    and metrics, so ``/raw`` refuses the body ``/csv`` refuses (one body, one verdict). A group
    no run records is refused (404) as the analysis routes refuse it.
    """
    from glossogen.server._analysis_routes import _check_group  # it imports this module

    _check_group(request, slug)
    settings = request.app.state.settings
    return ExportRunsRequest(
        runs_dir=settings.runs_dir, selection=body.selection, group=slug,
        frames=body.frames, columns=body.columns, metrics=body.metrics,
        repeat_run_columns=body.repeat_run_columns,
        include_metric_summaries=body.include_metric_summaries, max_runs=settings.max_runs,
        tables=csv, raw=raw, include_logs=raw and body.include_logs,
        include_atif=raw and body.include_atif, max_raw_bytes=settings.raw_max_bytes,
    )  # fmt: skip


def refused(exc: ExportRefused, asked: ExportRunsRequest) -> tuple[int, dict[str, Any]]:
    """The HTTP status and ``detail`` of an export's refusal: the library's line, its field.

    404 ids that no longer resolve (``missing_run_ids``), ids naming runs that cannot be read
    (``unreadable_runs``) or a run file gone; 413 a ceiling
    (``limit``, ``value``); 422 a value of the body; 503 an unreadable runs directory. The
    line never names the server's runs directory by its path (:func:`served_line`): the client
    did not give it. The status and detail are the first refusal's; when the library refused
    more than one value of the request (:attr:`~glossogen.export.ExportRefused.also`),
    ``errors`` lists each one's detail, as a body refused by its schema lists each.
    """
    status, detail = _answer(exc, asked)
    if exc.also:
        detail["errors"] = [_answer(each, asked)[1] for each in exc.every]
    return status, detail


def _answer(exc: ExportRefused, asked: ExportRunsRequest) -> tuple[int, dict[str, Any]]:
    """The HTTP status and ``detail`` of one refusal (:func:`refused`)."""
    cause, line = exc.cause, served_line(exc, asked.runs_dir)
    if isinstance(cause, RunsMissing):
        return 404, {"field": "run_ids", "message": line,
                     "missing_run_ids": cause.missing_run_ids}  # fmt: skip
    if isinstance(cause, RunsUnreadable):  # named, so refused as a missing one is
        unreadable = {r: without_runs_dir(why, asked.runs_dir)
                      for r, why in cause.unreadable_runs.items()}  # fmt: skip
        return 404, {"field": "run_ids", "message": line, "unreadable_runs": unreadable}
    if isinstance(cause, SelectionError) and cause.field == "max_runs":
        line = served_line(cause, asked.runs_dir, {"max_runs": MAX_RUNS_NAMED})
        return 413, {"limit": "max_runs", "value": asked.max_runs, "message": line}
    if isinstance(cause, SelectionError):
        return 422, {"field": cause.field, "message": line}
    if exc.field == "raw":
        return 413, {"limit": "raw_zip_bytes", "value": asked.max_raw_bytes, "message": line}
    if exc.field == "runs_dir":
        return 503, {"message": line}
    if exc.field is not None:
        return 422, {"field": exc.field, "message": line}
    status = {66: 404, 69: 503}.get(exc.exit_code, 422)
    return status, {"message": line}


def _planned(asked: ExportRunsRequest) -> ExportPlan:
    """The plan of ``asked``; a refusal as its HTTP answer."""
    try:
        return plan_export(asked)
    except ExportRefused as exc:
        status, detail = refused(exc, asked)
        raise HTTPException(status, detail) from exc


@contextlib.contextmanager
def _written(plan: ExportPlan) -> Iterator[str]:
    """Write the plan into a fresh folder under ``TMPDIR``; remove it when the block fails.

    Raises:
        HTTPException: the write's refusal (a run gone: 404; unreadable storage: 503).
    """
    folder = tempfile.mkdtemp(prefix="glossogen-export-")
    try:
        try:
            write_export(plan, folder)
        except ExportRefused as exc:
            status, detail = refused(exc, plan.request)
            raise HTTPException(status, detail) from exc
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


UNREADABLE_RUNS = "Glossogen-Unreadable-Runs"
"""A download's header counting the selected runs it skipped as unreadable (``0`` for none)."""
UNREADABLE_RUN_IDS = "Glossogen-Unreadable-Run-Ids"
"""A download's header naming the first :data:`IDS_NAMED` runs it skipped, comma-separated."""
IDS_NAMED = 50
"""Run ids the skipped runs' header names at most (a header is no place for thousands)."""


def _skipped(plan: ExportPlan) -> dict[str, str]:
    """The headers of the runs a download skipped as unreadable, as the CLI's notes name them.

    :data:`UNREADABLE_RUNS` counts them; :data:`UNREADABLE_RUN_IDS` names the first
    :data:`IDS_NAMED` (each percent-encoded past ASCII, ``/`` kept) when there are any. Why
    each was skipped is the preview's ``unreadable_runs``.
    """
    skipped = list(plan.selected.unreadable)
    headers = {UNREADABLE_RUNS: str(len(skipped))}
    if skipped:
        named = (quote(run_id, safe="/") for run_id in skipped[:IDS_NAMED])
        headers[UNREADABLE_RUN_IDS] = ", ".join(named)
    return headers


def _send(plan: ExportPlan, folder: str, name: str, media_type: str) -> FileResponse:
    """Send ``<folder>/<name>`` with the skipped runs' headers, the folder removed once sent."""
    return FileResponse(
        os.path.join(folder, name), media_type=media_type, filename=name, headers=_skipped(plan),
        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True),
    )  # fmt: skip


@router.post("/preview")
def preview(slug: str, body: ExportRequest, request: Request) -> dict[str, Any]:
    """Describe what a download of this selection would hold, and the three ceilings.

    Returns:
        ``group``, ``run_count``, ``scenarios``, ``missing_run_ids`` (explicit ids that no
        longer resolve), ``unreadable_runs``, ``runs_without_report``, ``columns`` (per
        column of the default tables: ``table``, ``column``, ``family``, ``unit``,
        ``runs_filled``), ``metrics`` (``name``, ``runs``, ``round_rows``, ``agent_rows``),
        ``damaged_log_lines`` (run id to the numbers of log lines skipped as damaged),
        ``raw_zip_estimated_bytes``, ``limits`` (``max_runs``, ``raw_zip_bytes``,
        ``csv_bytes``) and ``refusals`` (the messages a download would refuse with now:
        ``limit`` ones for a ceiling, ``field`` ones for unknown column or metric picks).

    Raises:
        HTTPException: 422 a bad knob condition or table list, 503 unreadable storage.
    """
    settings = request.app.state.settings
    asked = export_request(slug, body, request, csv=True, raw=True)
    try:
        plan = survey_export(asked)
    except ExportRefused as exc:
        status, detail = refused(exc, asked)
        raise HTTPException(status, detail) from exc
    records = plan.records
    described: dict[str, Any] = {"columns": [], "metrics": [], "runs_without_report": 0}
    if records:
        try:
            described = available_columns(records)
        except OSError as exc:  # never the server's runs directory by its path
            raise HTTPException(503, {"message": served_line(exc, asked.runs_dir)}) from exc
    return {
        "group": slug,
        "run_count": len(records),
        "scenarios": sorted({r.scenario for r in records}),
        "missing_run_ids": plan.selected.missing_run_ids,
        "unreadable_runs": {  # never the server's runs directory by its path
            run_id: without_runs_dir(reason, asked.runs_dir)
            for run_id, reason in plan.selected.unreadable.items()
        },
        "runs_without_report": described["runs_without_report"],
        "columns": described["columns"],
        "metrics": described["metrics"],
        "damaged_log_lines": {
            r.run_id: r.facts.bad_line_numbers for r in records if r.facts.bad_line_numbers
        },
        "raw_zip_estimated_bytes": plan.raw_bytes,
        "limits": {
            "max_runs": settings.max_runs,
            "raw_zip_bytes": settings.raw_max_bytes,
            "csv_bytes": settings.csv_max_bytes,
        },
        "refusals": [
            refused(r, asked)[1]
            for r in plan.refusals
            if not isinstance(r.cause, (RunsMissing, RunsUnreadable))  # listed above
        ],
    }


def _copy(path: str, out: Any) -> None:
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            out.write(chunk)


def _package(folder: str, names: list[str], limit: int) -> str:
    """The download's file in ``folder``: the one table, or ``tables.zip`` of them and the legend.

    The zip is counted against ``limit`` while it is written; the one table by its size.

    Raises:
        CsvTooLarge: the download passed ``limit``.
    """
    if len(names) == 1:
        size = os.path.getsize(os.path.join(folder, f"{names[0]}.csv"))
        if size > limit:
            raise CsvTooLarge(size)
        return f"{names[0]}.csv"
    with open(os.path.join(folder, "tables.zip"), "wb") as sink:
        out = _CountedWriter(sink, limit)
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for table in [*names, "columns"]:
                with zf.open(f"{table}.csv", "w", force_zip64=True) as member:
                    _copy(os.path.join(folder, f"{table}.csv"), member)
    return "tables.zip"


@router.post("/csv")
def export_csv(slug: str, body: ExportRequest, request: Request) -> FileResponse:
    """Download one table as a bare CSV, or two or more as a zip with ``columns.csv``.

    The runs skipped as unreadable are counted and named in the response's headers
    (:data:`UNREADABLE_RUNS`, :data:`UNREADABLE_RUN_IDS`), as the CLI's notes name them.

    Raises:
        HTTPException: 404 missing run ids, 413 over the run or CSV ceiling, 422 a bad knob
            condition, an unknown table, unknown columns or metrics, 503 unreadable storage.
    """
    settings = request.app.state.settings
    plan = _planned(export_request(slug, body, request, csv=True))
    with _written(plan) as folder:
        try:
            name = _package(folder, plan.names, settings.csv_max_bytes)
        except CsvTooLarge as exc:
            mib = settings.csv_max_bytes / 1024**2
            raise HTTPException(
                413,
                {
                    "limit": "csv_bytes",
                    "value": settings.csv_max_bytes,
                    "message": f"CSV refused: the download passed the {mib:g} MiB CSV ceiling "
                    "while being written; pick fewer tables, columns, metrics or runs, turn off "
                    "repeat_run_columns, or export on the command line with `glossogen export` "
                    "(no CSV ceiling)",
                },
            ) from exc
    if len(plan.names) == 1:
        return _send(plan, folder, name, "text/csv; charset=utf-8")
    return _send(plan, folder, name, "application/zip")


@router.post("/raw")
def export_raw(slug: str, body: ExportRequest, request: Request) -> FileResponse:
    """Download ``runs.zip``: the selected run folders and ``manifest.csv``.

    The folders' size is estimated before the build and refused over the raw ceiling. A
    selection of one run always gets its ATIF trajectories. The runs skipped as unreadable
    are in the headers, as ``/csv``'s.

    Raises:
        HTTPException: 404 missing run ids, 413 over the run or raw ceiling, 422 a bad knob
            condition, an unknown table, unknown columns or metrics (as ``/csv``), 503
            unreadable storage.
    """
    plan = _planned(export_request(slug, body, request, raw=True))
    with _written(plan) as folder:
        pass
    return _send(plan, folder, "runs.zip", "application/zip")


__all__ = ["DEFAULT_GROUP", "ExportRequest", "router"]
