"""Run store over fsspec: claim a run folder, list runs, read and write a run's JSON files.

A runs directory is a local path or an fsspec URL (``s3://bucket/prefix``). On S3 endpoint and
credentials come from the environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...).

A run folder is ``<runs_dir>/<scenario>/<unix timestamp>``; its run id is
``<scenario>/<timestamp>``. Claiming one is atomic on both back ends (a local ``mkdir``, an S3
create-only put of ``.claim``), so two launches in the same second get two folders.

Unreachable storage, a missing bucket and refused permissions raise :class:`StorageError`;
a missing file inside a reachable store stays a ``FileNotFoundError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

MAX_CLAIM_ATTEMPTS = 1000
"""How many successive timestamps :meth:`RunStore.claim_run_dir` tries before giving up."""

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
        return fsspec.filesystem("file"), os.path.abspath(url)
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


@dataclass(frozen=True)
class ClaimedRun:
    """A run folder claimed for one launch.

    Attributes:
        run_id: ``"<scenario>/<timestamp>"``.
        url: Full local path or URL of the run folder.
        timestamp: The folder's timestamp (unix seconds; may exceed the launch time by the
            number of same-second collisions).
    """

    run_id: str
    url: str
    timestamp: int


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


class RunStore:
    """The runs directory: one folder per run, ``<runs_dir>/<scenario>/<timestamp>``.

    Args:
        runs_dir: Local path or fsspec URL of the runs directory (``s3://bucket/runs``). Nothing
            is created until :meth:`claim_run_dir`.
        storage_options: Passed to :func:`open_fs`.
    """

    def __init__(self, runs_dir: str, storage_options: dict[str, Any] | None = None) -> None:
        self._options = dict(storage_options or {})
        self.fs, self._root = open_fs(runs_dir, **self._options)
        self.local = is_local(self.fs)
        self.runs_dir = self._root if self.local else runs_dir.rstrip("/")

    def _path(self, url: str) -> str:
        return open_fs(url, **self._options)[1]

    def check_usable(self) -> None:
        """Check, before anything is spent, that run folders can be created under ``runs_dir``.

        Locally ``runs_dir`` must be a folder or creatable (no file in the way); remotely the
        bucket or prefix must be reachable with the configured credentials. Creates nothing.

        Raises:
            StorageError: one line naming ``runs_dir`` and what is wrong.
        """
        if self.local:
            probe = nearest_existing(self._path(self.runs_dir))
            if not os.path.isdir(probe):
                raise StorageError(f"runs dir {self.runs_dir!r}: {probe} is a file, not a folder")
            if not os.access(probe, os.W_OK | os.X_OK):
                raise StorageError(f"runs dir {self.runs_dir!r}: {probe} is not writable")
            return
        bucket = self._path(self.runs_dir).split("/", 1)[0]
        with translate_errors(self.runs_dir):
            try:
                # info(), not exists(): s3fs's exists() answers False for an endpoint that does
                # not answer at all, which read as a missing bucket.
                self.fs.info(bucket)
            except FileNotFoundError:
                raise StorageError(
                    f"runs dir {self.runs_dir!r}: bucket {bucket!r} does not exist"
                ) from None

    def claim_run_dir(self, scenario: str, now_unix: int) -> ClaimedRun:
        """Atomically claim a fresh run folder for ``scenario`` at ``now_unix`` or later.

        Locally the folder is created with ``os.mkdir`` (parents as needed); on S3 the marker
        ``<folder>/.claim`` is written create-only (``If-None-Match: *``). On a collision the
        next second is tried, so concurrent launches never share a folder.

        Args:
            scenario: Scenario name (no ``/``).
            now_unix: Launch time, unix seconds.

        Raises:
            ValueError: for an empty or path-like scenario name.
            StorageError: if the storage is unreachable or no folder was free after
                :data:`MAX_CLAIM_ATTEMPTS` seconds.
        """
        if not scenario or scenario in (".", "..") or "/" in scenario or "\\" in scenario:
            raise ValueError(f"invalid scenario name for a run folder: {scenario!r}")
        parent = join(self.runs_dir, scenario)
        with translate_errors(parent, self.fs):
            if self.local:
                os.makedirs(parent, exist_ok=True)
            for ts in range(now_unix, now_unix + MAX_CLAIM_ATTEMPTS):
                url = join(parent, str(ts))
                try:
                    if self.local:
                        os.mkdir(url)
                    else:
                        marker = json.dumps({"run_id": f"{scenario}/{ts}", "now_unix": now_unix})
                        claim = self._path(join(url, ".claim"))
                        self.fs.pipe_file(claim, marker.encode(), mode="create")
                except FileExistsError:
                    continue
                return ClaimedRun(run_id=f"{scenario}/{ts}", url=url, timestamp=ts)
        raise StorageError(f"no free run folder in {parent} after {MAX_CLAIM_ATTEMPTS} attempts")

    def run_url(self, run_id: str) -> str:
        """Return the folder URL (or path) of ``run_id`` (``"<scenario>/<timestamp>"``)."""
        return join(self.runs_dir, *run_id.split("/"))

    def write_json(self, run_url: str, name: str, obj: Any) -> None:
        """Write ``obj`` as indented JSON to ``<run_url>/<name>``, atomically.

        Serialised first (``allow_nan=False``, indent 2, UTF-8; pydantic models in JSON mode),
        then written to a temporary name, fsync'd and renamed (locally) or put once (S3): a
        failure never leaves a partial file under ``name``.

        Args:
            run_url: The run folder.
            name: File name inside it (may contain ``/``, e.g. ``atif/a1.json``).
            obj: A JSON-serialisable value or a pydantic model.

        Raises:
            ValueError: if ``obj`` holds a NaN or infinite float.
            TypeError: if ``obj`` is not JSON-serialisable.
            StorageError: if the storage is unreachable.
        """
        if hasattr(obj, "model_dump"):
            obj = obj.model_dump(mode="json")
        data = (json.dumps(obj, allow_nan=False, indent=2, ensure_ascii=False) + "\n").encode()
        write_bytes_atomic(join(run_url, name), data, **self._options)

    def read_json(self, run_url: str, name: str) -> Any:
        """Return the parsed JSON of ``<run_url>/<name>``.

        Raises:
            FileNotFoundError: if the file does not exist.
            ValueError: if it is not valid JSON.
            StorageError: if the storage is unreachable or the bucket is missing.
        """
        url = join(run_url, name)
        with translate_errors(url, self.fs):
            if self.local:
                with open(url, "rb") as f:
                    return json.loads(f.read())
            return json.loads(self.fs.cat_file(self._path(url)))

    def exists(self, run_url: str, name: str) -> bool:
        """Return whether ``<run_url>/<name>`` exists.

        Raises:
            StorageError: if the storage is unreachable or the bucket is missing.
        """
        url = join(run_url, name)
        if self.local:
            return os.path.exists(url)
        path = self._path(url)
        with translate_errors(url, self.fs):
            self.fs.invalidate_cache(path)
            if self.fs.exists(path):
                return True
        if _bucket_missing(self.fs, url):
            raise StorageError(f"bucket does not exist: {url}")
        return False

    def _list_dirs(self, url: str) -> list[str]:
        """Return the names of the folders directly under ``url``; none if it does not exist."""
        try:
            if self.local:
                with os.scandir(url) as entries:
                    return [e.name for e in entries if e.is_dir() and not e.name.startswith(".")]
            entries = self.fs.ls(self._path(url), detail=True, refresh=True)
        except FileNotFoundError:
            if _bucket_missing(self.fs, url):
                raise
            return []
        return [
            posixpath.basename(e["name"].rstrip("/")) for e in entries if e["type"] == "directory"
        ]

    def list_runs(self, scenario: str | None = None) -> list[str]:
        """Return the run ids ``"<scenario>/<timestamp>"`` in the store, in timestamp order.

        Args:
            scenario: Only this scenario's runs; ``None`` for all (sorted by scenario first).

        Returns:
            The run ids; empty if the runs directory does not exist yet.

        Raises:
            StorageError: if the storage is unreachable or the bucket is missing.
        """
        runs: list[str] = []
        with translate_errors(self.runs_dir, self.fs):
            for name in [scenario] if scenario else self._list_dirs(self.runs_dir):
                runs += [f"{name}/{ts}" for ts in self._list_dirs(join(self.runs_dir, name))]
        return sorted(runs, key=lambda r: (r.partition("/")[0], len(r), r))
