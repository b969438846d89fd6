"""``glossogen serve`` on 127.0.0.1 for the browser and route tests, and their run folders.

Two ways, by what a test is about. :func:`serving_here` serves the command's app (the same
``create_app``, on a socket bound by the command's own ``listen``) with uvicorn in a thread of
the test's process: for the pages and routes, where the process is not what is tested (a
``glossogen serve`` process imports glossogen, FastAPI and the MCP SDK again, about 1.5 CPU-s
each: issue 27). :func:`serving` starts the real command: for its log, its environment and its
process (``tests/server/test_sse_disconnect.py``, the token rule and the access log in
``test_browser_http.py`` and ``test_export_routes.py``).
"""

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

from tests.fixtures.polling import wait_until

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


@contextmanager
def serving_here(runs_dir: str) -> Iterator[str]:
    """Serve what ``glossogen serve --runs-dir runs_dir --port 0`` serves, from this process.

    The command's app (:func:`glossogen.server.create_app` over the runs directory made
    absolute, the token from ``GLOSSOGEN_SERVE_TOKEN`` as the command reads it) on a loopback
    socket bound by the command's own ``listen`` on a port the OS picks, served by uvicorn in a
    thread; yields its base URL once uvicorn has started. The server is stopped however the
    block exits: asked to exit as SIGTERM asks the command (open requests end first), forced
    after 30 s as the command is then killed.
    """
    import uvicorn

    from glossogen.cli.serve import TOKEN_VARIABLE, listen, resolve
    from glossogen.server import create_app

    host = "127.0.0.1"
    listener = listen(host, 0, resolve(host, 0))
    runs = runs_dir if "://" in runs_dir else os.path.abspath(runs_dir)
    app = create_app(runs, token=os.environ.get(TOKEN_VARIABLE) or None, host=host)
    # No log configuration of uvicorn's own (the test process keeps pytest's), no access log.
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:

        def listening() -> bool:
            assert thread.is_alive() or server.started, "uvicorn ended before it started"
            return server.started

        wait_until(listening, "uvicorn to start serving")
        yield f"http://{host}:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)  # bound: a teardown's, then forced (as the command is killed)
        if thread.is_alive():
            server.force_exit = True
            thread.join()
        listener.close()


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
