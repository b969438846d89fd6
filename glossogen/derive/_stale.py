"""Finding runs that stopped without ending: what the reconcile flow resumes (crash recovery).

:func:`survey_unfinished_runs` reads every run folder's log and lock and reports the runs that
have not finished: no ``simulation_ended`` yet, or one whose status is resumable
(``interrupted``, ``error``). The reconcile flow joins this survey with what Prefect knows of each
run's flow run (crashed, hung, cancelled by reconcile) to decide what to resume.
:func:`find_stale_runs` is the Prefect-free rule: silent past a threshold and not locked.
"""

from __future__ import annotations

from dataclasses import dataclass

from glossogen.eventlog import RESUMABLE, RunView
from glossogen.storage import RunStore


@dataclass(frozen=True)
class StaleRun:
    """A run that has not finished, as its folder shows it.

    Attributes:
        run_id: ``<scenario>/<unix_ts>``.
        run_url: The run folder (local path or fsspec URL).
        scenario: Scenario name.
        model: Default model the run was launched with (``simulation_started``).
        provider: Default provider the run was launched with.
        silent_seconds: Seconds since the log was last written.
        locked: True while a live process holds the folder's writer lock (a local ``flock``,
            an S3 lease): every process that writes a run's log holds it.
        ended_status: Status of the ``simulation_ended`` that closes the log (``interrupted``
            or ``error``), or None when the log has not ended.
        last_event_id: The ``event_id`` of the log's last line, or "" (a key for launching its
            resume once: it changes as soon as the run writes again).
    """

    run_id: str
    run_url: str
    scenario: str
    model: str
    provider: str
    silent_seconds: float
    locked: bool = False
    ended_status: str | None = None
    last_event_id: str = ""


def survey_unfinished_runs(runs_dir: str, now_unix: float) -> list[StaleRun]:
    """Return every run under ``runs_dir`` that has not finished, oldest first.

    A run is unfinished when its log (read as :class:`~glossogen.eventlog.RunView`) has not
    ended (no ``simulation_ended``, or a ``run_resumed`` after the last one) or ended with a
    resumable status (``interrupted``, ``error``). Runs without a log or without
    ``simulation_started`` (a launch that died before its first event) are left out: there is
    nothing to resume.

    Args:
        runs_dir: Runs root (local folder or fsspec URL).
        now_unix: The current time, Unix seconds (injected so tests need no sleeping).

    Raises:
        StorageError: ``runs_dir`` cannot be listed.
    """
    store = RunStore(runs_dir)
    found: list[StaleRun] = []
    for folder in store.runs():
        modified = folder.log_modified()
        if modified is None:
            continue
        view = RunView.load(folder.log_url)
        if view.started is None:
            continue
        ended = view.ended
        if ended is not None and ended.status not in RESUMABLE:
            continue
        found.append(
            StaleRun(
                run_id=folder.run_id,
                run_url=folder.url,
                scenario=folder.scenario,
                model=view.started.model,
                provider=view.started.provider,
                silent_seconds=max(0.0, now_unix - modified),
                locked=folder.is_locked(),
                ended_status=ended.status if ended is not None else None,
                last_event_id=view.events[-1].event_id,
            )
        )
    return found


def find_stale_runs(runs_dir: str, silent_seconds: float, now_unix: float) -> list[StaleRun]:
    """Return the runs under ``runs_dir`` to resume when nothing else is known, oldest first.

    A run qualifies when its log has no ``simulation_ended``, was last written more than
    ``silent_seconds`` (seconds) before ``now_unix`` (Unix seconds), and no live process holds
    its lock. Runs without a log (a launch that died before its first event) are left alone.

    Raises:
        StorageError: ``runs_dir`` cannot be listed.
    """
    return [
        run
        for run in survey_unfinished_runs(runs_dir, now_unix)
        if run.ended_status is None and not run.locked and run.silent_seconds >= silent_seconds
    ]
