"""A run folder's process marks: which process a launcher started, and which a stop signalled.

A mark is a small JSON file in a local run folder (:data:`LAUNCH`, :data:`STOP`) holding a pid
and that process's start time, so a pid the system gave to another process since never reads as
the marked one (:func:`marked_process`). Written and read by :class:`~glossogen.storage.RunFolder`
(``mark_launch``, ``pending_launch``, ``request_stop``, ``stop_requested``).
"""

from __future__ import annotations

import os

from glossogen.storage._fs import json_bytes, write_bytes_atomic
from glossogen.storage._json import parse_json

LAUNCH = ".launch.json"
"""The process a launcher started to play the run (pid and start time), until it has ended:
see :meth:`RunFolder.mark_launch`."""

STOP = ".stop.json"
"""The process a stop signalled (pid and start time): see :meth:`RunFolder.request_stop`."""


def process_start(pid: int) -> str | None:
    """The start time of live process ``pid`` (Linux: clock ticks since boot), else None.

    None for an exited process (a zombie included). Without ``/proc``, the pid's liveness
    alone (``"alive"``).
    """
    if not os.path.exists("/proc/self/stat"):
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return None
        return "alive"
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]  # field 22 of stat: starttime


def mark_process(path: str | None, pid: int) -> None:
    """Record live process ``pid`` (its pid and start time) in the file at ``path``.

    ``path``: the mark's local path in the run folder (None for remote storage: no mark).
    """
    started = process_start(pid)
    if path is not None and started is not None:
        write_bytes_atomic(path, json_bytes({"pid": pid, "started": started}))


def marked_process(path: str | None) -> int | None:
    """The pid :func:`mark_process` recorded at ``path`` while that process lives, else None."""
    if path is None or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            mark = parse_json(f.read())
        pid, started = int(mark["pid"]), mark["started"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if process_start(pid) == started else None


__all__ = ["LAUNCH", "STOP", "mark_process", "marked_process", "process_start"]
