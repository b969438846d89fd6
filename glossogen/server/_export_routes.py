"""The export endpoints: ``POST /api/g/{slug}/runs/export/preview``, ``/csv`` and ``/raw``.

All three take one body, :class:`ExportRequest`: the selection as a tagged union (explicit run
ids or filters, never a mix) plus the table, column and metric picks, so the preview describes
exactly what a download produces. Fields a route does not use are ignored by it.

Group: ``{slug}`` names a group of runs, the ``group_slug`` a run recorded in
``simulation_started`` (``local`` when it recorded none, GlossoGen 0.5 runs included). Each route
sees only its group's runs: filters select within the group, and an explicit id of a run in
another group is treated as one that does not resolve.

Errors (JSON ``{"detail": {...}}``, every one naming what to change):

- 404: an explicit run id that no longer resolves (``missing_run_ids``); the preview lists
  such ids instead of refusing;
- 413: past a ceiling (``limit`` is ``max_runs``, ``raw_zip_bytes`` or ``csv_bytes``, with
  its ``value``);
- 422: a knob condition that is malformed or cannot be read as the recorded type (``field``
  ``knob``), an unknown table or an empty ``frames`` list (``frames``), ``columns`` or
  ``metrics`` naming what the selection's tables do not hold (``columns``/``metrics``; the
  preview lists it under ``refusals`` instead), an empty ``run_ids`` list (pydantic's
  validation answer);
- 503: the runs directory cannot be read (missing, not a folder, unreachable).

A filter that matches no run is not an error, as on the command line: the preview counts 0
runs, ``/csv`` answers header-only tables and ``/raw`` a zip holding only ``manifest.csv``.

The CSV ceiling is counted while the download is written into a temporary file under
``TMPDIR``, and checked before the first byte is sent: a refusal is a plain 413, never a
truncated body (a table cut mid-stream would look like a complete one). The raw zip is built
into a temporary file under ``TMPDIR`` too; each temporary file is deleted once sent.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict
from starlette.background import BackgroundTask

from glossogen.export import (
    RawZipTooLarge,
    RunIdSelection,
    RunRecord,
    RunsDirError,
    Selection,
    SelectionError,
    available_columns,
    build_frames,
    check_frames,
    check_picks,
    check_raw_size,
    csv_bytes,
    estimate_raw_bytes,
    legend,
    select_runs,
    served_line,
    write_raw_zip,
)
from glossogen.export._selection import without_runs_dir
from glossogen.storage import StorageError

DEFAULT_GROUP = "local"
"""The group of a run that recorded no ``group_slug``."""

_CHUNK = 1024 * 1024

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


@dataclass
class _Selected:
    records: list[RunRecord]
    missing_run_ids: list[str]
    unreadable: dict[str, str]


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


def group_of(record: RunRecord) -> str:
    return (record.facts.started or {}).get("group_slug") or DEFAULT_GROUP


def _select(request: Request, slug: str, body: ExportRequest) -> _Selected:
    settings = request.app.state.settings
    try:
        # No ceiling here: the group is applied first, then the ceiling on what remains.
        selected = select_runs(settings.runs_dir, body.selection, max_runs=sys.maxsize)
    except SelectionError as exc:  # never the server's runs directory by its path
        raise HTTPException(422, {"field": exc.field, "message": served_line(exc)}) from exc
    except RunsDirError as exc:
        raise HTTPException(503, {"message": served_line(exc)}) from exc
    except StorageError as exc:
        raise HTTPException(503, {"message": served_line(exc, settings.runs_dir)}) from exc
    records = [r for r in selected.records if group_of(r) == slug]
    missing = set(selected.missing_run_ids)
    if isinstance(body.selection, RunIdSelection):
        missing |= {r.run_id for r in selected.records if group_of(r) != slug}
        order = list(dict.fromkeys(body.selection.run_ids))
    else:
        order = selected.missing_run_ids
    return _Selected(
        records=records,
        missing_run_ids=[i for i in order if i in missing],
        unreadable=selected.unreadable,
    )


def _frames(body: ExportRequest) -> list[str]:
    try:
        return check_frames(body.frames)
    except ValueError as exc:
        raise HTTPException(422, {"field": "frames", "message": str(exc)}) from exc


def _refusals(selected: _Selected, slug: str, max_runs: int) -> None:
    """Refuse a download of missing ids (404) or too many runs (413); no run is no error."""
    if selected.missing_run_ids:
        raise HTTPException(
            404,
            {
                "missing_run_ids": selected.missing_run_ids,
                "message": f"{len(selected.missing_run_ids)} selected run id(s) no longer "
                f"resolve in group {slug!r}: {', '.join(selected.missing_run_ids[:10])}; "
                "drop them from the selection",
            },
        )
    if len(selected.records) > max_runs:
        raise HTTPException(413, _run_ceiling(len(selected.records), max_runs))


def _run_ceiling(count: int, max_runs: int) -> dict[str, Any]:
    return {
        "limit": "max_runs",
        "value": max_runs,
        "message": f"export refused: the selection holds {count} runs, over the {max_runs}-run "
        "limit per export; narrow the selection, or export on the command line with "
        "`glossogen export --max-runs`",
    }


@contextlib.contextmanager
def _reading_runs(runs_dir: str) -> Iterator[None]:
    """Answer 404 for a run deleted while it is read, 503 for unreadable storage.

    The file is named by its path within the runs dir ``runs_dir`` (``veyru/1/veyru.jsonl``),
    never by the server's own path.
    """
    try:
        yield
    except FileNotFoundError as exc:
        line = without_runs_dir(str(exc), runs_dir)
        raise HTTPException(404, {"message": f"{line}; drop it from the selection"}) from exc
    except StorageError as exc:
        raise HTTPException(503, {"message": served_line(exc, runs_dir)}) from exc


def _temp_file(suffix: str) -> tuple[IO[bytes], str]:
    fd, path = tempfile.mkstemp(prefix="glossogen-export-", suffix=suffix)  # under TMPDIR
    return os.fdopen(fd, "wb"), path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _send(path: str, media_type: str, filename: str) -> FileResponse:
    return FileResponse(
        path, media_type=media_type, filename=filename, background=BackgroundTask(_remove, path)
    )


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
    names = _frames(body)
    selected = _select(request, slug, body)
    records = selected.records
    described: dict[str, Any] = {"columns": [], "metrics": [], "runs_without_report": 0}
    with _reading_runs(settings.runs_dir):
        if records:
            described = available_columns(records)
        estimate = estimate_raw_bytes(records, include_logs=body.include_logs)
    refusals = []
    try:
        check_picks(records, names, body.columns, body.metrics, body.repeat_run_columns)
    except SelectionError as exc:
        refusals.append({"field": exc.field, "message": exc.message})
    if len(records) > settings.max_runs:
        refusals.append(_run_ceiling(len(records), settings.max_runs))
    try:
        check_raw_size(estimate, settings.raw_max_bytes)
    except RawZipTooLarge as exc:
        refusals.append(
            {"limit": "raw_zip_bytes", "value": settings.raw_max_bytes, "message": str(exc)}
        )
    return {
        "group": slug,
        "run_count": len(records),
        "scenarios": sorted({r.scenario for r in records}),
        "missing_run_ids": selected.missing_run_ids,
        "unreadable_runs": selected.unreadable,
        "runs_without_report": described["runs_without_report"],
        "columns": described["columns"],
        "metrics": described["metrics"],
        "damaged_log_lines": {
            r.run_id: r.facts.bad_line_numbers for r in records if r.facts.bad_line_numbers
        },
        "raw_zip_estimated_bytes": estimate,
        "limits": {
            "max_runs": settings.max_runs,
            "raw_zip_bytes": settings.raw_max_bytes,
            "csv_bytes": settings.csv_max_bytes,
        },
        "refusals": refusals,
    }


def _write_chunked(out: Any, data: bytes) -> None:
    for start in range(0, len(data), _CHUNK):
        out.write(data[start : start + _CHUNK])


@router.post("/csv")
def export_csv(slug: str, body: ExportRequest, request: Request) -> FileResponse:
    """Download one table as a bare CSV, or two or more as a zip with ``columns.csv``.

    Raises:
        HTTPException: 404 missing run ids, 413 over the run or CSV ceiling, 422 a bad knob
            condition, an unknown table, unknown columns or metrics, 503 unreadable storage.
    """
    settings = request.app.state.settings
    names = _frames(body)
    selected = _select(request, slug, body)
    _refusals(selected, slug, settings.max_runs)
    with _reading_runs(settings.runs_dir):
        try:
            frames = build_frames(
                selected.records,
                names,
                columns=body.columns,
                metrics=body.metrics,
                repeat_run_columns=body.repeat_run_columns,
                include_metric_summaries=body.include_metric_summaries,
            )
        except SelectionError as exc:
            raise HTTPException(422, {"field": exc.field, "message": exc.message}) from exc
    suffix = ".csv" if len(names) == 1 else ".zip"
    sink, path = _temp_file(suffix)
    try:
        with sink:
            out = _CountedWriter(sink, settings.csv_max_bytes)
            if len(names) == 1:
                _write_chunked(out, csv_bytes(frames[names[0]]))
            else:
                with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                    for name, frame in frames.items():
                        with zf.open(f"{name}.csv", "w", force_zip64=True) as member:
                            _write_chunked(member, csv_bytes(frame))
                    table = legend(dict(frames), selected.records)
                    zf.writestr("columns.csv", csv_bytes(table))
    except CsvTooLarge as exc:
        _remove(path)
        mib = settings.csv_max_bytes / 1024**2
        raise HTTPException(
            413,
            {
                "limit": "csv_bytes",
                "value": settings.csv_max_bytes,
                "message": f"CSV refused: the download passed the {mib:g} MiB CSV ceiling while "
                "being written; pick fewer tables, columns, metrics or runs, turn off "
                "repeat_run_columns, or export on the command line with `glossogen export` "
                "(no CSV ceiling)",
            },
        ) from exc
    except BaseException:
        _remove(path)
        raise
    if len(names) == 1:
        return _send(path, "text/csv; charset=utf-8", f"{names[0]}.csv")
    return _send(path, "application/zip", "tables.zip")


@router.post("/raw")
def export_raw(slug: str, body: ExportRequest, request: Request) -> FileResponse:
    """Download ``runs.zip``: the selected run folders and ``manifest.csv``.

    The folders' size is estimated before the build and refused over the raw ceiling. A
    selection of one run always gets its ATIF trajectories.

    Raises:
        HTTPException: 404 missing run ids, 413 over the run or raw ceiling, 422 a bad knob
            condition, 503 unreadable storage.
    """
    settings = request.app.state.settings
    selected = _select(request, slug, body)
    _refusals(selected, slug, settings.max_runs)
    records = selected.records
    sink, path = _temp_file(".zip")
    try:
        with sink, _reading_runs(settings.runs_dir):
            write_raw_zip(
                records,
                sink,
                include_logs=body.include_logs,
                include_atif=body.include_atif or len(records) == 1,
                max_bytes=settings.raw_max_bytes,
            )
    except RawZipTooLarge as exc:
        _remove(path)
        raise HTTPException(
            413, {"limit": "raw_zip_bytes", "value": settings.raw_max_bytes, "message": str(exc)}
        ) from exc
    except BaseException:
        _remove(path)
        raise
    return _send(path, "application/zip", "runs.zip")
