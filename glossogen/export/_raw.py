"""The raw zip: the selected run folders, nested ``{scenario}/{run_dir}/``, plus ``manifest.csv``.

Members are streamed: each file is copied into ``ZipFile.open(name, "w", force_zip64=True)`` in
chunks, so no size is declared up front and a log that grows while it is read is archived up to
where the read stopped, with a size and CRC that match what was written. Local folders and
fsspec URLs (S3) read alike.

Left out of every zip: ``stream.json`` and ``eval_in_progress.json`` (work in flight: a run
re-imported with them reads as still running), the writer's lock files and the temporary files of
atomic writes. Left out unless ``include_logs``: ``_debug.jsonl`` and ``*_stdout.log``. With
``include_atif`` each run gains ``atif/<agent_id>.json`` built from its event log (a stored
``atif/`` folder is then left out, so the fresh trajectories are the only ones).
"""

from __future__ import annotations

import csv
import io
import posixpath
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from glossogen.storage import RunFolder

RAW_ZIP_MAX_BYTES = 4 * 1024**3
"""The raw ceiling: 4 GiB of run folders, uncompressed, estimated before the build."""

CHUNK_BYTES = 1024 * 1024
"""How much of a file is copied into the archive at a time (bytes)."""

ALWAYS_LEFT_OUT = frozenset({"stream.json", "eval_in_progress.json", ".writer.lock", ".lock"})
"""File names never archived: work in flight and lock files."""

MANIFEST_COLUMNS = (
    "run_id",
    "scenario",
    "run_dir",
    "files",
    "bytes",
    "left_out",
    "atif_trajectories",
    "atif_error",
)
"""Columns of ``manifest.csv``, one row per run in selection order."""


class RawZipTooLarge(ValueError):
    """The selected run folders are over the raw ceiling; the message names it and what to do."""


@dataclass
class RawZipResult:
    """What went into a raw zip.

    Attributes:
        runs: Runs archived.
        files: Members written, ``manifest.csv`` and ATIF files included.
        bytes: Uncompressed bytes of the run files and ATIF files written.
        manifest: The manifest rows, keyed by :data:`MANIFEST_COLUMNS`.
    """

    runs: int = 0
    files: int = 0
    bytes: int = 0
    manifest: list[dict[str, Any]] = field(default_factory=list)


def _folder(record: Any) -> RunFolder:
    """The run folder of a selection record (its ``run_url``), or ``record`` itself."""
    if isinstance(record, RunFolder):
        return record
    url = getattr(record, "run_url", None)
    if not isinstance(url, str):
        raise TypeError(f"a run record needs a run_url: {record!r}")
    return RunFolder.at(url)


def _left_out(rel: str, include_logs: bool, include_atif: bool) -> bool:
    name = posixpath.basename(rel)
    if name in ALWAYS_LEFT_OUT or (name.startswith(".") and name.endswith(".tmp")):
        return True
    if include_atif and rel.startswith("atif/"):
        return True
    return not include_logs and (name == "_debug.jsonl" or name.endswith("_stdout.log"))


def estimate_raw_bytes(records: Iterable[Any], *, include_logs: bool = False) -> int:
    """Sum the sizes of the files a raw zip of ``records`` would archive (bytes, uncompressed).

    Args:
        records: Selection records (``run_id`` and ``run_url``) or :class:`RunFolder` items.
        include_logs: Count debug and stdout logs too.

    Returns:
        The folders' bytes on disk, without ATIF files (built later, small next to the logs).

    Raises:
        FileNotFoundError: a run folder does not exist.
        StorageError: the storage is unreachable.
    """
    total = 0
    for record in records:
        files = _folder(record).files()
        total += sum(f.size for f in files if not _left_out(f.name, include_logs, False))
    return total


def check_raw_size(estimated: int, max_bytes: int = RAW_ZIP_MAX_BYTES) -> None:
    """Refuse an estimate over the raw ceiling with a message naming it and what to change.

    Raises:
        RawZipTooLarge: ``estimated`` is above ``max_bytes``.
    """
    if estimated > max_bytes:
        raise RawZipTooLarge(
            f"raw zip refused: the selected run folders hold {_size(estimated)}, over the "
            f"{_size(max_bytes)} raw zip ceiling; select fewer runs"
            " or leave out the debug and stdout logs"
        )


