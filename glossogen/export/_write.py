"""Writing the export's CSV tables to a local folder or an object-store URL.

One table is written as a bare CSV; two or more as one CSV each plus ``columns.csv``.
Writing goes through fsspec, so ``out`` may be a local folder or an object-store URL
(``s3://bucket/prefix``; endpoint from ``AWS_ENDPOINT_URL``). polars writes S3 with its own
client and options, not fsspec's, so the CSV bytes are produced by polars and stored by fsspec:
one storage path for everything glossogen writes. A file is first written under a temporary
name (locally) or a local temporary file (remotely) and only then published, so a failure
never leaves a truncated table under its final name.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

import polars as pl

from glossogen.export._cells import safe_text
from glossogen.export._frames import BATCH_RUNS, default_batches, default_schema
from glossogen.export._record import RunRecord
from glossogen.export._tables import (
    CALL_FRAME,
    LOG_FRAMES,
    call_level,
    check_frames,
    coverage,
    legend,
)
from glossogen.refusals import Refusal, path_not_text
from glossogen.storage import is_local, join, nearest_existing, open_fs, translate_errors

_log = logging.getLogger("glossogen.export")

_NAMED_RUNS = 5
"""Runs named one by one in a note of values written blank; more are counted."""


def _what(path: str) -> str:
    return "a file, not a folder" if os.path.isfile(path) else "not a folder"


class OutRefused(ValueError):
    """An ``out`` refused: the line from its value on (``'x' is a file, not a folder``).

    Attributes:
        refusal: The refusal as data (field ``out``): a surface names the field its own way
            (``--out``; MCP's ``out``), a server quotes the path as sent.
    """

    def __init__(self, refusal: Refusal) -> None:
        """Keep the refusal; the line is its wording without the field's name."""
        super().__init__(refusal.worded({"out": ""}).lstrip())
        self.refusal = refusal


def check_out(out: str) -> None:
    """Check, before anything is written, that the tables can be written under ``out``.

    ``out`` must be UTF-8 text (:func:`~glossogen.refusals.path_not_text`). Locally it must be
    a folder or creatable: no file at ``out`` or at a parent on the way, and the nearest
    existing folder writable. An object-store URL has no folders to
    check; its writes report their own errors.

    Raises:
        OutRefused: one line naming ``out`` and what is wrong.
    """
    if not out:  # would be the current folder: name a folder
        raise OutRefused(Refusal(field="out", value="''", reason="names no folder"))
    refused = path_not_text("out", out)  # a byte that is not UTF-8: the CLI's --out $'\xff'
    if refused is not None:  # the library's check of every path field, before any folder
        raise OutRefused(refused)
    fs, path = open_fs(out)
    if not is_local(fs):
        return
    path = os.path.abspath(path)
    given = repr(out)
    if os.path.exists(path) and not os.path.isdir(path):
        why = f"is {_what(path)}"
        raise OutRefused(Refusal(field="out", value=given, reason=why, runs_on=True))
    probe = nearest_existing(path)  # a folder of the path as given: quoted as sent too
    if not os.path.isdir(probe):
        why = f"{probe} is {_what(probe)}"
        raise OutRefused(Refusal(field="out", value=given, reason=why, sent=(probe,)))
    if not os.access(probe, os.W_OK | os.X_OK):
        why = f"{probe} is not writable"
        raise OutRefused(Refusal(field="out", value=given, reason=why, sent=(probe,)))


@contextlib.contextmanager
def publish(url: str) -> Iterator[IO[bytes]]:
    """Yield a binary file whose bytes appear at ``url`` only if the block succeeds.

    Locally: a temporary file beside the target, renamed over it. Remotely: a temporary file
    under ``TMPDIR``, uploaded in one put at the end.

    Raises:
        StorageError: if the storage is unreachable.
    """
    fs, path = open_fs(url)
    with translate_errors(url, fs):
        if is_local(fs):
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.")
        else:
            fd, tmp = tempfile.mkstemp(suffix=".csv")
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            if is_local(fs):
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary only
                os.replace(tmp, path)
            else:
                fs.put_file(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _blank_unfinite(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each number that is not finite blank, each column's runs noted.

    A report's NaN or infinity, or text where a number goes (read as NaN), is written as a
    blank cell, never ``NaN`` or ``inf``, and a warning (the CLI's note) names the column and
    the runs, as the analysis counts such a value as missing.
    """
    floats = [c for c, t in frame.schema.items() if t in (pl.Float32, pl.Float64)]
    blanked = []
    for column in floats:
        bad = ~pl.col(column).is_finite()
        if not frame.select(bad.any()).item():
            continue
        runs = (frame.filter(bad).get_column("run_id").unique(maintain_order=True).to_list()
                if "run_id" in frame.columns else [])  # fmt: skip
        named = ", ".join(runs[:_NAMED_RUNS]) + (
            f" and {len(runs) - _NAMED_RUNS} more" if len(runs) > _NAMED_RUNS else ""
        )
        _log.warning("%s: a value that is not a finite number (text, NaN or infinite) written "
                     "blank%s", column, f" for {named}" if named else "")  # fmt: skip
        blanked.append(pl.when(bad).then(None).otherwise(pl.col(column)).alias(column))
    return frame.with_columns(blanked) if blanked else frame


def csv_bytes(frame: pl.DataFrame, header: bool = True) -> bytes:
    """Return ``frame`` as CSV bytes (UTF-8, ``,``, ``"`` quoting, costs unrounded).

    A number that is not finite is a blank cell, with a note (:func:`_blank_unfinite`).
    """
    frame = _blank_unfinite(frame)
    buf = io.BytesIO()
    frame.write_csv(buf, include_header=header)
    return buf.getvalue()


def stream_tables(
    columns: dict[str, list[str]], batches: Iterable[dict[str, pl.DataFrame]], out: str
) -> dict[str, tuple[int, dict[str, int]]]:
    """Write tables batch by batch to ``<out>/<name>.csv``: the header, then each batch appended.

    ``columns`` gives each table's header (known before any row); every batch maps a table
    to a frame of those columns holding whole runs, already spreadsheet-safe. A table's file
    appears only once its last batch is written (:func:`publish`).

    Returns:
        Per table: rows written, and per column the distinct runs filling it (batches hold
        whole runs, so each batch's :func:`coverage` adds up).

    Raises:
        StorageError: if ``out`` is unreachable.
    """
    filled = {n: dict.fromkeys(cols, 0) for n, cols in columns.items()}
    rows = dict.fromkeys(columns, 0)
    with contextlib.ExitStack() as stack:
        files = {n: stack.enter_context(publish(join(out, f"{n}.csv"))) for n in columns}
        for name, cols in columns.items():
            files[name].write(csv_bytes(pl.DataFrame(schema=dict.fromkeys(cols, pl.String))))
        for frames in batches:
            for name, frame in frames.items():
                if frame.height == 0:
                    continue
                rows[name] += frame.height
                for col, runs in coverage(frame).items():
                    filled[name][col] += runs
                files[name].write(csv_bytes(frame, header=False))
    return {n: (rows[n], filled[n]) for n in columns}


def write_default_tables(
    names: list[str],
    records: list[RunRecord],
    out: str,
    *,
    repeat_run_columns: bool = True,
    include_metric_summaries: bool = False,
    batch_runs: int = BATCH_RUNS,
) -> dict[str, tuple[int, dict[str, int]]]:
    """Stream the default tables ``names`` to ``<out>/<name>.csv`` in batches of runs.

    A first pass over the records fixes each table's columns and cell types
    (:func:`~glossogen.export._frames.default_schema`); then ``batch_runs`` runs at a time
    are built into frames and appended under the header, so memory holds one batch of rows,
    not the selection's, and the bytes are those of the table built whole.

    Returns:
        Per table: rows written, and the per-column coverage.

    Raises:
        ValueError: for ``batch_runs`` below 1.
        StorageError: if ``out`` is unreachable.
    """
    schema = default_schema(records, names, None, repeat_run_columns, include_metric_summaries)
    columns = {n: schema.columns(n) for n in schema.own}
    batches = default_batches(schema, records, batch_runs)
    return stream_tables(columns, ({n: safe_text(f) for n, f in b.items()} for b in batches), out)


def write_call_level(
    records: list[RunRecord], out: str, repeat_run_columns: bool = True
) -> tuple[int, dict[str, int]]:
    """Write ``<out>/call_level.csv`` (built whole: a row per request is a few numbers).

    Returns:
        Data rows written, and the per-column coverage.

    Raises:
        StorageError: if ``out`` is unreachable.
    """
    frame = safe_text(call_level(records, repeat_run_columns))
    with publish(join(out, f"{CALL_FRAME}.csv")) as f:
        f.write(csv_bytes(frame))
    return frame.height, coverage(frame)


def write_table(
    records: list[RunRecord],
    name: str,
    out: str,
    *,
    repeat_run_columns: bool = True,
    include_metric_summaries: bool = False,
    batch_runs: int = BATCH_RUNS,
) -> tuple[int, dict[str, int]]:
    """Write one table to ``<out>/<name>.csv`` and return its rows and column coverage.

    Every table is streamed: the event-log tables one run's log at a time, the default tables
    ``batch_runs`` runs at a time (:func:`write_default_tables`); memory holds one batch, not
    the selection's rows.

    Returns:
        Data rows written, and per column the distinct runs filling it (for the legend).

    Raises:
        ValueError: for an unknown table name, or ``batch_runs`` below 1.
        StorageError: if ``out`` is unreachable.
    """
    (name,) = check_frames([name])
    if name == CALL_FRAME:
        return write_call_level(records, out, repeat_run_columns)
    if name in LOG_FRAMES:
        from glossogen.export._logtables import write_log_tables

        return write_log_tables([name], records, out, repeat_run_columns=repeat_run_columns)[name]
    return write_default_tables(
        [name], records, out,
        repeat_run_columns=repeat_run_columns,
        include_metric_summaries=include_metric_summaries,
        batch_runs=batch_runs,
    )[name]  # fmt: skip


def write_legend(coverages: dict[str, dict[str, int]], records: list[RunRecord], out: str) -> None:
    """Write ``<out>/columns.csv`` from each written table's coverage (see :func:`legend`)."""
    with publish(join(out, "columns.csv")) as f:
        f.write(csv_bytes(legend(dict(coverages), records)))


def write_tables(
    records: list[RunRecord],
    frames: list[str],
    out: str,
    *,
    repeat_run_columns: bool = True,
    include_metric_summaries: bool = False,
    batch_runs: int = BATCH_RUNS,
    filled: dict[str, dict[str, int]] | None = None,
) -> dict[str, int]:
    """Write the requested tables under ``out`` and return the rows written per table.

    One table is written as ``<out>/<table>.csv``; two or more add ``<out>/columns.csv``.
    Every table streams: the event-log tables read one log at a time (both from one read of
    it), the default tables are built ``batch_runs`` runs at a time (all of them from one
    pass), so memory holds one batch of rows whatever the selection's size.

    Args:
        records: The selected runs.
        frames: Table names among :data:`FRAMES`.
        out: A local folder or fsspec URL (created as needed).
        repeat_run_columns: Copy run context onto round, agent and message rows.
        include_metric_summaries: Add metric units, summaries and notes.
        batch_runs: Runs per batch of the default tables (:data:`BATCH_RUNS`); the bytes
            written do not depend on it.
        filled: Given, filled with each table's columns and the runs with a cell in each
            (what the legend reports).

    Returns:
        Table name to data rows written (``columns.csv`` not counted).

    Raises:
        ValueError: for an unknown table name, or ``batch_runs`` below 1.
        StorageError: if ``out`` is unreachable.
    """
    names = check_frames(frames)
    written: dict[str, tuple[int, dict[str, int]]] = {}
    if CALL_FRAME in names:
        written[CALL_FRAME] = write_call_level(records, out, repeat_run_columns)
    if any(n not in LOG_FRAMES and n != CALL_FRAME for n in names):
        written |= write_default_tables(
            [n for n in names if n not in LOG_FRAMES and n != CALL_FRAME], records, out,
            repeat_run_columns=repeat_run_columns,
            include_metric_summaries=include_metric_summaries,
            batch_runs=batch_runs,
        )  # fmt: skip
    if any(n in LOG_FRAMES for n in names):  # both event-log tables from one read of each log
        from glossogen.export._logtables import write_log_tables

        written |= write_log_tables(
            [n for n in names if n in LOG_FRAMES], records, out,
            repeat_run_columns=repeat_run_columns,
        )  # fmt: skip
    coverages = {n: written[n][1] for n in names}
    if len(names) > 1:
        write_legend(coverages, records, out)
    if filled is not None:
        filled |= coverages
    return {n: written[n][0] for n in names}


RAW_ZIP = "runs.zip"
"""The raw zip's file name under an export's ``out``."""


def write_raw_export(
    records: list[RunRecord],
    out: str,
    *,
    include_logs: bool = False,
    include_atif: bool = False,
    max_bytes: int | None = None,
) -> str:
    """Write the raw zip of ``records`` as ``<out>/runs.zip`` (all or nothing); return its URL.

    The CLI's ``export --raw`` and MCP's ``export_runs(raw=True)``; each checks the raw ceiling
    (``check_raw_size``) before it writes any table. ``max_bytes``: the raw ceiling (None for
    ``RAW_ZIP_MAX_BYTES``).

    Raises:
        RawZipTooLarge: the folders are over the raw ceiling (nothing written).
        StorageError: if ``out`` is unreachable.
    """
    from glossogen.export._raw import RAW_ZIP_MAX_BYTES, write_raw_zip

    url = join(out, RAW_ZIP)
    with publish(url) as f:
        write_raw_zip(records, f, include_logs=include_logs, include_atif=include_atif,
                      max_bytes=max_bytes or RAW_ZIP_MAX_BYTES)  # fmt: skip
    return url


__all__ = [
    "BATCH_RUNS",
    "RAW_ZIP",
    "OutRefused",
    "check_out",
    "csv_bytes",
    "publish",
    "stream_tables",
    "write_call_level",
    "write_default_tables",
    "write_legend",
    "write_raw_export",
    "write_table",
    "write_tables",
]
