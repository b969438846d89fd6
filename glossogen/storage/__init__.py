"""Runs store over fsspec: file systems, the runs directory, and a run folder as a value."""

from glossogen.storage._folder import (
    CONFIG,
    LABELS,
    LINEAGE,
    LOCK_NAME,
    RunBusyError,
    RunFolder,
    RunLock,
)
from glossogen.storage._fs import (
    StorageError,
    WriteConflictError,
    absolute,
    is_local,
    join,
    nearest_existing,
    open_fs,
    put_if_unchanged,
    read_with_etag,
    translate_errors,
    write_bytes_atomic,
)
from glossogen.storage._lease import (
    DEFAULT_LEASE_SECONDS,
    LEASE_NAME,
    LEASE_SECONDS_ENV,
    WriterLease,
    lease_seconds,
)
from glossogen.storage._store import MAX_CLAIM_ATTEMPTS, RunStore

__all__ = [
    "CONFIG",
    "DEFAULT_LEASE_SECONDS",
    "LEASE_NAME",
    "LEASE_SECONDS_ENV",
    "LABELS",
    "LINEAGE",
    "LOCK_NAME",
    "MAX_CLAIM_ATTEMPTS",
    "RunBusyError",
    "RunFolder",
    "RunLock",
    "RunStore",
    "StorageError",
    "WriteConflictError",
    "WriterLease",
    "absolute",
    "is_local",
    "join",
    "lease_seconds",
    "nearest_existing",
    "open_fs",
    "put_if_unchanged",
    "read_with_etag",
    "translate_errors",
    "write_bytes_atomic",
]
