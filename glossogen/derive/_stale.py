"""Finding runs that stopped without ending: what the reconcile flow resumes."""

from __future__ import annotations

from dataclasses import dataclass

from glossogen.derive._resume import RunLock
from glossogen.derive._state import DeriveError
from glossogen.eventlog import iter_event_dicts
from glossogen.storage import RunStore, join, open_fs


@dataclass(frozen=True)
class StaleRun:
    """A run with no ``simulation_ended`` whose log has been silent long enough."""

    run_id: str
    run_url: str
    scenario: str
    model: str
    provider: str
    silent_seconds: float


def find_stale_runs(runs_dir: str, silent_seconds: float, now_unix: float) -> list[StaleRun]:
    """Return the runs under ``runs_dir`` to resume, oldest first.

    A run qualifies when its log has no ``simulation_ended``, was last written more than
    ``silent_seconds`` before ``now_unix``, and no live process holds its lock. Runs without a
    log (a launch that died before its first event) are left alone.
    """
    store = RunStore(runs_dir)
    found: list[StaleRun] = []
    for run_id in store.list_runs():
        scenario = run_id.split("/", 1)[0]
        url = store.run_url(run_id)
        log = join(url, f"{scenario}.jsonl")
        fs, path = open_fs(log)
        if not fs.exists(path):
            continue
        modified = fs.modified(path).timestamp()
        if now_unix - modified < silent_seconds:
            continue
        events = list(iter_event_dicts(log))
        if not events or any(e.get("event_type") == "simulation_ended" for e in events):
            continue
        started = next((e for e in events if e.get("event_type") == "simulation_started"), None)
        if started is None:
            continue
        try:
            RunLock(url).release()
        except DeriveError:
            continue  # a live process is writing it
        found.append(
            StaleRun(
                run_id, url, scenario, started["model"], started["provider"], now_unix - modified
            )
        )
    return found
