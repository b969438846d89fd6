"""A real ``glossogen serve`` process on 127.0.0.1 for the browser tests, and their run folders."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

XSS_SCRIPT = "<script>window.__xss = 1</script>"
XSS_IMG = '"><img src=x onerror="window.__xss = 2">'


RUNNING = re.compile(rb"Uvicorn running on (http://127\.0\.0\.1:(\d+)) \(Press CTRL\+C to quit\)")
"""The line ``glossogen serve`` prints once it listens; with ``--port 0`` it names the port the
OS gave it."""


@contextmanager
def serving(
    runs_dir: str, env: dict[str, str] | None = None, log: list[bytes] | None = None
) -> Iterator[str]:
    """Run ``glossogen serve --runs-dir runs_dir --port 0``; yield its base URL once it listens.

    The server binds a port the OS picks and names it in its log: no port is chosen here and
    bound later, which another process of the machine could take in between. ``log``, when
    given, receives every line the server writes (its access log included), complete once the
    block exits. The server is stopped (and reaped) however the block exits.
    """
    server = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "serve", "--runs-dir", runs_dir, "--port", "0"],
        stdout=subprocess.PIPE,  # uvicorn's access lines; its other lines go to stderr
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    lines = log if log is not None else []
    drain: threading.Thread | None = None
    watchdog = threading.Timer(120, server.kill)  # a server that never starts fails the test
    watchdog.start()
    try:
        assert server.stdout is not None
        base = None
        for line in server.stdout:  # uvicorn prints this once its socket listens
            lines.append(line)
            running = RUNNING.search(line)
            if running:
                base = running.group(1).decode()
                break
        if base is None:
            pytest.fail(
                f"glossogen serve exited with {server.wait()}: {b''.join(lines).decode()!r}"
            )
        watchdog.cancel()
        # Drain the rest of its log so a chatty server never blocks on a full pipe.
        drain = threading.Thread(target=lambda: lines.extend(server.stdout), daemon=True)
        drain.start()
        yield base
    finally:
        watchdog.cancel()
        server.terminate()
        try:
            server.wait(timeout=30)  # bound: a teardown's, then SIGKILL
        except subprocess.TimeoutExpired:  # a server that ignores SIGTERM is killed
            server.kill()
            server.wait()
        if drain is not None:
            drain.join(timeout=30)  # bound: a teardown's


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
