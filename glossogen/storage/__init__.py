"""Runs store over fsspec: file systems, the runs directory, and a run folder as a value."""

from glossogen.storage._folder import (
    CONFIG,
    LABELS,
    LINEAGE,
    LOCK_NAME,
    FolderFile,
    RunBusyError,
    RunFolder,
    RunLock,
)
from glossogen.storage._fs import (
    StorageError,
    absolute,
    is_local,
    join,
    nearest_existing,
    open_fs,
    open_mapped,
    path_kind,
    translate_errors,
    write_bytes_atomic,
)
from glossogen.storage._store import MAX_CLAIM_ATTEMPTS, RunStore

__all__ = [
    "CONFIG",
    "FolderFile",
    "LABELS",
    "LINEAGE",
    "LOCK_NAME",
    "MAX_CLAIM_ATTEMPTS",
    "RunBusyError",
    "RunFolder",
    "RunLock",
    "RunStore",
    "StorageError",
    "absolute",
    "is_local",
    "join",
    "nearest_existing",
    "open_fs",
    "open_mapped",
    "path_kind",
    "translate_errors",
    "write_bytes_atomic",
]
