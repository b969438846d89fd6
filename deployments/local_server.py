"""Start a real ``prefect server`` on 127.0.0.1 for tests, benchmarks and local sweeps.

Used where no ``PREFECT_API_URL`` is configured and the ephemeral server will not do (it is
slow to start on 2 cores and starts once per process). The server gets a throwaway
``PREFECT_HOME`` and is stopped when the context exits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

QUIET_ENV = {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
STARTUP_TIMEOUT_SECONDS = 180.0

PLAYING_ONLY_SERVICES = {
    f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false"
    for name in (
        "SCHEDULER",  # deployment schedules: none is deployed to such a server
        "LATE_RUNS",  # scheduled flow runs no worker picked up: no worker polls it
        "FOREMAN",  # worker and work pool health: no worker
        "PAUSE_EXPIRATIONS",  # no flow pauses
        "CLEANUP_RECONCILER",  # workers' cleanup deliveries: no worker
        "TRIGGERS",  # automations: none is created on such a server
        "EVENT_PERSISTER",  # events kept for the UI and /events: nothing reads them back
        "TASK_RUN_RECORDER",  # task runs rebuilt from events for the UI: nothing reads them
    )
}
"""Server services a server that only plays flows in-process does not need, turned off.

Flow runs, their states, artifacts, logs and concurrency limits are written through the API
itself and stay; so do cancellation cleanup and the repossessor (expired concurrency leases).
For the first step of the test command (``tests/__main__.py``), whose flows run in the test
processes: its tests read back flow runs, states and artifacts, never task runs, events or
automations (those are ``tests/orchestration``'s, whose servers keep the services of workers,
automations and events: ``tests/fixtures/prefect_server.ORCHESTRATION_SERVER_SETTINGS``).
"""


@contextmanager
def local_prefect_server(
    database_url: str | None = None, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Start a Prefect server on 127.0.0.1, yield its API URL once healthy, stop it on exit.

    The server takes its port from the OS when it binds (``--port 0``, read back from its log:
    :func:`glossogen.cli._server.start_prefect_server`), so no other process can take the port
    between a pick and the bind. ``database_url``: a SQLAlchemy URL for the server's database
    (e.g. from :func:`deployments.local_postgres.local_postgres`); the default is a SQLite file
    in the server's throwaway ``PREFECT_HOME``. ``env``: settings of the server on top of this
    process's environment (e.g. :data:`PLAYING_ONLY_SERVICES`).

    Raises:
        RuntimeError: the server exited or was not healthy within 180 seconds (its log path is
            in the message).
    """
    from glossogen.cli._server import start_prefect_server

    home = Path(tempfile.mkdtemp(prefix="glossogen-prefect-"))
    server_env = {**os.environ, **QUIET_ENV, **(env or {}), "PREFECT_HOME": str(home)}
    if database_url:
        server_env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = database_url
    server, api_url = start_prefect_server(server_env, home / "server.log", STARTUP_TIMEOUT_SECONDS)
    try:
        yield api_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    # Reached on a clean exit only: a failure keeps the home its message may name (the log).
    shutil.rmtree(home, ignore_errors=True)


class ProcessWorker:
    """A ``prefect worker`` (type process) serving one work pool, started by :func:`process_worker`.

    Attributes:
        pool: The work pool it polls.
        name: Its worker name on the server.
        process: The worker process (its own session: ``kill`` reaches it and nothing else).
        log_path: Where its output goes.
    """

    def __init__(self, pool: str, name: str, process: subprocess.Popen, log_path: Path) -> None:
        """Keep the handles of a started worker."""
        self.pool, self.name, self.process, self.log_path = pool, name, process, log_path

    def kill(self) -> None:
        """SIGKILL the worker (as a lost machine would); flow runs it started keep running."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=20)

    def stop(self) -> None:
        """Stop the worker gracefully (SIGTERM, then SIGKILL after 20 seconds)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


WORKER_QUERY_SECONDS = 2
"""How often a test or bench worker polls for flow runs (Prefect's default is 10 s).

Each poll costs the server, not the worker: measured on a PostgreSQL-backed server with three
idle process workers, polling every second took the server 0.071 CPU-s per second against
0.014 with none (the poll's query and the deployments and queues it marks ready), the workers
0.007 together. Every 2 s a flow run waits 1 s for a worker on average, every second 0.5 s."""

LOG_BATCH_SECONDS = 0.5
"""How often a test or bench worker and its flow runs send their queued log lines to the server
(Prefect's default is 2 s): tests read a worker's report of a crash from the flow run's logs."""


def _worker_online(api_url: str, pool: str, name: str) -> bool:
    import json

    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{api_url}/work_pools/{pool}/workers/filter",
        data=b"{}",
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 (loopback)
            workers = json.loads(response.read())
    except OSError:
        return False
    return any(w.get("name") == name and w.get("status") == "ONLINE" for w in workers)


@contextmanager
def process_worker(
    api_url: str,
    pool: str,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    name: str | None = None,
) -> Iterator[ProcessWorker]:
    """Start a process worker for ``pool`` on 127.0.0.1; yield it once online; stop it on exit.

    The worker polls every ``WORKER_QUERY_SECONDS``, it and its flow runs send their logs every
    ``LOG_BATCH_SECONDS``, and its flow runs inherit ``env`` (e.g. stub model URLs and keys) on
    top of this process's environment.

    Raises:
        RuntimeError: the worker exited or was not online within 120 seconds (log path inside).
    """
    name = name or f"{pool}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    log_path = Path(tempfile.mkdtemp(prefix="glossogen-worker-")) / "worker.log"
    worker_env = {
        **os.environ,
        **QUIET_ENV,
        **(env or {}),
        "PREFECT_API_URL": api_url,
        "PREFECT_WORKER_QUERY_SECONDS": str(WORKER_QUERY_SECONDS),
        "PREFECT_LOGGING_TO_API_BATCH_INTERVAL": str(LOG_BATCH_SECONDS),
        "PREFECT_WORKER_WEBSERVER_HOST": "127.0.0.1",
    }
    # The pool's flow runs start as ``python -m prefect.engine`` (pools.ENGINE_COMMAND), the
    # python on the worker's PATH: this interpreter's folder leads it, so a suite run with its
    # environment not activated (``.venv/bin/python -m pytest``) plays them on it, not on the
    # machine's python (no Prefect there: every flow run crashed as it started).
    here = str(Path(sys.executable).parent)
    worker_env["PATH"] = os.pathsep.join([here, worker_env.get("PATH", os.defpath)])
    command = [sys.executable, "-m", "glossogen._prefect_cli", "worker", "start", "--pool", pool,
               "--type", "process", "--name", name]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(  # noqa: S603 (Prefect's own CLI, no shell)
            command,
            env=worker_env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = ProcessWorker(pool, name, process, log_path)
    try:
        deadline = time.monotonic() + 120
        while not _worker_online(api_url, pool, name):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker for {pool} did not come online; see {log_path}")
            time.sleep(0.5)  # polling a real worker's start-up
        yield worker
    finally:
        worker.stop()
    shutil.rmtree(log_path.parent, ignore_errors=True)  # a failure keeps the log, as above
