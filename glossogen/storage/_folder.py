"""A run folder as a value: its id, its files' URLs, its JSON files; its writer lock is taken here.

A run folder is ``<runs_dir>/<scenario>/<unix timestamp>`` and its run id is
``<scenario>/<timestamp>``. :class:`RunFolder` is the one place that spells the names of a
run's files and the one place that reads a folder's id back from its URL; every module that
touches a run's files takes a :class:`RunFolder` from the runs store
(:meth:`~glossogen.storage.RunStore.claim_run_dir`, :meth:`~glossogen.storage.RunStore.open_run`)
or from :meth:`RunFolder.at`. Its JSON files are parsed by ``_json.py``, its process marks
(a launched process, a stop) kept by ``_process_marks.py``, its writer lock by ``_lock.py``.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from glossogen.refusals import Refusal, is_utf8, not_utf8, path_not_text, shown_path
from glossogen.storage._fs import (
    is_local,
    join,
    json_bytes,
    open_fs,
    translate_errors,
    write_bytes_atomic,
)
from glossogen.storage._json import _parsed
from glossogen.storage._lease import RunBusyError, probe_lease
from glossogen.storage._lock import RunLock
from glossogen.storage._process_marks import LAUNCH, STOP, mark_process, marked_process

CONFIG = "config.json"
LABELS = "labels.json"
LINEAGE = "lineage.json"
FLOW_RUN = "flow_run.json"
"""The Prefect flow run of a deployment that plays (or is queued to play) the run: written by
its launcher once the flow run exists and by the flow run itself when it starts, so
``glossogen stop`` cancels it through Prefect (``flow_run_id``, ``deployment_id``)."""


RUN_ID_SHAPE = "<scenario>/<run_dir_name>, relative to the runs directory"
"""What a run id is, as a malformed one's refusal words it (:func:`run_id_refused`)."""


def is_run_id(text: str) -> bool:
    """Whether ``text`` is shaped ``<scenario>/<run_dir_name>``: the one run-id parse.

    Two non-empty parts, neither ``.`` nor ``..``, no blank around them, no leading or
    trailing ``/`` (an absolute path, ``veyru/1796433857/``) and no backslash. A run
    folder's name is stricter (:meth:`RunFolder.names_run`: a unix timestamp), built on it.
    """
    parts = text.split("/")
    return (
        len(parts) == 2
        and all(p and p == p.strip() and p not in (".", "..") for p in parts)
        and "\\" not in text
    )


def run_id_refused(field: str, run_id: str) -> Refusal | None:
    r"""Refuse ``run_id`` not UTF-8 text or not shaped as a run id (:func:`is_run_id`); else None.

    The one line every surface says of a malformed run id (the export's and evaluation's
    ``run_ids``, ``stop``'s run, every tool and route that names a run): the id quoted as
    sent, whole, then ``not a run id (<scenario>/<run_dir_name>, ...)``, or ``a path, not a
    run id: ...`` for an absolute path or a URL. An id holding a byte that is not UTF-8 (a
    command line's ``veyru/$'\xff'``, a URL's ``veyru/%FF``) is malformed too, in
    :func:`~glossogen.refusals.path_not_text`'s words: ``run_id 'veyru/\udcff': not UTF-8
    text`` (the CLI prints the byte typed, ``\xff``).
    """
    not_text = path_not_text(field, run_id)
    if not_text is not None:
        return not_text
    if is_run_id(run_id):
        return None
    path = run_id.startswith("/") or "://" in run_id
    reason = f"a path, not a run id: {RUN_ID_SHAPE}" if path else f"not a run id ({RUN_ID_SHAPE})"
    return Refusal(field=field, value=shown_path(run_id), reason=reason, colon=True)


@dataclass(frozen=True)
class FolderFile:
    """One file of a run folder.

    Attributes:
        name: Its path relative to the folder, ``/``-separated (``atif/alice.json``).
        url: Its full local path or fsspec URL.
        size: Its size in bytes.
    """

    name: str
    url: str
    size: int


