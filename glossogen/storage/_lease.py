"""The writer lease of a run folder on object storage (S3): who writes its log, until when.

S3 has no ``flock``. A process that writes a run folder holds ``<folder>/.writer.lease``, a
small JSON object: its ``owner`` (``pid <pid> on <host>``), a random ``token`` and
``expires_at`` (Unix seconds). The rules:

- **Take**: a create-only put (``If-None-Match: *``). When the object exists and its
  ``expires_at`` has not passed, the folder is busy (:class:`RunBusyError`, exit 75, naming the
  holder). When it has passed (the holder was killed, or released it), or its holder ran on
  this host and its pid is gone (killed: no need to wait out the lease), it is taken over
  with a put carrying ``If-Match: <the ETag read>``: of two processes taking over one stale
  lease, exactly one put lands.
- **Renew**: while the run plays, a daemon thread puts the lease again every third of its
  length, each put ``If-Match`` the ETag of the last one; a refused renewal means another
  process took the lease over (this one was stalled past its expiry), and the lease is marked
  lost.
- **Release**: a last ``If-Match`` put with ``expires_at`` now, so the next taker need not wait.

The lease length is the setting ``GLOSSOGEN_WRITER_LEASE_SECONDS`` (default
:data:`DEFAULT_LEASE_SECONDS`); a killed writer blocks its run that long at most. moto's S3
server and AWS S3 both honour ``If-Match`` and ``If-None-Match: *`` on PutObject.
Expiry is compared against the taker's clock (``now``, injectable), so hosts whose clocks
disagree by more than a fraction of the lease length should not share a run.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from glossogen.storage._fs import (
    StorageError,
    WriteConflictError,
    put_if_unchanged,
    read_with_etag,
)

LEASE_NAME = ".writer.lease"
"""Object in a remote run folder naming the process that writes the run and until when."""

LEASE_SECONDS_ENV = "GLOSSOGEN_WRITER_LEASE_SECONDS"
"""Environment variable holding the lease length, seconds (a number above 0)."""

DEFAULT_LEASE_SECONDS = 60.0
"""Lease length when :data:`LEASE_SECONDS_ENV` is unset, seconds."""


class RunBusyError(Exception):
    """Another live process writes the run (exit 75: try again later); one line naming it."""

    exit_code = 75


class LeaseSettingError(ValueError):
    """:data:`LEASE_SECONDS_ENV` is not a number of seconds above 0: bad input (exit 64, usage).

    Commands check it (:func:`lease_seconds`) before anything is written.
    """

    exit_code = 64


def lease_seconds() -> float:
    """The lease length in force: :data:`LEASE_SECONDS_ENV`, else :data:`DEFAULT_LEASE_SECONDS`.

    Raises:
        LeaseSettingError: the variable is not a finite number of seconds above 0; one line
            naming the value.
    """
    raw = os.environ.get(LEASE_SECONDS_ENV, "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise LeaseSettingError(
            f"{LEASE_SECONDS_ENV} must be a number of seconds above 0, got {raw!r}"
        )
    return value


def _stamp(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _holder(lease: dict[str, Any]) -> str:
    return str(lease.get("owner") or "an unnamed process")


def _expiry(lease: dict[str, Any]) -> float:
    """The lease's ``expires_at``; 0 (long expired) when it is missing or not a number."""
    value = lease.get("expires_at")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


def _holder_gone(lease: dict[str, Any]) -> bool:
    """True when the lease's holder ran on this host and its process no longer exists."""
    pid = lease.get("pid")
    if lease.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def _stale(lease: dict[str, Any], now: float) -> bool:
    """Whether a lease may be taken over: released, expired, or its same-host holder is dead."""
    return lease.get("released") is True or _expiry(lease) <= now or _holder_gone(lease)


def _busy(folder_url: str, lease: dict[str, Any]) -> RunBusyError:
    return RunBusyError(
        f"run {folder_url} is being written by another live process "
        f"({_holder(lease)}; its lease runs to {_stamp(_expiry(lease))})"
    )


