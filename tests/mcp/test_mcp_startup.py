"""``glossogen mcp`` starts without the engine, pydantic-ai or polars.

A desktop client starts a stdio server per session, and the tests start tens: building the
server registers every tool's schema (their arguments and typed answers), none of which needs
the engine (pydantic-ai), the analysis engine (polars, numpy) or Prefect; a tool that plays,
derives or analyses imports them when it is called. Measured: 1.66 CPU-s to start and end a
stdio server before, 0.89 after.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.mcp.conftest import server_env

PROBE = """
import sys
from glossogen.cli.mcp import mcp
code = mcp(sys.argv[1])
heavy = ("glossogen.engine", "glossogen.derive._state", "glossogen.analysis._engine",
         "pydantic_ai", "polars", "numpy", "prefect", "fastapi")
print(code, sorted(name for name in heavy if name in sys.modules))
"""

TOOLS = sorted([
    "list_scenarios", "get_scenario", "get_knobs_schema", "get_knobs_preset", "list_runs",
    "get_run", "read_run_events", "get_agent_transcript", "estimate_run", "start_run",
    "fork_run", "replace_agent", "cross_run_replace_agent", "resume_run", "stop_run",
    "evaluate_run", "evaluate_runs", "export_runs", "analyze_runs", "list_analysis_fields",
])  # fmt: skip


def test_the_stdio_server_serves_every_tool_without_the_engine_polars_or_prefect(
    tmp_path: Path,
) -> None:
    """The server starts, lists every tool to a client and ends on EOF; nothing heavy loaded."""
    runs = tmp_path / "runs"
    runs.mkdir()
    initialize = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}\n'
    )
    listing = (
        '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    )
    # As a client does: each request's answer is read before the next is sent, and stdin is
    # closed only once every answer came (a server ending on EOF may drop a request it has
    # not answered yet: written all at once, the tools/list answer was lost under load).
    server = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(runs)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=server_env(), cwd=tmp_path,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(initialize)
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    server.stdin.write(listing)
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    server.stdin.close()
    loaded = server.stdout.read().splitlines()
    stderr = server.stderr.read() if server.stderr else ""
    assert server.wait() == 0, stderr[-2000:]
    assert loaded == ["0 []"]
    assert answer["id"] == 2
    assert sorted(tool["name"] for tool in answer["result"]["tools"]) == TOOLS
