"""File systems under the runs store: open a local path or fsspec URL, join, write atomically.

A local path or an fsspec URL (``s3://bucket/prefix``). On S3 endpoint and credentials come from
the environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...).

Unreachable storage, a missing bucket and refused permissions raise :class:`StorageError`;
a missing file inside a reachable store stays a ``FileNotFoundError``.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import posixpath
import re
import tempfile
from collections.abc import Iterator
from typing import Any, Literal

import fsspec
import orjson
from fsspec.implementations.local import LocalFileSystem

_PASS_THROUGH = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)
_REMOTE_LIBS = {"botocore", "aiobotocore", "aiohttp", "s3fs"}
# A key=value or key: value whose key *starts* a word with a secret-ish name ("NoCredentialsError:"
# does not match, "aws_secret_access_key=..." and "Signature=..." do).
_SECRET_RE = re.compile(
    r"(?i)\b((?:aws_)?(?:secret|token|password|signature|credential)[a-z_]*\s*[=:]\s*)\S+"
)
_USERINFO_RE = re.compile(r"//[^/@\s]+@")


class StorageError(OSError):
    """Storage unusable (unreachable, missing bucket, refused); one line naming the URL."""


def _is_url(url: str) -> bool:
    return "://" in url


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    """Return whether ``fs`` is the local file system (so ``os`` calls apply to its paths)."""
    return isinstance(fs, LocalFileSystem)


_LOCAL: list[fsspec.AbstractFileSystem] = []


def _local_fs() -> fsspec.AbstractFileSystem:
    """The local file system, made once.

    fsspec's own instance cache hashes its arguments on every call, and a cold selection opens
    thousands of local files.
    """
    if not _LOCAL:
        _LOCAL.append(fsspec.filesystem("file"))
    return _LOCAL[0]


def open_fs(url: str, **storage_options: Any) -> tuple[fsspec.AbstractFileSystem, str]:
    """Return the file system holding ``url`` and the path of ``url`` inside it.

    Args:
        url: A local path or an fsspec URL (``s3://bucket/prefix``, ``file:///abs/path``).
        **storage_options: For the file system's constructor; on S3 ``endpoint_url`` defaults
            to ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``.

    Returns:
        ``(fs, path)``: the absolute path for a local path, ``bucket/prefix`` for an S3 URL.

    Raises:
        ValueError: if the URL names a protocol fsspec does not know.
    """
    if not _is_url(url):
        return _local_fs(), os.path.abspath(url)
    protocol = url.split("://", 1)[0]
    if protocol in ("s3", "s3a") and "endpoint_url" not in storage_options:
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            storage_options["endpoint_url"] = endpoint
    return fsspec.core.url_to_fs(url, **storage_options)


def join(url: str, *parts: str) -> str:
    """Join ``parts`` onto a local path (``os.path``) or a URL (``/``, segments stripped).

    ``join("s3://b/runs/", "demo", "17")`` is ``"s3://b/runs/demo/17"``.
    """
    if not _is_url(url):
        return os.path.join(url, *parts)
    segments = [p.strip("/") for p in parts if p.strip("/")]
    return posixpath.join(url.rstrip("/"), *segments) if segments else url


def absolute(url: str) -> str:
    """Return where ``url`` points, spelled so that it reads the same from any folder.

    A local path becomes absolute (``~`` expanded, ``.``/``..`` and a trailing ``/`` dropped:
    ``./runs/veyru/17`` run from ``/work`` is ``/work/runs/veyru/17``); an fsspec URL
    (``s3://bucket/runs/veyru/17``, ``file:///...``) is returned unchanged.
    """
    if _is_url(url):
        return url
    return os.path.abspath(os.path.expanduser(url))


def resolved(url: str) -> str:
    """Return one spelling per place: two names of one folder resolve to the same string.

    A local path (or ``file://`` URL) becomes its real path (``~`` expanded, ``.``/``..``,
    symbolic links and a trailing ``/`` resolved: ``runs/veyru/17/`` and a link to it are one
    folder); another fsspec URL loses its trailing ``/`` (object storage has no links).
    """
    if url.startswith("file://"):
        url = url[len("file://") :]
    if _is_url(url):
        return url.rstrip("/")
    return os.path.realpath(os.path.expanduser(url))


def nearest_existing(path: str) -> str:
    """The absolute local ``path``, or its nearest ancestor that exists (where creating starts)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    return probe


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    text = _USERINFO_RE.sub("//***@", _SECRET_RE.sub(r"\1***", text))
    return text[:300]


def _is_storage_failure(exc: BaseException) -> bool:
    if isinstance(exc, (StorageError, *_PASS_THROUGH)):
        return False
    if isinstance(exc, OSError):
        return True
    return any(c.__module__.split(".")[0] in _REMOTE_LIBS for c in type(exc).__mro__)


def _bucket_missing(fs: fsspec.AbstractFileSystem, url: str) -> bool:
    if is_local(fs) or not _is_url(url) or "s3" not in fs.protocol:
        return False
    bucket = url.split("://", 1)[1].split("/", 1)[0]
    try:
        return not fs.exists(bucket)
    except Exception:  # already on an error path: report the first error
        return False


@contextlib.contextmanager
def translate_errors(url: str, fs: fsspec.AbstractFileSystem | None = None) -> Iterator[None]:
    """Raise storage failures inside the block as one-line :class:`StorageError` naming ``url``.

    ``FileNotFoundError`` (unless its S3 bucket is missing), ``FileExistsError`` and the
    caller's own errors (``ValueError``, ``TypeError``) pass through unchanged.

    Args:
        url: The URL or path named in the error message.
        fs: The file system used inside the block; needed to tell a missing bucket apart.

    Raises:
        StorageError: for unreachable storage, a missing bucket, refused access.
    """
    try:
        yield
    except FileNotFoundError as exc:
        if fs is not None and _bucket_missing(fs, url):
            raise StorageError(f"bucket does not exist: {url}") from exc
        raise
    except Exception as exc:
        if not _is_storage_failure(exc):
            raise
        reason = _one_line(f"{type(exc).__name__}: {exc}")
        raise StorageError(f"storage error at {url}: {reason}") from exc


def _umask() -> int:
    """The process's umask, read from a new file's mode (``os.umask`` would have to set it)."""
    global _UMASK
    if _UMASK is None:
        with tempfile.TemporaryDirectory() as folder:
            probe = os.path.join(folder, "probe")
            os.close(os.open(probe, os.O_CREAT | os.O_WRONLY, 0o666))
            _UMASK = 0o666 & ~os.stat(probe).st_mode
    return _UMASK


_UMASK: int | None = None


def json_bytes(obj: Any) -> bytes:
    """Serialise ``obj`` as a run folder's JSON files are written: indented, UTF-8, a final newline.

    Pydantic models are dumped in JSON mode first.

    Raises:
        ValueError: ``obj`` holds a NaN or infinite float (``allow_nan=False``).
        TypeError: ``obj`` is not JSON-serialisable.
    """
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    fast = _orjson_bytes(obj)
    if fast is not None:
        return fast
    return (json.dumps(obj, allow_nan=False, indent=2, ensure_ascii=False) + "\n").encode()


def _orjson_bytes(obj: Any) -> bytes | None:
    """``obj`` indented by orjson when that is, byte for byte, what :mod:`json` writes; else None.

    Both write the same layout (two spaces, ``": "``, ``[]``/``{}`` when empty); they differ in
    tokens only: orjson writes some floats in another form (``1e-5`` for ``1e-05``,
    ``0.00003`` for ``3e-05``), a NaN as ``null``, and refuses what :mod:`json` converts (an
    int key, an int past 64 bits). So the compact forms of both, whose tokens are those of the
    indented forms, are compared: equal, orjson's indented bytes are :mod:`json`'s (a C
    encoder's compact pass costs a fraction of the pure-Python indented one).
    """
    try:
        fast = orjson.dumps(obj)  # refuses a cycle (its depth limit): then json's own check
        # orjson took it, so it holds no cycle: json's check would cost a tenth of its time
        compact = json.dumps(
            obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"), check_circular=False
        )
        if fast != compact.encode():
            return None
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return None


def write_bytes_atomic(url: str, data: bytes, **storage_options: Any) -> str:
    """Write ``data`` to ``url`` so that a failure never leaves a partial file under its name.

    Locally: a temporary file in the same folder (created if missing), fsync'd, then renamed
    over ``url``. On object storage: one put of the whole object (a put is atomic).

    Args:
        url: Local path or fsspec URL of the file.
        data: The whole content.
        **storage_options: Passed to :func:`open_fs`.

    Returns:
        ``url``.

    Raises:
        StorageError: if the storage is unreachable or refuses the write.
    """
    fs, path = open_fs(url, **storage_options)
    with translate_errors(url, fs):
        if not is_local(fs):
            fs.pipe_file(path, data)
            return url
        folder = os.path.dirname(path) or "."
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes it 0600; give it a new file's mode
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return url


def path_kind(url: str) -> Literal["folder", "file", "missing"]:
    """Whether ``url`` is a folder, a file, or nothing at all.

    On object storage a folder is a prefix that holds objects.

    Raises:
        StorageError: if the storage is unreachable or the bucket is missing.
    """
    fs, path = open_fs(url)
    if is_local(fs):
        if os.path.isdir(path):
            return "folder"
        return "file" if os.path.exists(path) else "missing"
    with translate_errors(url, fs):
        fs.invalidate_cache(path)
        if fs.isdir(path):
            return "folder"
        return "file" if fs.exists(path) else "missing"


@contextlib.contextmanager
def open_mapped(url: str) -> Iterator[bytes | mmap.mmap]:
    """Yield the whole content of the file at ``url``.

    Memory-mapped locally (an empty file as ``b""``), downloaded in one request otherwise.

    Raises:
        FileNotFoundError: if the file does not exist.
        StorageError: if the storage is unreachable.
    """
    fs, path = open_fs(url)
    with translate_errors(url, fs):
        if not is_local(fs):
            yield fs.cat_file(path)
            return
        with open(path, "rb") as f:
            try:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                yield b""
                return
            try:
                yield mm
            finally:
                mm.close()


class WriteConflictError(StorageError):
    """A conditional write refused: the object changed (or appeared) since this process read it.

    The object is left as the other writer made it; nothing is overwritten. Exit 75: another
    process writes the run.
    """

    exit_code = 75


def _precondition_failed(exc: BaseException) -> bool:
    """True when ``exc`` is S3's ``412 PreconditionFailed`` (an ``If-Match`` that did not hold)."""
    cause = exc.__cause__
    response = getattr(cause, "response", None)
    if not isinstance(response, dict):
        return False
    error = response.get("Error") or {}
    return error.get("Code") in ("PreconditionFailed", "412")


def put_if_unchanged(url: str, data: bytes, etag: str | None) -> str:
    """Put ``data`` to an object-store ``url`` only if it is still what this process last saw.

    ``etag`` None means the object must not exist yet (a create-only put, ``If-None-Match: *``);
    otherwise the put carries ``If-Match: <etag>``, so it lands only on the version this process
    read or wrote last. One put of the whole object (S3's single-request limit, 5 GB).

    Args:
        url: An fsspec URL on S3 (``s3://bucket/key``).
        data: The whole new content.
        etag: The ETag the object must still have, or None for "must not exist".

    Returns:
        The new object's ETag.

    Raises:
        WriteConflictError: the object changed or appeared since (another writer); one line.
        StorageError: the storage is unreachable or refuses the write.
    """
    fs, path = open_fs(url)
    condition: dict[str, Any] = {"mode": "create"} if etag is None else {"IfMatch": etag}
    with translate_errors(url, fs):  # passes a WriteConflictError (a StorageError) on as is
        try:
            out = fs.pipe_file(path, data, **condition)
        except FileExistsError:
            raise WriteConflictError(f"{url} was created by another writer") from None
        except OSError as exc:
            if _precondition_failed(exc):
                raise WriteConflictError(
                    f"{url} was changed by another writer since this process read it"
                ) from None
            raise
    return str((out or {}).get("ETag") or "")


def read_with_etag(url: str) -> tuple[bytes, str] | None:
    """Return an object-store object's bytes and ETag, or None when it does not exist.

    The ETag is read first and the bytes after: when the object changes in between, the bytes
    are newer than the ETag, and a :func:`put_if_unchanged` with that ETag is refused (safe).

    Raises:
        StorageError: the storage is unreachable or the bucket is missing.
    """
    fs, path = open_fs(url)
    try:
        with translate_errors(url, fs):
            fs.invalidate_cache(path)
            etag = str(fs.info(path)["ETag"])
            data = fs.cat_file(path)
    except FileNotFoundError:
        return None
    return bytes(data), etag