class WriterLease:
    """The lease on one remote run folder, held by this process (see the module's rules).

    Args:
        folder_url: The run folder's URL (``s3://bucket/runs/<scenario>/<ts>``).
        seconds: Lease length; default :func:`lease_seconds`.
        now: Clock of expiry (Unix seconds); the system clock unless a test injects one.
        renew: Start the renewal thread once taken (a probe or a test may not).

    Attributes:
        owner: How this process is named to others (``pid <pid> on <host>``).
        taken_over_from: The owner of the stale lease this one replaced, or None.
        lost: Why the lease is no longer this process's (a renewal was refused), or None.

    Raises:
        RunBusyError: another process holds an unexpired lease (exit 75), named with its expiry.
        StorageError: the storage is unreachable.
        LeaseSettingError: the lease length setting is invalid (64).
    """

    def __init__(
        self,
        folder_url: str,
        seconds: float | None = None,
        now: Callable[[], float] = time.time,
        renew: bool = True,
    ) -> None:
        self.url = f"{folder_url.rstrip('/')}/{LEASE_NAME}"
        self.folder_url = folder_url.rstrip("/")
        self.seconds = lease_seconds() if seconds is None else seconds
        self.owner = f"pid {os.getpid()} on {socket.gethostname()}"
        self.token = uuid.uuid4().hex
        self.taken_over_from: str | None = None
        self.lost: str | None = None
        self._now = now
        self._etag = self._take()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if renew:
            self._thread = threading.Thread(
                target=self._renew_loop, name=f"lease {self.folder_url}", daemon=True
            )
            self._thread.start()

    def _body(self, expires_at: float, released: bool = False) -> bytes:
        body: dict[str, Any] = {
            "owner": self.owner,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "token": self.token,
            "expires_at": round(expires_at, 3),
            "lease_seconds": self.seconds,
        }
        if released:
            body["released"] = True
        return json.dumps(body, sort_keys=True).encode()

    def _take(self) -> str:
        try:
            return put_if_unchanged(self.url, self._body(self._now() + self.seconds), None)
        except WriteConflictError:
            pass
        current = read_lease(self.url)
        if current is None:  # released and gone between the two calls: create again, once
            try:
                return put_if_unchanged(self.url, self._body(self._now() + self.seconds), None)
            except WriteConflictError:
                current = read_lease(self.url)
                if current is None:
                    raise StorageError(f"{self.url} keeps appearing and vanishing") from None
        lease, etag = current
        if not _stale(lease, self._now()):
            raise _busy(self.folder_url, lease)
        try:
            new_etag = put_if_unchanged(self.url, self._body(self._now() + self.seconds), etag)
        except WriteConflictError:
            again = read_lease(self.url)
            raise _busy(self.folder_url, again[0] if again else lease) from None
        if not lease.get("released"):
            self.taken_over_from = _holder(lease)
        return new_etag

    def renew(self) -> None:
        """Extend the lease to ``now + seconds``.

        Raises:
            RunBusyError: the lease was taken over by another process (it is marked lost).
            StorageError: the storage is unreachable (the lease stays this process's until
                it expires; the next renewal retries).
        """
        if self.lost is not None:
            raise RunBusyError(self.lost)
        try:
            self._etag = put_if_unchanged(
                self.url, self._body(self._now() + self.seconds), self._etag
            )
        except WriteConflictError:
            current = read_lease(self.url)
            holder = _holder(current[0]) if current else "nobody"
            self.lost = f"the writer lease on {self.folder_url} was taken over by {holder}"
            raise RunBusyError(self.lost) from None

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.renew()
            except RunBusyError:
                return
            except StorageError:
                continue  # unreachable for now: the next tick retries before the lease ends

    def release(self) -> None:
        """Stop renewing and mark the lease expired now, so the next taker need not wait.

        Idempotent; a lease already lost is left to its new holder. A release that cannot
        reach the storage leaves the lease to expire on its own.
        """
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        if self.lost is not None or not self._etag:
            return
        try:
            put_if_unchanged(self.url, self._body(self._now(), released=True), self._etag)
        except StorageError:
            pass  # taken over meanwhile, or unreachable: either way it is not ours to mark
        self._etag = ""


def read_lease(url: str) -> tuple[dict[str, Any], str] | None:
    """Return the lease object at ``url`` and its ETag, or None when there is none.

    A lease that is not a JSON object reads as expired (``{}``), so it can be taken over.

    Raises:
        StorageError: the storage is unreachable.
    """
    found = read_with_etag(url)
    if found is None:
        return None
    data, etag = found
    try:
        lease = json.loads(data)
    except ValueError:
        lease = {}
    return (lease if isinstance(lease, dict) else {}), etag


def probe_lease(folder_url: str, now: Callable[[], float] = time.time) -> None:
    """Refuse a remote folder whose lease another process holds; writes nothing.

    Raises:
        RunBusyError: an unexpired lease names another holder (exit 75).
        StorageError: the storage is unreachable.
    """
    url = f"{folder_url.rstrip('/')}/{LEASE_NAME}"
    current = read_lease(url)
    if current is None:
        return
    lease, _ = current
    if not _stale(lease, now()):
        raise _busy(folder_url.rstrip("/"), lease)
