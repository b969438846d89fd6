"""Claiming a run's folder, ``<runs_dir>/<scenario>/<unix_ts>/``, and its config files at once.

A launcher checks the runs directory (:func:`check_runs_dir`), then claims the folder and
writes ``config.json`` and ``labels.json`` into it (:func:`claim_folder`); :func:`claim_run`
also announces the run to the observers. A failure leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import time

from glossogen import exit_codes
from glossogen.launch._observers import notify
from glossogen.launch._plan import LaunchError, RunConfig
from glossogen.storage import (
    CONFIG,
    LABELS,
    RunFolder,
    RunStore,
    StorageError,
    join,
    nearest_existing,
)

EXIT_UNREADABLE = int(exit_codes.UNREADABLE)
EXIT_TRANSPORT = int(exit_codes.TRANSPORT)


def check_runs_dir(runs_dir: str) -> None:
    """Refuse a ``--runs-dir`` where no run folder can be made; creates nothing.

    Raises:
        LaunchError: 66 for a local path that is a file or not writable, 69 for remote
            storage that is unreachable, refuses the credentials or lacks the bucket.
    """
    store = RunStore(runs_dir)
    try:
        store.check_usable()
    except StorageError as exc:
        raise LaunchError(str(exc), EXIT_UNREADABLE if store.local else EXIT_TRANSPORT) from None


def claim_run(config: RunConfig, runs_dir: str, now_unix: int | None = None) -> RunFolder:
    """Claim ``<runs_dir>/<scenario>/<unix_ts>/`` and write ``config.json`` and ``labels.json``."""
    folder = claim_folder(config, runs_dir, now_unix)
    notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    return folder


async def claim_run_async(
    config: RunConfig, runs_dir: str, now_unix: int | None = None
) -> RunFolder:
    """:func:`claim_run` with its storage work (a folder, two fsync'd files) in a worker thread.

    Runs that share one event loop (an in-process sweep) are not held up by the disk: an fsync
    can hold the loop for tens of milliseconds on a loaded machine (``bench/sweep_throughput.py``).
    """
    folder = await asyncio.to_thread(claim_folder, config, runs_dir, now_unix)
    notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    return folder


def claim_folder(config: RunConfig, runs_dir: str, now_unix: int | None = None) -> RunFolder:
    """Claim the run's folder and write its config files, all or nothing, announcing nothing.

    For a launcher that names the run before a worker plays it (a sweep through deployments),
    the worker's flow run takes the folder as it is and announces the run when it starts.

    Raises:
        LaunchError: 66 when a local runs dir cannot be created or written (the folder is
            never made), 69 when the storage fails part-way (a full disk; remote storage): the
            claimed folder and what was written into it are removed, so nothing is left behind.
    """
    store = RunStore(runs_dir)
    existed = nearest_existing(store.runs_dir) if store.local else ""
    try:
        folder = store.claim_run_dir(
            config.scenario, int(now_unix if now_unix is not None else time.time())
        )
    except StorageError as exc:
        store.remove_empty_folders(join(store.runs_dir, config.scenario), existed)
        code = EXIT_UNREADABLE if store.local else EXIT_TRANSPORT
        raise LaunchError(f"cannot claim a run folder: {exc}", code) from None
    try:
        folder.write_json(CONFIG, config.recorded_knobs)
        folder.write_json(LABELS, config.labels)
    except StorageError as exc:
        store.release_claim(folder, (CONFIG, LABELS), keep=existed)
        raise LaunchError(
            f"storage failed while claiming {folder.url} (removed again): {exc}", EXIT_TRANSPORT
        ) from None
    return folder
