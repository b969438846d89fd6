"""The writer lock of a run folder: one live process writes a run's log at a time.

Locally an advisory ``flock`` on :data:`LOCK_NAME` in the folder, released by the kernel when
its process dies, so a killed writer never leaves a stale lock; the file holds the writer's
pid for the refusal's message. On object storage (S3) a create-only lease object with an owner
and an expiry (:class:`~glossogen.storage._lease.WriterLease`), renewed while the run plays
and taken over only once stale. Taken through :meth:`~glossogen.storage.RunFolder.lock`.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from typing import Protocol

from glossogen.storage._fs import StorageError, is_local, open_fs
from glossogen.storage._lease import RunBusyError, WriterLease, probe_lease

LOCK_NAME = ".writer.lock"
"""File in a local run folder that the writing process holds an exclusive ``flock`` on."""


class _Folder(Protocol):
    """What the lock reads of a :class:`~glossogen.storage.RunFolder`: only its URL."""

    @property
    def url(self) -> str: ...


class RunLock:
    """An exclusive lock on a run folder while a process writes its log.

    Locally an advisory ``flock`` on :data:`LOCK_NAME` (gone with its process). On object
    storage (S3) a :class:`~glossogen.storage._lease.WriterLease`: a create-only lease object
    with an owner and an expiry, renewed while the run plays, taken over only when stale.
    """

    def __init__(
        self, folder: _Folder, record_pid: bool = True, now: Callable[[], float] = time.time
    ) -> None:
        """Take the lock, or raise.

        Args:
            folder: The run folder.
            record_pid: Write this process's pid into the lock file (a writer does; a probe
                that only asks whether the folder is free does not, and creates no file).
            now: The clock a remote lease's expiry is read against (Unix seconds).

        Raises:
            RunBusyError: another live process holds it (exit 75: try again later).
            StorageError: remote storage is unreachable.
        """
        self._fd: int | None = None
        self.lease: WriterLease | None = None
        fs, path = open_fs(folder.url)
        if not is_local(fs):
            if record_pid:
                self.lease = WriterLease(folder.url, now=now)
            else:
                probe_lease(folder.url, now)
            return
        lock_path = os.path.join(path, LOCK_NAME)
        if not record_pid and not os.path.exists(lock_path):
            return  # never locked, so nobody holds it; a probe creates nothing
        try:
            fd = os.open(lock_path, os.O_RDWR | (os.O_CREAT if record_pid else 0), 0o644)
        except FileNotFoundError:
            if not record_pid:
                return
            raise StorageError(f"run folder {folder.url} does not exist") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunBusyError(
                f"run {folder.url} is being written by another live process (pid {holder})"
            ) from None
        if record_pid:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self.lease is not None:
            self.lease.release()
            self.lease = None
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
