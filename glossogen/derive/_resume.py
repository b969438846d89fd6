"""Where a crashed run picks up: checks that refuse a bad resume, and the resume point.

Resume continues a run in its own folder, appending to its own log. The round that was cut off
reopens from its start (or, when its verdict was already recorded, only its postmortem is
played), so every round keeps exactly one verdict per team.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from typing import Any

from glossogen.derive._state import DeriveError, RunState, read_state
from glossogen.eventlog import read_events
from glossogen.storage import ClaimedRun, RunStore, join, open_fs

LOCK_NAME = ".writer.lock"
"""File in a local run folder that the writing process holds an exclusive ``flock`` on."""


class RunLock:
    """An exclusive advisory lock on a local run folder while a process writes its log.

    Remote folders (S3) cannot be locked this way; there the lock is a no-op.
    """

    def __init__(self, run_url: str) -> None:
        """Take the lock, or raise.

        Raises:
            DeriveError: another live process holds it (exit 75: try again later).
        """
        self._fd: int | None = None
        fs, path = open_fs(run_url)
        if "file" not in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
            return
        fd = os.open(os.path.join(path, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise DeriveError(
                f"run {run_url} is being written by another live process (pid {holder})", 75
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@dataclass
class ResumePoint:
    """A run ready to continue: where it lives, its state, and how its config changed."""

    claimed: ClaimedRun
    state: RunState
    config_changes: dict[str, Any]

    @property
    def next_round(self) -> int:
        """The first round to play from its start."""
        return self.state.after_round + 1 + (1 if self.state.pending_verdicts else 0)


def config_changes(recorded: dict[str, Any], resolved: dict[str, Any]) -> dict[str, Any]:
    """Return ``{knob: {"recorded": old, "now": new}}`` for every top-level knob that differs."""
    keys = sorted(set(recorded) | set(resolved))
    return {
        k: {"recorded": recorded.get(k), "now": resolved.get(k)}
        for k in keys
        if recorded.get(k) != resolved.get(k)
    }


def open_resume(
    run_dir: str, scenario: str, knobs: dict[str, Any], allow_config_change: bool
) -> ResumePoint:
    """Check that ``run_dir`` can be resumed with ``knobs`` and return where it picks up.

    Knobs given with no ``labels`` keep the run's own (a sweep's run resumed by hand with its
    preset is not a config change); other labels are one.

    Raises:
        DeriveError: no log in the folder (66); the run already ended (65, use fork-at-round);
            another scenario; a config that differs from the recorded one without
            ``allow_config_change`` (65); another live process writing it (75).
    """
    url = join(run_dir, f"{scenario}.jsonl")
    fs, path = open_fs(url)
    if not fs.exists(path):
        raise DeriveError(f"no event log {url}: is {run_dir!r} a {scenario} run folder?", 66)
    read = read_events(url)
    started = next((e for e in read.events if e.event_type == "simulation_started"), None)
    if started is None:
        raise DeriveError(f"{url} has no simulation_started event", 66)
    if started.scenario_name != scenario:  # type: ignore[attr-defined]
        raise DeriveError(f"{run_dir} is a {started.scenario_name} run, not {scenario}")  # type: ignore[attr-defined]
    state = read_state(read.events)
    if state.ended:
        raise DeriveError(
            f"run {started.run_id} already ended (simulation_ended); "  # type: ignore[attr-defined]
            "use fork-at-round to play further rounds from it"
        )
    RunLock(run_dir).release()  # refuses while another process writes the log
    store = RunStore(os.path.dirname(os.path.dirname(run_dir.rstrip("/"))) or ".")
    recorded = (
        store.read_json(run_dir, "config.json")
        if store.exists(run_dir, "config.json")
        else started.scenario_config  # type: ignore[attr-defined]
    )
    if not knobs.get("labels") and recorded.get("labels"):
        knobs = {**knobs, "labels": recorded["labels"]}  # no labels given: the run's are kept
    changes = config_changes(recorded, knobs)
    if changes and not allow_config_change:
        listed = ", ".join(
            f"{k} {json.dumps(v['recorded'])} -> {json.dumps(v['now'])}" for k, v in changes.items()
        )
        raise DeriveError(
            f"the config differs from the one the run recorded ({listed}); "
            "pass --allow-config-change to resume under the new one"
        )
    run_id = started.run_id  # type: ignore[attr-defined]
    claimed = ClaimedRun(
        run_id=run_id, url=run_dir.rstrip("/"), timestamp=int(run_id.rsplit("/", 1)[-1])
    )
    return ResumePoint(claimed, state, changes)
