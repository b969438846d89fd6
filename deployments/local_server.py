"""Start a real ``prefect server`` on 127.0.0.1 for tests, benchmarks and local sweeps.

Used where no ``PREFECT_API_URL`` is configured and the ephemeral server will not do (it is
slow to start on 2 cores and starts once per process: STACK.md). The server gets a throwaway
``PREFECT_HOME`` and is stopped when the context exits.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

QUIET_ENV = {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
STARTUP_TIMEOUT_SECONDS = 180.0


def free_port() -> int:
    """Return a TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def is_healthy(api_url: str) -> bool:
    """True when ``<api_url>/health`` answers 200 within 2 seconds."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:  # noqa: S310 (loopback)
            return response.status == 200
    except OSError:
        return False


@contextmanager
def local_prefect_server(port: int | None = None) -> Iterator[str]:
    """Start a Prefect server on 127.0.0.1, yield its API URL once healthy, stop it on exit.

    Raises:
        RuntimeError: the server exited or was not healthy within 180 seconds (its log path is
            in the message).
    """
    home = Path(tempfile.mkdtemp(prefix="glossogen-prefect-"))
    port = port or free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, **QUIET_ENV, "PREFECT_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)
    with open(home / "server.log", "wb") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "prefect",
                "server",
                "start",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
            while not is_healthy(api_url):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"prefect server did not come up; see {home / 'server.log'}")
                time.sleep(0.5)  # polling a real server's start-up
            yield api_url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
