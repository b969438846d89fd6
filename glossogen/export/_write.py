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
import os
import tempfile
from collections.abc import Iterator
from typing import IO

import polars as pl

from glossogen.export._cells import safe_text
from glossogen.export._frames import default_frames
from glossogen.export._selection import RunRecord
from glossogen.export._tables import LOG_FRAMES, check_frames, coverage, legend
from glossogen.storage import is_local, join, nearest_existing, open_fs, translate_errors


def _what(path: str) -> str:
    return "a file, not a folder" if os.path.isfile(path) else "not a folder"


def check_out(out: str) -> None:
    """Check, before anything is written, that the tables can be written under ``out``.

    Locally ``out`` must be a folder or creatable: no file at ``out`` or at a parent on the
    way, and the nearest existing folder writable. An object-store URL has no folders to
    check; its writes report their own errors.

    Raises:
        ValueError: one line naming ``out`` and what is wrong.
    """
    fs, path = open_fs(out)
    if not is_local(fs):
        return
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{out!r} is {_what(path)}")
    probe = nearest_existing(path)
    if not os.path.isdir(probe):
        raise ValueError(f"{out!r}: {probe} is {_what(probe)}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{out!r}: {probe} is not writable")


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


def csv_bytes(frame: pl.DataFrame, header: bool = True) -> bytes:
    """Return ``frame`` as CSV bytes (UTF-8, ``,``, ``"`` quoting, costs unrounded)."""
    buf = io.BytesIO()
    frame.write_csv(buf, include_header=header)
    return buf.getvalue()


def write_table(
    records: list[RunRecord],
    name: str,
    out: str,
    *,
    repeat_run_columns: bool = True,
    include_metric_summaries: bool = False,
) -> tuple[int, dict[str, int]]:
    """Write one table to ``<out>/<name>.csv`` and return its rows and column coverage.

    The event-log tables are streamed one run at a time (memory does not grow with the
    selection); the default tables are built in memory (one row per run, round or agent).

    Returns:
        Data rows written, and per column the distinct runs filling it (for the legend).

    Raises:
        ValueError: for an unknown table name.
        StorageError: if ``out`` is unreachable.
    """
    (name,) = check_frames([name])
    target = join(out, f"{name}.csv")
    if name in LOG_FRAMES:
        from glossogen.export._logtables import write_log_tables

        return write_log_tables([name], records, out, repeat_run_columns=repeat_run_columns)[name]
    frames = default_frames(records, [name], None, repeat_run_columns, include_metric_summaries)
    frame = safe_text(frames[name])
    with publish(target) as f:
        f.write(csv_bytes(frame))
    return frame.height, coverage(frame)


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
) -> dict[str, int]:
    """Write the requested tables under ``out`` and return the rows written per table.

    One table is written as ``<out>/<table>.csv``; two or more add ``<out>/columns.csv``.

    Args:
        records: The selected runs.
        frames: Table names among :data:`FRAMES`.
        out: A local folder or fsspec URL (created as needed).
        repeat_run_columns: Copy run context onto round, agent and message rows.
        include_metric_summaries: Add metric units, summaries and notes.

    Returns:
        Table name to data rows written (``columns.csv`` not counted).

    Raises:
        ValueError: for an unknown table name.
        StorageError: if ``out`` is unreachable.
    """
    names = check_frames(frames)
    counts: dict[str, int] = {}
    coverages: dict[str, dict[str, int]] = {}
    logged: dict[str, tuple[int, dict[str, int]]] = {}
    if any(n in LOG_FRAMES for n in names):  # both event-log tables from one read of each log
        from glossogen.export._logtables import write_log_tables

        logged = write_log_tables(
            [n for n in names if n in LOG_FRAMES], records, out,
            repeat_run_columns=repeat_run_columns,
        )  # fmt: skip
    for name in names:
        if name in logged:
            counts[name], coverages[name] = logged[name]
            continue
        counts[name], coverages[name] = write_table(
            records,
            name,
            out,
            repeat_run_columns=repeat_run_columns,
            include_metric_summaries=include_metric_summaries,
        )
    if len(names) > 1:
        write_legend(coverages, records, out)
    return counts


__all__ = [
    "check_out",
    "csv_bytes",
    "publish",
    "write_legend",
    "write_table",
    "write_tables",
]
