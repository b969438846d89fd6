"""A temporary Prefect server that a terminal's Ctrl-C does not reach.

With no ``PREFECT_API_URL``, Prefect starts a temporary server as a child process in the CLI's
process group, so the Ctrl-C meant for ``glossogen sweep`` kills the server too, and every run
still in flight then spends its cancellation retrying a dead API instead of ending its log.
``glossogen sweep`` starts that server itself with ``prefect server start`` (Prefect's own
command) in a session of its own, points the flow at it, and stops it once the sweep is over.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

HEALTH_POLL_SECONDS = 0.5
"""Interval between health checks while the server starts (a real process starting up)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(api_url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{api_url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class DetachedServer:
    """A ``prefect server start`` child in its own session (see the module docstring).

    Attributes:
        api_url: ``http://127.0.0.1:<port>/api``.
        process: The server process.
    """

    api_url: str
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, timeout_seconds: float) -> DetachedServer:
        """Start the server and wait (bounded) until its API answers ``/health``.

        Raises:
            RuntimeError: it exited, or was not healthy within ``timeout_seconds``.
        """
        port = _free_port()
        env = {**os.environ, "PREFECT_UI_ENABLED": "false"}
        env.pop("PREFECT_API_URL", None)
        process = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start"]
            + ["--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C reaches its process group only
        )
        server = cls(f"http://127.0.0.1:{port}/api", process)
        deadline = time.monotonic() + timeout_seconds
        while not _healthy(server.api_url):
            code = process.poll()
            if code is not None:
                raise RuntimeError(
                    f"the temporary Prefect server exited (code {code}) before it answered; "
                    "`prefect server start` shows why"
                )
            if time.monotonic() > deadline:
                server.stop(send_queued=False)
                raise RuntimeError(
                    f"the temporary Prefect server did not start within {timeout_seconds:g} s"
                )
            time.sleep(HEALTH_POLL_SECONDS)
        return server

    def stop(self, send_queued: bool = True) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s); idempotent.

        First (unless ``send_queued`` is False: a Ctrl-C leaving at once) the logs and events
        this process queued for it are sent, at most 5 s each, so that nothing is retried
        against the stopped server at exit.
        """
        if self.process.poll() is not None:
            return
        if send_queued:
            from flows.runtime import send_queued as send

            send()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
