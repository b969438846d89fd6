"""Handing a claimed run to a player, and stopping a live one.

A new run's folder is claimed before anything plays (``claim_folder``), so the caller gets its
run id at once. It then plays on the provider's ``simulate-<provider>`` deployment when a worker
serves it, else in a detached local process of its own (``python -m glossogen.mcp.play``, which
reads the ``RunConfig`` on stdin and plays the ``simulate`` flow into that folder). A derived or
resumed run plays as ``glossogen run <scenario> --resume <folder>``, detached, as the derived-run
commands do. Prefect is imported inside the calls that need it (this room is a surface, like
the CLI: it reaches ``tasks/`` and ``flows/`` lazily).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from glossogen.launch import RunConfig, claim_folder
from glossogen.storage import CONFIG, LABELS, LOCK_NAME, RunFolder, StorageError


class StopError(Exception):
    """A run that cannot be stopped; ``str()`` is the one-line reason, ``exit_code`` the code."""

    def __init__(self, message: str, exit_code: int) -> None:
        """Keep the one-line ``message`` and the process ``exit_code``."""
        super().__init__(message)
        self.exit_code = exit_code


def _detach(args: list[str], folder: RunFolder, stdin: bytes | None = None) -> int:
    """Start ``python <args>`` in a session of its own, its output in the folder's stdout log."""
    log_path = folder.local_path(folder.stdout_log_name) or os.devnull
    with open(log_path, "ab") as log:
        child = subprocess.Popen(  # noqa: S603 (our own module, no shell)
            [sys.executable, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            start_new_session=True,  # the server's own Ctrl-C or exit does not reach the run
        )
    if stdin is not None and child.stdin is not None:
        child.stdin.write(stdin)
        child.stdin.close()
    return child.pid


async def launch_new(config: RunConfig, runs_dir: str) -> tuple[RunFolder, str]:
    """Claim the run's folder, then start it on a worker or in a detached process.

    Returns:
        The claimed folder and how it was launched (``deployment:<name>`` or
        ``local_process:<pid>``).

    Raises:
        StorageError: the folder could not be claimed; nothing was started.
    """
    folder = claim_folder(config, runs_dir)
    name = f"simulate/simulate-{config.provider}"
    if os.environ.get("PREFECT_API_URL"):
        from tasks.deployments import create_flow_run, served

        if await served([name]):
            parameters = {"config": config.model_dump(mode="json"), "run_dir": folder.url}
            try:
                await create_flow_run(name, parameters, idempotency_key=f"mcp:{folder.url}")
            except BaseException:
                folder.discard_unstarted()
                raise
            return folder, f"deployment:{name}"
    payload = config.model_dump_json().encode()
    try:
        pid = _detach(["-m", "glossogen.mcp.play", folder.url], folder, stdin=payload)
    except BaseException:
        # Nothing played in it: the claim (and the stdout log just opened) goes again.
        folder.discard_unstarted((CONFIG, LABELS, ".claim", folder.stdout_log_name))
        raise
    return folder, f"local_process:{pid}"


def launch_resume(folder: RunFolder, scenario: str) -> str:
    """Continue ``folder`` as ``glossogen run <scenario> --resume <folder>``, detached."""
    pid = _detach(["-m", "glossogen", "run", scenario, "--resume", folder.url], folder)
    return f"local_process:{pid}"


def stop_writer(folder: RunFolder) -> int:
    """Ask the live writer of ``folder`` to stop (SIGINT, as a Ctrl-C) and return its pid.

    The writer ends the round it is in, logs ``simulation_ended`` with status ``interrupted``
    and exits; the run can then be resumed. Nothing is written here.

    Raises:
        StopError: 66 when the folder has no log; 65 when no live process writes it (nothing to
            stop) or the folder is remote (its lock records no pid here).
    """
    path = folder.local_path(LOCK_NAME)
    if path is None:  # asked first: a remote folder is not read (no credentials needed)
        raise StopError(f"{folder.url} is remote: glossogen stop reaches local writers only", 65)
    if not folder.has_log():
        raise StopError(f"{folder.url} holds no run log", 66)
    if not folder.is_locked():
        raise StopError(f"run {folder.run_id} has no live writer: nothing to stop", 65)
    try:
        with open(path, encoding="utf-8") as lock:
            pid = int(lock.read(32).strip())
    except (OSError, ValueError):
        raise StopError(f"run {folder.run_id}: its writer lock records no pid", 65) from None
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        raise StopError(f"run {folder.run_id}: its writer (pid {pid}) is gone", 65) from None
    except PermissionError:
        raise StopError(f"run {folder.run_id}: not allowed to signal pid {pid}", 65) from None
    return pid


__all__ = ["StopError", "StorageError", "launch_new", "launch_resume", "stop_writer"]
