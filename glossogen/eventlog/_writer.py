"""Append-only writer of a run's event log (JSONL, one event per line, UTF-8).

Each event is written and flushed (one ``write`` system call). Locally the log file is opened
once in append mode, and the file is fsync'd at every :meth:`EventLogWriter.round_boundary`
and at :meth:`EventLogWriter.close`. A killed process loses at most the line being written (the
reader ignores a truncated last line); a power loss loses at most what was written since the
last round boundary.

S3 has no append. The writer keeps the log in a local spool file (in the temp directory, named
``glossogen-spool-*.jsonl``) and uploads the whole spool to the log's URL, as one atomic put,
at every round boundary and at close. Readers always see a complete prefix of the log, ending
at a round boundary. **A crash loses, on S3, everything appended since the last round
boundary**; a killed process leaves its spool file behind in the temp directory, complete up to
the last event, so that tail can be recovered by hand on the same machine (a lost machine loses
it). The upload costs one put of the whole log per round (a few MB at most).

Each upload is conditional: the first one of a new log is create-only (``If-None-Match: *``),
every later one carries ``If-Match`` the ETag of the log this writer read or last uploaded. An
upload onto a log another writer shipped meanwhile is refused
(:class:`~glossogen.storage.WriteConflictError`, exit 75), so no writer's events overwrite
another's; the refused writer's log stays in its spool file, named in the error.
"""

from __future__ import annotations

import os
import tempfile
import threading
from types import TracebackType
from typing import Any

from glossogen.eventlog._events import Event
from glossogen.storage import (
    StorageError,
    WriteConflictError,
    is_local,
    open_fs,
    put_if_unchanged,
    read_with_etag,
    translate_errors,
)


class EventLogWriter:
    """Append events to the log at ``url``; resumes (appends to) an existing log.

    A log whose last line was cut mid-write (a killed writer) has that fragment moved to
    ``<log>.torn`` (appended, so nothing written is lost) and cut from the log before anything
    is appended, so every line of the log stays valid JSON.

    Not for two writers at once on the same log. Thread-safe for one writer shared by threads.

    Args:
        url: Local path or fsspec URL (``s3://bucket/runs/demo/17/demo.jsonl``) of the log.
        storage_options: Passed to :func:`glossogen.storage.open_fs`.

    Attributes:
        url: The log's URL.
        count: Events (lines) appended by this writer; lines already in a resumed log are not
            counted.

    On S3 the log object appears at the first :meth:`round_boundary` (or :meth:`close`).

    Raises:
        StorageError: if the storage is unreachable or refuses access, or the bucket is missing.
    """

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.count = 0
        self._lock = threading.Lock()
        self._closed = False
        self._fs, self._path = open_fs(url, **(storage_options or {}))
        self._local = is_local(self._fs)
        self._dirty = False
        self._uploaded = False
        self._etag: str | None = None
        """ETag of the remote log as this writer last read or wrote it (None: no log yet)."""
        if self._local:
            self._spool = ""
            with translate_errors(url):
                os.makedirs(os.path.dirname(self._path), exist_ok=True)
                if os.path.exists(self._path) and not _ends_with_newline(self._path):
                    _set_aside_torn_tail(self._path)
                self._file = open(self._path, "ab")
            return
        existing = self._download()
        fd, self._spool = tempfile.mkstemp(prefix="glossogen-spool-", suffix=".jsonl")
        self._file = os.fdopen(fd, "wb")
        if existing and not existing.endswith(b"\n"):
            cut = existing.rfind(b"\n") + 1
            with translate_errors(self.url, self._fs):
                self._fs.pipe_file(f"{self._path}.torn", existing[cut:])
            existing = existing[:cut]
            self._dirty = True
        if existing:
            self._uploaded = True
            self._file.write(existing)

    def _download(self) -> bytes:
        try:
            found = read_with_etag(self.url)  # a missing bucket: StorageError
        except FileNotFoundError:
            return b""
        if found is None:
            return b""
        data, self._etag = found
        return data

    def append(self, event: Event) -> None:
        """Append one event (``event.model_dump_json()`` and a newline), flushed to the file.

        Raises:
            ValueError: if the writer is closed.
            OSError: if the local disk refuses the write (earlier lines stay readable).
        """
        self._write((event.model_dump_json() + "\n").encode())

    def append_line(self, line: str) -> None:
        """Append one already-serialised line (without its newline) as is.

        Raises:
            ValueError: if ``line`` contains a newline or the writer is closed.
        """
        if "\n" in line:
            raise ValueError("an event log line cannot contain a newline")
        self._write((line + "\n").encode())

    def _write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                raise ValueError(f"event log writer is closed: {self.url}")
            self._file.write(data)
            self._file.flush()
            self._dirty = True
            self.count += 1

    def round_boundary(self) -> None:
        """Make everything appended so far durable: fsync locally, upload the spool on S3.

        Raises:
            ValueError: if the writer is closed.
            StorageError: if the upload fails; the spool is kept and the next call retries.
        """
        with self._lock:
            if self._closed:
                raise ValueError(f"event log writer is closed: {self.url}")
            self._sync()

    def _sync(self) -> None:
        self._file.flush()
        if self._local:
            os.fsync(self._file.fileno())
        elif self._dirty or not self._uploaded:
            try:
                with open(self._spool, "rb") as spool:
                    data = spool.read()
                self._etag = put_if_unchanged(self.url, data, self._etag)
            except WriteConflictError as exc:
                raise WriteConflictError(
                    f"{exc}; not overwritten (this writer's log kept at {self._spool})"
                ) from None
            except StorageError as exc:
                raise StorageError(f"{exc} (unsent log kept at {self._spool})") from exc
        self._dirty = False
        self._uploaded = True

    def close(self) -> None:
        """Make the log durable and complete (fsync / final upload) and release the file.

        Idempotent. On S3 the spool file is deleted once uploaded.

        Raises:
            StorageError: if the final upload fails; the writer stays open so ``close`` can be
                called again, and the error names the spool file that holds the log.
        """
        with self._lock:
            if self._closed:
                return
            self._sync()
            self._file.close()
            self._closed = True
            if not self._local:
                os.unlink(self._spool)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has completed."""
        return self._closed

    def __enter__(self) -> EventLogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _ends_with_newline(path: str) -> bool:
    """True for an empty file or one whose last byte is a newline."""
    with open(path, "rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _set_aside_torn_tail(path: str) -> None:
    """Move the unterminated last line of ``path`` to ``<path>.torn`` and cut it from the log."""
    with open(path, "r+b") as f:
        data = f.read()
        cut = data.rfind(b"\n") + 1
        with open(f"{path}.torn", "ab") as torn:
            torn.write(data[cut:] + b"\n")
            torn.flush()
            os.fsync(torn.fileno())
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
