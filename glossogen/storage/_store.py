"""The runs store: claim a run folder, open and list runs, read and write a run's JSON files.

A runs directory is a local path or an fsspec URL (``s3://bucket/prefix``). A run folder is
``<runs_dir>/<scenario>/<unix timestamp>``; its run id is ``<scenario>/<timestamp>``. Claiming
one is atomic on both back ends (a local ``mkdir``, an S3 create-only put of ``.claim``), so two
launches in the same second get two folders.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
from typing import Any

from glossogen.storage._folder import RunFolder
from glossogen.storage._fs import (
    StorageError,
    _bucket_missing,
    is_local,
    join,
    json_bytes,
    nearest_existing,
    open_fs,
    translate_errors,
    write_bytes_atomic,
)
from glossogen.storage._run_id import resolve_run_id

MAX_CLAIM_ATTEMPTS = 1000
"""How many successive timestamps :meth:`RunStore.claim_run_dir` tries before giving up."""


def _make_local(path: str, runs_dir: str, exist_ok: bool) -> None:
    """Create a local folder (``exist_ok``: with its parents); a collision stays FileExistsError.

    Raises:
        FileExistsError: ``path`` exists (and not ``exist_ok``): the caller tries the next name.
        StorageError: the folder cannot be created (no such parent, a file in the way, refused,
            read-only file system), one line naming ``runs_dir``.
    """
    try:
        if exist_ok:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)
    except FileExistsError:
        if exist_ok:  # a file where the folder should be
            message = f"runs dir {runs_dir!r}: cannot create {path}: a file is in the way"
            raise StorageError(message) from None
        raise
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise StorageError(f"runs dir {runs_dir!r}: cannot create {path}: {reason}") from None


SWEEPS_FOLDER = "sweeps"
"""The folder under a runs directory where sweeps keep their state
(``<runs_dir>/sweeps/<sweep_id>``): never a scenario's, so never listed as runs."""


class RunStore:
    """The runs directory: one folder per run, ``<runs_dir>/<scenario>/<timestamp>``.

    Beside the runs lies the sweeps' folder (:data:`SWEEPS_FOLDER`), which holds none.

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

    def claim_run_dir(self, scenario: str, now_unix: int) -> RunFolder:
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
                _make_local(parent, self.runs_dir, exist_ok=True)
            for ts in range(now_unix, now_unix + MAX_CLAIM_ATTEMPTS):
                url = join(parent, str(ts))
                try:
                    if self.local:
                        _make_local(url, self.runs_dir, exist_ok=False)
                    else:
                        marker = json.dumps({"run_id": f"{scenario}/{ts}", "now_unix": now_unix})
                        claim = self._path(join(url, ".claim"))
                        self.fs.pipe_file(claim, marker.encode(), mode="create")
                except FileExistsError:
                    continue
                return RunFolder(run_id=f"{scenario}/{ts}", url=url, timestamp=ts)
        raise StorageError(f"no free run folder in {parent} after {MAX_CLAIM_ATTEMPTS} attempts")

    def release_claim(self, folder: RunFolder, names: tuple[str, ...], keep: str = "") -> None:
        """Undo a claim whose first writes failed: remove ``names`` and the folder's marker.

        Locally the files ``names`` are removed, then the folder and each empty parent up to
        (not including) ``keep``, the nearest folder that existed before the claim; a folder
        that holds anything else is left as it is. On S3 the objects ``names`` and ``.claim``
        are deleted. Failures here are swallowed: the storage is already failing, and the
        caller reports the first error.

        Args:
            folder: The folder :meth:`claim_run_dir` returned.
            names: Files the claim may have written into it (``config.json``, ...).
            keep: Local only: the folder that existed before the claim (never removed).
        """
        if self.local:
            for name in names:
                with contextlib.suppress(OSError):
                    os.unlink(join(folder.url, name))
            self.remove_empty_folders(folder.url, keep)
            return
        for name in (*names, ".claim"):
            with contextlib.suppress(Exception):  # already failing storage: report the first
                self.fs.rm_file(self._path(join(folder.url, name)))

    def remove_empty_folders(self, path: str, keep: str) -> None:
        """Locally, remove ``path`` and each parent while empty, up to (not including) ``keep``.

        What a failed claim created is undone this way; a folder holding anything stays.
        """
        if not self.local or not keep:
            return
        probe, stop = os.path.abspath(path), os.path.abspath(keep)
        while probe != stop and probe.startswith(stop + os.sep):
            try:
                os.rmdir(probe)  # only an empty folder goes
            except OSError:
                return
            probe = os.path.dirname(probe)

    def run_url(self, run_id: str) -> str:
        """Return the folder URL (or path) of ``run_id`` (``"<scenario>/<timestamp>"``)."""
        return self.open_run(run_id).url

    def open_run(self, run_id: str, field: str = "run_id") -> RunFolder:
        """Return the folder of ``run_id`` (``"<scenario>/<timestamp>"``) in this store.

        The one resolver's reading (:func:`~glossogen.storage.resolve_run_id`): nothing is read.

        Raises:
            RunIdRefused: (a ``ValueError``) ``run_id`` is malformed (``field`` named) or
                names no run folder (``run ids that no longer resolve: ...``).
        """
        return resolve_run_id(self.runs_dir, run_id, field)

    def runs(self, scenario: str | None = None) -> list[RunFolder]:
        """Return the folders of :meth:`list_runs`, in the same order."""
        return [self.open_run(r) for r in self.list_runs(scenario)]

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
        data = json_bytes(obj)
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
            The run ids; empty if the runs directory does not exist yet. Only folders named
            as runs are (:meth:`RunFolder.names_run`: ``<scenario>/<unix_ts>``): a stray folder
            (``notes/drafts``) and the sweeps' folder (:data:`SWEEPS_FOLDER`) are no runs.

        Raises:
            StorageError: if the storage is unreachable or the bucket is missing.
        """
        runs: list[str] = []
        with translate_errors(self.runs_dir, self.fs):
            names = [scenario] if scenario else self._list_dirs(self.runs_dir)
            for name in (n for n in names if n != SWEEPS_FOLDER):
                runs += [
                    f"{name}/{ts}"
                    for ts in self._list_dirs(join(self.runs_dir, name))
                    if RunFolder.names_run(name, ts)
                ]
        return sorted(runs, key=lambda r: (r.partition("/")[0], len(r), r))
