"""Clients of the MCP tools through the ``mcp`` SDK: the stdio server as a subprocess, the
streamable HTTP endpoint inside a real ``glossogen serve`` on a port the OS picks, and the same
server built in the test's process (for tests of what a tool answers, not of a process)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from glossogen.cli import main
from glossogen.mcp import build_server
from tests.fixtures.polling import POLL_SECONDS

SCRIPTED = {"model": "scripted", "provider": "scripted"}
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GLOSSOGEN_SERVE_TOKEN")


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a server a test starts: ours, without any provider key or token."""
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    return {**env, **(extra or {})}


@asynccontextmanager
async def stdio_session(runs_dir: Path, cwd: Path) -> AsyncIterator[ClientSession]:
    """A client session with ``glossogen mcp --runs-dir`` started as a subprocess in ``cwd``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "glossogen", "mcp", "--runs-dir", str(runs_dir)],
        env=server_env(),
        cwd=str(cwd),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def in_process_session(runs_dir: Path, cwd: Path) -> AsyncIterator[Client]:
    """A client of the tools ``glossogen mcp --runs-dir`` serves, built in this process
    (:func:`glossogen.mcp.build_server`, the SDK's in-memory transport), in ``cwd`` and without
    any provider key or token, as :func:`stdio_session` starts its server.

    For tests of what a tool answers or refuses: a stdio server is a process that imports
    glossogen, about 3 CPU-s. Tests of the stdio server itself (a fresh process, the runs it
    launches, its lifecycle) use :func:`stdio_session`.
    """
    saved = {key: os.environ.pop(key) for key in KEYS if key in os.environ}
    before = Path.cwd()
    os.chdir(cwd)
    try:
        async with Client(build_server(str(runs_dir))) as client:
            yield client
    finally:
        os.chdir(before)
        os.environ.update(saved)


RUNNING = re.compile(rb"Uvicorn running on http://\S+:(\d+) \(Press CTRL\+C to quit\)")
"""The line ``glossogen serve`` logs once it listens; with ``--port 0``, on the OS's port."""


class Serve:
    """A ``glossogen serve`` subprocess on 127.0.0.1 (or another host), on a port the OS picks.

    It is started with ``--port 0`` and names the port it bound in its log: no port is picked
    here and bound later, which another process of the machine could take in between.
    """

    def __init__(
        self, runs_dir: Path, cwd: Path, host: str = "127.0.0.1", token: str | None = None
    ) -> None:
        self.port: int | None = None
        self.log: list[bytes] = []
        self.host = host
        self.token = token
        env = server_env({"GLOSSOGEN_SERVE_TOKEN": token} if token else None)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "glossogen",
                "serve",
                "--runs-dir",
                str(runs_dir),
                "--host",
                host,
                "--port",
                "0",
            ],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    @property
    def url(self) -> str:
        assert self.port is not None, "wait_healthy() first"
        return f"http://127.0.0.1:{self.port}"

    def wait_healthy(self) -> None:
        """Read its log until it names the port it listens on, then check ``/api/health``.

        Raises:
            AssertionError: it exited, or named no port within 120 s (a real process starting).
        """
        assert self.process.stderr is not None
        watchdog = threading.Timer(120, self.process.kill)  # a server that never starts
        watchdog.start()
        try:
            for line in self.process.stderr:
                self.log.append(line)
                running = RUNNING.search(line)
                if running:
                    self.port = int(running.group(1))
                    break
        finally:
            watchdog.cancel()
        assert self.port is not None, b"".join(self.log).decode()
        # Drain the rest of its log so the server never blocks on a full pipe.
        rest = self.process.stderr
        threading.Thread(target=lambda: self.log.extend(rest), daemon=True).start()
        assert httpx.get(f"{self.url}/api/health", timeout=None).status_code == 200

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)  # bound: a teardown's, then SIGKILL
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def serve(tmp_path: Path, prefect_api: str) -> Iterator[Serve]:
    """A healthy ``glossogen serve`` on loopback over ``tmp_path/runs``."""
    runs = tmp_path / "runs"
    runs.mkdir(exist_ok=True)
    server = Serve(runs, tmp_path)
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()
    assert server.process.returncode is not None


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """A client session over streamable HTTP at ``url`` (``.../mcp``)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession | Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool`` and return its structured result; fail the test on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def refusal(session: ClientSession | Client, tool: str, **arguments: Any) -> str:
    """Call ``tool``, expect a tool error, and return its one-line message (the CLI's)."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    prefix = f"Error executing tool {tool}: "  # the SDK's, before the CLI's one line
    assert text.startswith(prefix), text
    return text.removeprefix(prefix)


async def wait_for_end(session: ClientSession | Client, run_id: str) -> dict[str, Any]:
    """Poll ``get_run`` (a real detached run) until the run has ended; return its detail.

    No wall-clock bound of its own (``tests/fixtures/polling.py`` says why): pytest-timeout
    ends a run that never ends.
    """
    while True:
        detail = await call(session, "get_run", run_id=run_id)
        if detail["status"] not in ("queued", "running", "stopped"):
            return detail
        await asyncio.sleep(POLL_SECONDS)  # polling a real detached process


async def wait_for_a_round(session: ClientSession | Client, run_id: str) -> dict[str, Any]:
    """Poll ``get_run`` (a real detached run) until it has played a round; return its detail.

    It fails at once when the run ends first (no wall-clock bound: see ``wait_for_end``).
    """
    while True:
        detail = await call(session, "get_run", run_id=run_id)
        if detail["rounds_played"] >= 1:
            return detail
        assert detail["status"] in ("queued", "running"), detail
        await asyncio.sleep(POLL_SECONDS)  # polling a real detached process


def pid_of(launched: dict[str, Any]) -> int | None:
    """The pid of a run launched as a local process (None: on a deployment)."""
    kind, _, value = launched["launched_via"].partition(":")
    return int(value) if kind == "local_process" else None


def gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie nobody reaped has exited too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def schema_cli(scenario: str) -> dict[str, Any]:
    """What ``glossogen schema <scenario>`` prints, parsed (the CLI's entry in-process: what it
    prints is the point, not a process)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exited:
        main(["schema", scenario])
    assert exited.value.code == 0
    return json.loads(printed.getvalue())