@dataclass(frozen=True)
class RunFolder:
    """Where one run lives.

    Attributes:
        run_id: ``"<scenario>/<timestamp>"``.
        url: Full local path or fsspec URL of the run folder (no trailing ``/``).
        timestamp: The folder's timestamp (unix seconds; may exceed the launch time by the
            number of same-second collisions).
    """

    run_id: str
    url: str
    timestamp: int

    @staticmethod
    def names_run(scenario: str, name: str) -> bool:
        """Whether ``<scenario>/<name>`` names a run folder: a run id with a unix timestamp.

        :func:`is_run_id`'s shape, its second part a unix timestamp: :meth:`at`,
        :meth:`RunStore.open_run` and :meth:`RunStore.list_runs` read names by it, so a stray
        folder (``notes/drafts``) is never a run.
        """
        return is_run_id(f"{scenario}/{name}") and name.isascii() and name.isdigit()

    @classmethod
    def at(cls, url: str) -> RunFolder:
        """Return the folder at ``url`` (``.../<scenario>/<timestamp>``), read from its URL.

        Raises:
            ValueError: ``url`` does not end in ``<scenario>/<unix timestamp>``.
        """
        url = url.rstrip("/")
        parts = url.replace("\\", "/").rsplit("/", 2)
        if len(parts) < 2 or not cls.names_run(parts[-2], parts[-1]):
            raise ValueError(f"{url!r} is not a run folder (<runs-dir>/<scenario>/<unix_ts>)")
        return cls(run_id=f"{parts[-2]}/{parts[-1]}", url=url, timestamp=int(parts[-1]))

    @classmethod
    def holding(cls, url: str, scenario: str) -> RunFolder:
        """Return the folder at ``url`` holding a ``scenario`` run, wherever it is stored.

        A folder at ``.../<scenario>/<timestamp>`` is :meth:`at`'s; any other folder (a copy
        under ``x/run-fresh``, ``.``) gets the run id ``<scenario>/<folder name>`` and
        timestamp 0, and its files are named as in any run folder (``<scenario>.jsonl``).

        Raises:
            ValueError: ``scenario`` is empty or path-like.
        """
        if not scenario or scenario in (".", "..") or "/" in scenario or "\\" in scenario:
            raise ValueError(f"invalid scenario name for a run folder: {scenario!r}")
        url = url.rstrip("/") or "/"
        try:
            found = cls.at(url)
        except ValueError:
            found = None
        if found is not None and found.scenario == scenario:
            return found
        name = url.replace("\\", "/").rsplit("/", 1)[-1] or "run"
        return cls(run_id=f"{scenario}/{name}", url=url, timestamp=0)

    @classmethod
    def logs_in(cls, url: str, scenarios: list[str]) -> list[str]:
        """Return those of ``scenarios`` whose event log the folder at ``url`` holds.

        Raises:
            StorageError: if the storage is unreachable.
        """
        return [s for s in scenarios if cls.holding(url, s).log_state() != "missing"]

    def log_bytes(self) -> bytes:
        """Return the event log's bytes as stored (for its SHA-256).

        Raises:
            FileNotFoundError: the log does not exist.
            IsADirectoryError: the log's name is a folder.
            StorageError: if the storage is unreachable.
        """
        fs, path = open_fs(self.log_url)
        with translate_errors(self.log_url, fs):
            if is_local(fs):
                with open(path, "rb") as f:
                    return f.read()
            return bytes(fs.cat_file(path))

    @property
    def scenario(self) -> str:
        """The scenario the run plays (the folder's parent name)."""
        return self.run_id.split("/", 1)[0]

    @property
    def runs_dir(self) -> str:
        """The runs root the folder sits in (``<runs_dir>/<scenario>/<ts>``)."""
        parent = self.url.replace("\\", "/").rsplit("/", 2)[0] if self.url.count("/") >= 2 else "."
        return parent or "/"

    def file_url(self, name: str) -> str:
        """Return the URL of ``name`` inside the folder (``name`` may contain ``/``)."""
        return join(self.url, name)

    @cached_property
    def log_url(self) -> str:
        """The run's event log, ``<scenario>.jsonl`` (spelled once per folder value)."""
        return self.file_url(f"{self.scenario}.jsonl")

    @property
    def config_url(self) -> str:
        """``config.json``: the knobs in force."""
        return self.file_url(CONFIG)

    @property
    def report_url(self) -> str:
        """``<scenario>_report.json``: what ``glossogen evaluate`` wrote."""
        return self.file_url(f"{self.scenario}_report.json")

    @property
    def stdout_log_name(self) -> str:
        """``<scenario>_stdout.log``: what a detached derived run printed."""
        return f"{self.scenario}_stdout.log"

    @property
    def stdout_log_url(self) -> str:
        """The URL of :attr:`stdout_log_name`."""
        return self.file_url(self.stdout_log_name)

    def exists(self, name: str) -> bool:
        """Return whether ``name`` exists in the folder.

        Raises:
            StorageError: if the storage is unreachable or the bucket is missing.
        """
        url = self.file_url(name)
        fs, path = open_fs(url)
        if is_local(fs):
            return os.path.exists(path)
        with translate_errors(url, fs):
            fs.invalidate_cache(path)
            return bool(fs.exists(path))

    def log_state(self) -> Literal["ok", "missing", "empty", "folder"]:
        """Whether the event log is there: ``ok``, ``missing``, ``empty`` or a ``folder``.

        Raises:
            StorageError: if the storage is unreachable.
        """
        fs, path = open_fs(self.log_url)
        with translate_errors(self.log_url, fs):
            if not is_local(fs):
                fs.invalidate_cache(path)
            if not fs.exists(path):
                return "missing"
            if fs.isdir(path):
                return "folder"
            return "ok" if int(fs.size(path)) > 0 else "empty"

    def unbegun(self) -> bool:
        """True while the run's player has not begun its log: every reader's ``queued``.

        No log yet (a claim whose flow run or process has not started), or an empty one a live
        process holds (:meth:`is_locked`: its writer opened it and is about to write its first
        event). An empty log no process holds (its player killed before its first event, a
        file truncated) is no run's log: :meth:`empty_log_refused` words it.

        Raises:
            StorageError: if the storage is unreachable.
        """
        state = self.log_state()
        return state == "missing" or (state == "empty" and self.is_locked())

    def not_a_run_log(self, why: str) -> str:
        """``<log> is not a run log (<why>)``: every reader's line for a log no run's.

        ``why``: ``empty``, or ``no simulation_started event``.
        """
        return f"{self.log_url} is not a run log ({why})"

    def empty_log_refused(self) -> str | None:
        """Why a read of the run is refused when its log is empty and nothing is about to write it.

        The listings' note's words, the file by its path within the runs directory
        (``veyru/1796446580/veyru.jsonl is not a run log (empty)``), for a reader that names
        the run (its page, events, summary, MCP's reads, ``evaluate_run``, ``stop``). None when
        the log holds a byte, is missing, or is :meth:`unbegun` (a live writer's first event).

        Raises:
            StorageError: if the storage is unreachable.
        """
        if self.log_state() != "empty" or self.is_locked():
            return None
        return self.within_runs_dir(self.not_a_run_log("empty"))

    def log_modified(self) -> float | None:
        """When the event log was last written (Unix seconds), or None when there is none.

        Raises:
            StorageError: if the storage is unreachable.
        """
        fs, path = open_fs(self.log_url)
        with translate_errors(self.log_url, fs):
            if not fs.exists(path):
                return None
            return float(fs.modified(path).timestamp())

    def log_stamp(self) -> tuple[int, float] | None:
        """The event log's size (bytes) and last change (Unix seconds), or None with no log.

        What a cache of a run's reading is keyed by: a log that grew or was rewritten has
        another stamp; a finished run's stamp never changes.

        Raises:
            StorageError: if the storage is unreachable.
        """
        return self.stamp(f"{self.scenario}.jsonl")

    def stamp(self, name: str) -> tuple[int, float] | None:
        """File ``name``'s size (bytes) and last change (Unix seconds), or None when absent.

        Raises:
            StorageError: if the storage is unreachable.
        """
        url = self.log_url if name == f"{self.scenario}.jsonl" else self.file_url(name)
        if "://" not in url:  # a plain local path: no file system object to make (the run
            try:  # list asks this of every run on every listing)
                st = os.stat(url)
            except (FileNotFoundError, NotADirectoryError):
                return None
            return st.st_size, st.st_mtime
        fs, path = open_fs(url)
        if is_local(fs):
            try:
                st = os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
            return st.st_size, st.st_mtime
        with translate_errors(url, fs):
            fs.invalidate_cache(path)
            try:
                info = fs.info(path)
            except FileNotFoundError:
                return None
            modified = info.get("LastModified") or info.get("mtime") or 0
            stamp = modified.timestamp() if hasattr(modified, "timestamp") else float(modified)
            return int(info.get("size") or 0), stamp

    def log_line_of(self, text: str) -> int | None:
        """The number (from 1) of the first line of the event log holding ``text``, or None.

        A plain byte search, for naming the line of an event found by its ``event_id``; it
        does not parse the log (reading a run's events is :func:`glossogen.eventlog.read_events`).

        Raises:
            StorageError: if the storage is unreachable.
        """
        needle = text.encode()
        fs, path = open_fs(self.log_url)
        with translate_errors(self.log_url, fs):
            if not is_local(fs):
                fs.invalidate_cache(path)
            with fs.open(path, "rb") as f:
                for number, line in enumerate(f, 1):
                    if needle in line:
                        return number
        return None

    def local_path(self, name: str) -> str | None:
        """The local file system path of ``name`` in the folder, or None for remote storage."""
        fs, path = open_fs(self.file_url(name))
        return path if is_local(fs) else None

    def has_log(self) -> bool:
        """Return whether the event log exists and holds at least one byte."""
        fs, path = open_fs(self.log_url)
        with translate_errors(self.log_url, fs):
            if is_local(fs):
                return os.path.isfile(path) and os.path.getsize(path) > 0
            fs.invalidate_cache(path)
            return bool(fs.exists(path)) and int(fs.size(path)) > 0

    def read_json(self, name: str) -> Any:
        """Return the parsed JSON of ``name`` in the folder.

        Raises:
            FileNotFoundError: if the file does not exist.
            ValueError: if it is not valid JSON.
            StorageError: if the storage is unreachable or the bucket is missing.
        """
        return self._read_parsed(name)[0]

    def _read_parsed(self, name: str) -> tuple[Any, bool]:
        """:meth:`read_json`'s value, and whether its strings are surely text (:func:`_parsed`)."""
        url = self.file_url(name)
        fs, path = open_fs(url)
        with translate_errors(url, fs):
            if is_local(fs):
                with open(path, "rb") as f:
                    return _parsed(f.read())
            return _parsed(fs.cat_file(path))

    def read_object(self, name: str) -> dict[str, Any] | None:
        """Return ``name`` in the folder as a JSON object, or None when it does not exist.

        Raises:
            ValueError: the file is a folder, not UTF-8 text (a byte UTF-8 does not decode:
                ``... is not UTF-8 text (byte 0xff at offset 10)``, or a lone surrogate's
                escape), not valid JSON, or not a JSON object; one line naming the file.
            StorageError: if the storage is unreachable.
        """
        url = self.file_url(name)
        try:
            value, text = self._read_parsed(name)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise ValueError(f"{url} is a folder, not a file") from None
        except UnicodeDecodeError as exc:  # before ValueError, which it is
            byte = exc.object[exc.start]
            raise ValueError(
                f"{url} is not UTF-8 text (byte 0x{byte:02x} at offset {exc.start})"
            ) from None
        except ValueError as exc:
            raise ValueError(f"{url} is not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"{url} is not a JSON object (it holds a {type(value).__name__})")
        # Only the standard library reads a lone surrogate's escape: walked when it read it.
        found = None if text else not_utf8(value)
        if found is not None:
            surrogate = next(char for char in found[1] if not is_utf8(char))
            raise ValueError(
                f"{url} is not UTF-8 text (it escapes the lone surrogate \\u{ord(surrogate):04x})"
            )
        return value

    def read_object_noted(self, name: str) -> tuple[dict[str, Any] | None, str | None]:
        """:meth:`read_object`, a file that cannot be read said in one line instead of raised.

        How a reader that reads the run from its log takes the folder's JSON files (the run
        page, MCP's ``get_run``): the damage is named, never a refusal.

        Returns:
            The object (None when the file is missing or cannot be read) and, when it cannot
            be read, why, the file named by its path within the runs directory
            (:meth:`within_runs_dir`: ``veyru/1796446580/labels.json is not UTF-8 text (byte
            0xff at offset 6)``), as the run list's notes name it.

        Raises:
            StorageError: if the storage is unreachable.
        """
        try:
            return self.read_object(name), None
        except ValueError as exc:
            return None, self.within_runs_dir(str(exc).splitlines()[0])

    def within_runs_dir(self, line: str) -> str:
        """``line`` with the folder's runs directory cut from the paths it names.

        ``/srv/runs/veyru/1796446580/labels.json is ...`` reads ``veyru/1796446580/labels.json
        is ...``: a server's own folder is never shown to its callers, and every surface names
        a run's file alike.
        """
        root = self.runs_dir.rstrip("/")
        return line.replace(f"{root}/", "") if root else line

    def read_json_or(self, name: str, default: Any) -> Any:
        """Return the parsed JSON of ``name``, or ``default`` when the file does not exist."""
        try:
            return self.read_json(name)
        except FileNotFoundError:
            return default

    def write_json(self, name: str, obj: Any) -> None:
        """Write ``obj`` as indented JSON to ``name`` in the folder, atomically.

        Serialised first (``allow_nan=False``, indent 2, UTF-8; pydantic models in JSON mode),
        then written to a temporary name, fsync'd and renamed (locally) or put once (S3): a
        failure never leaves a partial file under ``name``.

        Raises:
            ValueError: if ``obj`` holds a NaN or infinite float.
            TypeError: if ``obj`` is not JSON-serialisable.
            StorageError: if the storage is unreachable.
        """
        data = json_bytes(obj)
        write_bytes_atomic(self.file_url(name), data)

    def files(self) -> list[FolderFile]:
        """Every file in the folder and its subfolders, sorted by name.

        Raises:
            FileNotFoundError: the folder does not exist.
            StorageError: if the storage is unreachable.
        """
        fs, root = open_fs(self.url)
        with translate_errors(self.url, fs):
            if not is_local(fs):
                fs.invalidate_cache(root)
            found = fs.find(root, detail=True)
            if not found and not fs.isdir(root):
                raise FileNotFoundError(f"run folder not found: {self.url}")
        root = root.rstrip("/").replace("\\", "/")
        files = []
        for path, info in sorted(found.items()):
            if info.get("type") == "directory":
                continue
            name = posixpath.relpath(path.replace("\\", "/"), root)
            files.append(FolderFile(name, self.file_url(name), int(info.get("size") or 0)))
        return files

    def read_chunks(self, name: str, chunk_bytes: int) -> Iterator[bytes]:
        """Yield the bytes of ``name`` in the folder, ``chunk_bytes`` at a time, to its end.

        Raises:
            FileNotFoundError: the file does not exist.
            StorageError: if the storage is unreachable.
        """
        url = self.file_url(name)
        fs, path = open_fs(url)
        with translate_errors(url, fs), fs.open(path, "rb") as src:
            while block := src.read(chunk_bytes):
                yield block

    def discard_unstarted(
        self, names: tuple[str, ...] = (CONFIG, LABELS, ".claim", FLOW_RUN)
    ) -> bool:
        """Remove a folder claimed for a run that never started: ``names``, then the folder.

        ``names`` are the files a claim writes (``.claim`` is the runs store's S3 claim marker;
        ``flow_run.json`` names the flow run a launcher created for it).

        Only while the folder holds no event log (nothing was played or spent) and nothing but
        ``names``; otherwise it is left exactly as it is.

        Returns:
            True when the folder was removed.

        Raises:
            StorageError: if the storage is unreachable.
        """
        if self.log_state() != "missing":
            return False
        fs, path = open_fs(self.url)
        with translate_errors(self.url, fs):
            if not is_local(fs):
                fs.invalidate_cache(path)
            held = {p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
            if not held <= set(names):
                return False
            for name in sorted(held):
                fs.rm_file(join(path, name))
            if is_local(fs):
                os.rmdir(path)
        return True

    def lock(self, now: Callable[[], float] = time.time) -> RunLock:
        """Take the folder's writer lock (see :class:`RunLock`) and name this process in it.

        Args:
            now: The clock a remote lease's expiry is read against (Unix seconds).

        Raises:
            RunBusyError: another live process holds it.
            StorageError: remote storage is unreachable.
        """
        return RunLock(self, now=now)

    def check_unlocked(self, now: Callable[[], float] = time.time) -> None:
        """Refuse a folder another live process writes; writes nothing (the pid stays).

        Raises:
            RunBusyError: another live process holds the writer lock (local: named by its pid;
                remote: by the lease's owner and expiry).
            StorageError: remote storage is unreachable.
        """
        if not is_local(open_fs(self.url)[0]):
            probe_lease(self.url, now)
            return
        RunLock(self, record_pid=False).release()

    def writer_locked(self) -> bool:
        """True while another live process holds the folder's writer lock (flock or lease)."""
        try:
            self.check_unlocked()
        except RunBusyError:
            return True
        return False

    def is_locked(self) -> bool:
        """True while a live process writes the run, or was launched to and has not begun.

        The writer lock (:meth:`writer_locked`), or a launch a launcher recorded
        (:meth:`mark_launch`) whose process is alive: from the moment a resume or a derived
        run is launched, before its process has taken the lock, the run reads as live.
        """
        return self.writer_locked() or self.pending_launch() is not None

    def mark_launch(self, pid: int) -> None:
        """Record that process ``pid`` was launched to play the run (local folders only).

        Written by a launcher right after it started the process, before it returns: the
        run reads as live (:meth:`is_locked`) until that process has ended.
        """
        mark_process(self.local_path(LAUNCH), pid)

    def request_stop(self, pid: int) -> None:
        """Record that process ``pid`` is asked to stop (local folders only).

        Written before the process is sent SIGINT: a process that could not answer the signal
        yet (still starting: a ``.pth`` file's bare ``except:`` around an import swallows a
        ``KeyboardInterrupt``) answers the record before its next round
        (:meth:`stop_requested`).
        """
        mark_process(self.local_path(STOP), pid)

    def stop_requested(self) -> bool:
        """True when a stop was recorded for this very process (its pid and start time)."""
        return marked_process(self.local_path(STOP)) == os.getpid()

    def pending_launch(self) -> int | None:
        """The pid of the process :meth:`mark_launch` recorded, while it is alive; else None.

        Alive is the same process: its pid with the start time recorded (a pid the system
        gave to another process since is not it), not exited (an unreaped zombie has).
        """
        return marked_process(self.local_path(LAUNCH))
