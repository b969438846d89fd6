"""A real ``glossogen serve`` process on 127.0.0.1 for the browser tests, and their run folders."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

XSS_SCRIPT = "<script>window.__xss = 1</script>"
XSS_IMG = '"><img src=x onerror="window.__xss = 2">'


def free_port() -> int:
    """A TCP port on 127.0.0.1 the OS hands out now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(
    runs_dir: str, env: dict[str, str] | None = None, log: list[bytes] | None = None
) -> Iterator[str]:
    """Run ``glossogen serve --runs-dir runs_dir`` on a free port; yield its base URL.

    ``log``, when given, receives every line the server writes (its access log included),
    complete once the block exits.
    """
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "serve", "--runs-dir", runs_dir, "--port", str(port)],
        stdout=subprocess.PIPE,  # uvicorn's access lines; its other lines go to stderr
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    watchdog = threading.Timer(120, server.kill)  # a server that never starts fails the test
    watchdog.start()
    try:
        assert server.stdout is not None
        for line in server.stdout:  # uvicorn logs this once it accepts connections
            if b"Application startup complete" in line:
                break
        else:
            pytest.fail(f"glossogen serve exited with {server.wait()}")
        watchdog.cancel()
        # Drain the rest of its log so a chatty server never blocks on a full pipe.
        lines = log if log is not None else []
        drain = threading.Thread(target=lambda: lines.extend(server.stdout), daemon=True)
        drain.start()
        yield f"http://127.0.0.1:{port}"
    finally:
        watchdog.cancel()
        server.terminate()
        server.wait(timeout=30)
        if log is not None:
            drain.join(timeout=30)


def plant_message(run_dir: str, scenario: str, texts: list[str]) -> list[str]:
    """Make the first ``len(texts)`` messages of a played run's log say ``texts`` (composed and
    delivered alike): what an agent could have written. Returns their event ids."""
    log = Path(run_dir) / f"{scenario}.jsonl"
    lines = log.read_text().splitlines()
    ids, pending = [], list(texts)
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if pending and obj.get("event_type") == "message_sent":
            text = pending.pop(0)
            obj.update(text=text, delivered_text=text, chars=len(text))
            lines[i] = json.dumps(obj)
            ids.append(obj["event_id"])
    log.write_text("\n".join(lines) + "\n")
    return ids
