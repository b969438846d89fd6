"""Runs store over fsspec: file systems, the runs directory, and a run folder as a value."""

from glossogen.storage._folder import (
    CONFIG,
    FLOW_RUN,
    LABELS,
    LINEAGE,
    FolderFile,
    RunBusyError,
    RunFolder,
)
from glossogen.storage._fs import (
    StorageError,
    WriteConflictError,
    absolute,
    is_local,
    join,
    nearest_existing,
    open_fs,
    open_mapped,
    path_kind,
    put_if_unchanged,
    read_with_etag,
    translate_errors,
    write_bytes_atomic,
)
from glossogen.storage._lease import (
    DEFAULT_LEASE_SECONDS,
    LEASE_NAME,
    LEASE_SECONDS_ENV,
    LeaseSettingError,
    WriterLease,
    lease_seconds,
)
from glossogen.storage._lock import LOCK_NAME, RunLock
from glossogen.storage._store import MAX_CLAIM_ATTEMPTS, RunStore

__all__ = [
    "CONFIG",
    "FLOW_RUN",
    "FolderFile",
    "DEFAULT_LEASE_SECONDS",
    "LeaseSettingError",
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
    "open_mapped",
    "path_kind",
    "put_if_unchanged",
    "read_with_etag",
    "translate_errors",
    "write_bytes_atomic",
]