def _size(n: int) -> str:
    if n >= 1024**3 and n % 1024**3 == 0:
        return f"{n // 1024**3} GiB"
    if n >= 1024**3:
        return f"{n / 1024**3:.2f} GiB"
    if n >= 1024**2:
        return f"{n / 1024**2:.1f} MiB"
    return f"{n} bytes"


def _copy(folder: RunFolder, name: str, zf: zipfile.ZipFile, member: str, chunk: int) -> int:
    """Stream one file into the archive; return the bytes copied (read until end of file)."""
    copied = 0
    with zf.open(member, "w", force_zip64=True) as dst:
        for block in folder.read_chunks(name, chunk):
            dst.write(block)
            copied += len(block)
    return copied


def _write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    with zf.open(name, "w", force_zip64=True) as dst:
        dst.write(data)


def write_raw_zip(
    records: Iterable[Any],
    dest: str | IO[bytes],
    *,
    include_logs: bool = False,
    include_atif: bool = False,
    max_bytes: int = RAW_ZIP_MAX_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
) -> RawZipResult:
    """Write the run folders of ``records`` as one zip, with ``manifest.csv`` at its root.

    The folders' size is estimated first (:func:`estimate_raw_bytes`) and the build refused
    above ``max_bytes``, before anything is written. Each run lands under
    ``{scenario}/{run_dir}/``; files are streamed (deflated) in ``chunk_bytes`` pieces.

    Args:
        records: Selection records (``run_id`` and ``run_url``) or :class:`RunFolder` items, in
            the order the manifest lists them.
        dest: A local file path, or a writable binary file object (left open).
        include_logs: Keep ``_debug.jsonl`` and ``*_stdout.log``.
        include_atif: Add ``atif/<agent_id>.json`` per run (see :func:`build_trajectories`).
            A run whose trajectories cannot be built keeps its files; its manifest row says why.
        max_bytes: The raw ceiling (default 4 GiB).
        chunk_bytes: Copy size (bytes).

    Returns:
        Counts and the manifest rows.

    Raises:
        RawZipTooLarge: the folders are over ``max_bytes`` (nothing written).
        FileNotFoundError: a run folder does not exist.
        StorageError: the storage is unreachable.
    """
    folders = [_folder(r) for r in records]
    listed = [(f, f.files()) for f in folders]
    check_raw_size(
        sum(
            f.size
            for _, files in listed
            for f in files
            if not _left_out(f.name, include_logs, False)
        ),
        max_bytes,
    )
    result = RawZipResult()
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for folder, files in listed:
            scenario, _, run_dir = folder.run_id.partition("/")
            prefix = f"{scenario}/{run_dir}/"
            row: dict[str, Any] = {
                "run_id": folder.run_id,
                "scenario": scenario,
                "run_dir": run_dir,
            }
            written = size = 0
            left_out = []
            for file in files:
                if _left_out(file.name, include_logs, include_atif):
                    left_out.append(file.name)
                    continue
                size += _copy(folder, file.name, zf, prefix + file.name, chunk_bytes)
                written += 1
            row["atif_trajectories"], row["atif_error"] = "", ""
            if include_atif:
                from glossogen.export._atif import build_trajectories, trajectory_json

                try:
                    trajectories = build_trajectories(folder.url)
                except (OSError, ValueError) as exc:  # a damaged run keeps its files
                    row["atif_error"] = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                else:
                    for agent_id, trajectory in trajectories.items():
                        data = trajectory_json(trajectory)
                        _write(zf, f"{prefix}atif/{agent_id}.json", data)
                        written += 1
                        size += len(data)
                    row["atif_trajectories"] = len(trajectories)
            row.update(files=written, bytes=size, left_out=";".join(left_out))
            result.manifest.append(row)
            result.runs += 1
            result.files += written
            result.bytes += size
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=MANIFEST_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(result.manifest)
        _write(zf, "manifest.csv", buffer.getvalue().encode())
        result.files += 1
    return result


__all__ = [
    "ALWAYS_LEFT_OUT",
    "CHUNK_BYTES",
    "MANIFEST_COLUMNS",
    "RAW_ZIP_MAX_BYTES",
    "RawZipResult",
    "RawZipTooLarge",
    "check_raw_size",
    "estimate_raw_bytes",
    "write_raw_zip",
]
