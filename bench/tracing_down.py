"""What Langfuse tracing costs a run when its host is down (at start, or lost mid-run).

Times ``RUNS`` agent runs (a pydantic-ai ``FunctionModel``: one tool call, then text) three ways:
the baseline without tracing; tracing configured at a closed port (the start-up probe fails,
tracing is off); tracing to a collector that is stopped right after the probe (every export
fails in the exporter's thread). Each includes ``configure_tracing`` and ``shutdown``.
Prints wall seconds of each and the ratios to the baseline.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/tracing_down.py [RUNS]`` (default 3).
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from glossogen.tracing import (  # noqa: E402
    TracingHandle,
    agent_attributes,
    configure_tracing,
    run_span,
    tracing_capabilities,
)


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("note", {"text": "hello"})])
    return ModelResponse(parts=[TextPart("done")])


def _agent(handle: TracingHandle | None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(_respond, model_name="fn-model"), capabilities=tracing_capabilities(handle)
    )

    @agent.tool_plain
    def note(text: str) -> str:
        return f"noted {text}"

    return agent


def _env(host: str) -> dict[str, str]:
    return {"LANGFUSE_PUBLIC_KEY": "pk-bench", "LANGFUSE_SECRET_KEY": "sk-bench",
            "LANGFUSE_HOST": host}  # fmt: skip


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _runs(handle: TracingHandle | None, runs: int) -> None:
    agent = _agent(handle)
    with run_span(handle, "bench-run", "veyru", round_number=1):
        with agent_attributes("alice", "player", "fn-model", "function"):
            for _ in range(runs):
                agent.run_sync("go")


def timed(way: str, runs: int) -> float:
    """Wall seconds of ``runs`` agent runs under ``way``: none, down_at_start, lost_mid_run."""
    start = time.monotonic()
    handle: TracingHandle | None = None
    if way == "down_at_start":
        handle = configure_tracing(_env(f"http://127.0.0.1:{_closed_port()}"))
    elif way == "lost_mid_run":
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        handle = configure_tracing(_env(f"http://127.0.0.1:{server.server_address[1]}"))
        server.shutdown()
        server.server_close()
    _runs(handle, runs)
    if handle is not None:
        handle.shutdown(timeout_seconds=6)
    return time.monotonic() - start


def main() -> None:
    """Time the three ways and print them with their ratios to the untraced baseline."""
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="?", type=int, default=3)
    runs = parser.parse_args().runs
    timed("none", 1)  # warm-up: imports and the first agent build are not the baseline's
    base = timed("none", runs)
    for way in ("none", "down_at_start", "lost_mid_run"):
        seconds = base if way == "none" else timed(way, runs)
        print(f"{way:14s} {seconds:7.3f} s  ratio {seconds / base:8.1f}")


if __name__ == "__main__":
    main()
