"""Langfuse tracing against a real OTLP/HTTP collector on 127.0.0.1 (http.server in a thread)."""

from __future__ import annotations

import asyncio
import base64
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from glossogen.tracing import (
    TracingHandle,
    agent_attributes,
    configure_tracing,
    run_span,
    set_round,
    tracing_capabilities,
)
from tests.fixtures.parts import needs_part
from tests.fixtures.polling import wait_until

needs_sdk = needs_part(
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "dependencies opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http",
)
PUBLIC, SECRET = "pk-lf-public-0123", "sk-lf-secret-4567"
OTEL_PATH = "/api/public/otel/v1/traces"


class Collector:
    """A tiny OTLP/HTTP receiver: records every POST, answers ``status``.

    After :meth:`hang_up` it closes every connection unanswered, as a host that went away, and
    its port stays its own (a port given up could be taken by another process meanwhile).
    """

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.hung_up = False
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def handle(self) -> None:
                if not collector.hung_up:
                    super().handle()

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                collector.requests.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                self.send_response(collector.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def hang_up(self) -> None:
        """Close every connection from now on without reading or answering it."""
        self.hung_up = True

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[tuple[str, dict[str, Any]]]:
        """(name, attributes) of every span received, decoded from the OTLP protobuf bodies."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        found = []
        for path, _, body in self.requests:
            assert path == OTEL_PATH
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        found.append((span.name, {a.key: _value(a.value) for a in span.attributes}))
        return found


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    yield server
    server.stop()


def _env(host: str) -> dict[str, str]:
    return {"LANGFUSE_PUBLIC_KEY": PUBLIC, "LANGFUSE_SECRET_KEY": SECRET, "LANGFUSE_HOST": host}


def _model() -> FunctionModel:
    """Calls the ``note`` tool once, then answers."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("note", {"text": "hello"})])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond, model_name="fn-model")


def _agent(handle: TracingHandle | None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(_model(), capabilities=tracing_capabilities(handle))

    @agent.tool_plain
    def note(text: str) -> str:
        return f"noted {text}"

    return agent


def _no_secret_in(text: str) -> None:
    token = base64.b64encode(f"{PUBLIC}:{SECRET}".encode()).decode()
    for secret in (PUBLIC, SECRET, token):
        assert secret not in text


def wait_flushed() -> None:
    """Return once every tracing flush has ended, so the collector holds all it will receive.

    A shutdown waits a bounded time for its flush, then lets the flush go on in its thread
    (``glossogen-tracing``): what reached the collector is read after that thread, not after a
    time a loaded machine can pass.
    """
    wait_until(
        lambda: not any(t.name == "glossogen-tracing" for t in threading.enumerate()),
        "the tracing flush to end",
    )


def test_unset_keys_do_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert configure_tracing({}) is None
    assert configure_tracing({"LANGFUSE_HOST": "", "PATH": "/bin"}) is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_partial_keys_warn_by_name_only() -> None:
    handle = configure_tracing({"LANGFUSE_PUBLIC_KEY": PUBLIC, "LANGFUSE_HOST": "http://x"})
    assert handle is not None and handle.instrumentation is None
    assert handle.warning == "Langfuse tracing off: LANGFUSE_SECRET_KEY not set"


@needs_sdk
def test_spans_carry_session_and_tags(collector: Collector) -> None:
    handle = configure_tracing(_env(collector.host + "/"))
    assert handle is not None and handle.warning is None and handle.instrumentation is not None
    assert handle.endpoint == collector.host + OTEL_PATH

    async def play() -> list[str]:
        with run_span(handle, "run-42", "veyru"):
            set_round(3)
            agents = {"alice": _agent(handle), "bob": _agent(handle)}

            async def one(agent_id: str) -> str:
                with agent_attributes(agent_id, f"role-{agent_id}", "fn-model", "function"):
                    return (await agents[agent_id].run("go")).output

            return await asyncio.gather(one("alice"), one("bob"))

    assert asyncio.run(play()) == ["done", "done"]
    handle.shutdown()
    handle.shutdown()  # idempotent
    wait_flushed()

    probe, *exports = collector.requests
    assert probe[2] == b""  # the reachability check: an empty OTLP export
    for _, headers, _ in collector.requests:
        token = base64.b64encode(f"{PUBLIC}:{SECRET}".encode()).decode()
        assert headers["authorization"] == f"Basic {token}"
    spans = collector.spans()
    names = {name for name, _ in spans}
    assert names == {"invoke_agent agent", "chat fn-model", "execute_tool note"}
    by_agent: dict[str, int] = {}
    for name, attrs in spans:
        agent_id = attrs["glossogen.agent_id"]
        by_agent[agent_id] = by_agent.get(agent_id, 0) + 1
        assert attrs["langfuse.session.id"] == "run-42", name
        assert attrs["session.id"] == "run-42"
        assert attrs["glossogen.scenario"] == "veyru"
        assert attrs["glossogen.round"] == 3
        assert attrs["glossogen.role"] == f"role-{agent_id}"
        assert attrs["glossogen.model"] == "fn-model"
        assert attrs["glossogen.provider"] == "function"
        assert attrs["langfuse.trace.metadata.round"] == "3"
        assert attrs["langfuse.user.id"] == agent_id
        assert attrs["langfuse.trace.tags"] == [
            "scenario:veyru",
            f"agent_id:{agent_id}",
            f"role:role-{agent_id}",
            "model:fn-model",
            "provider:function",
            "round:3",
        ]
    # each agent: the agent run, two model requests and one tool call
    assert by_agent == {"alice": 4, "bob": 4}


@needs_sdk
def test_set_round_reaches_running_tasks(collector: Collector) -> None:
    handle = configure_tracing(_env(collector.host))
    assert handle is not None and handle.instrumentation is not None
    agent = _agent(None)
    agent.instrument = handle.instrumentation  # the other way to switch tracing on

    async def play() -> None:
        with run_span(handle, "run-7", "prisoners_dilemma", round_number=1):
            go = asyncio.Event()

            async def seat() -> None:  # started in round 1, calls in round 2
                await go.wait()
                with agent_attributes("carol", "player", "fn-model", "function"):
                    await agent.run("go")

            task = asyncio.create_task(seat())
            set_round(2)
            go.set()
            await task

    asyncio.run(play())
    handle.shutdown()
    wait_flushed()
    rounds = {attrs["glossogen.round"] for _, attrs in collector.spans()}
    assert rounds == {2}


@needs_sdk
def test_host_down_warns_once_and_run_goes_on(
    caplog: pytest.LogCaptureFixture, refused_port: int
) -> None:
    caplog.set_level(logging.DEBUG)
    port = refused_port
    handle = configure_tracing(_env(f"http://127.0.0.1:{port}"))
    assert handle is not None and handle.instrumentation is None
    assert handle.warning == (
        f"Langfuse tracing off: http://127.0.0.1:{port} is unreachable "
        "(ConnectError: [Errno 111] Connection refused); the run goes on untraced"
    )
    _no_secret_in(handle.warning)
    with run_span(handle, "run-1", "veyru", round_number=1):
        with agent_attributes("alice", "player", "fn-model", "function"):
            result = _agent(handle).run_sync("go")
    handle.shutdown()
    assert result.output == "done"  # the time it adds: bench/tracing_down.py
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    for record in caplog.records:
        _no_secret_in(record.getMessage())


@needs_sdk
def test_rejected_keys_warn_without_secrets() -> None:
    server = Collector(status=401)
    try:
        handle = configure_tracing(_env(server.host))
    finally:
        server.stop()
    assert handle is not None and handle.instrumentation is None
    assert handle.warning == (
        f"Langfuse tracing off: {server.host} rejected the keys (HTTP 401); "
        "the run goes on untraced"
    )


@needs_sdk
def test_host_lost_mid_run_warns_once(
    caplog: pytest.LogCaptureFixture, collector: Collector
) -> None:
    caplog.set_level(logging.DEBUG)
    server = collector
    handle = configure_tracing(_env(server.host))
    server.hang_up()  # up at start, gone before the first export
    assert handle is not None and handle.instrumentation is not None
    agent = _agent(handle)
    with run_span(handle, "run-2", "veyru", round_number=1):
        with agent_attributes("alice", "player", "fn-model", "function"):
            for _ in range(3):
                assert agent.run_sync("go").output == "done"
    # Exports run in the exporter's thread, so the run never waits on them (the time a lost
    # host adds is measured in bench/tracing_down.py, not here).
    handle.shutdown(timeout_seconds=6)
    wait_flushed()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        f"Langfuse export to {server.host} failed; spans are dropped while it fails "
        "(not reported again)"
    ]
    for record in caplog.records:
        _no_secret_in(record.getMessage())


MISSING_SDK = """
import sys
sys.modules["opentelemetry.sdk"] = None  # the package is absent: importing it raises ImportError
from glossogen.tracing import configure_tracing
handle = configure_tracing({"LANGFUSE_PUBLIC_KEY": %r, "LANGFUSE_SECRET_KEY": %r,
                            "LANGFUSE_HOST": "http://127.0.0.1:9"})
print(handle.instrumentation is None)
print(handle.warning)
"""


def test_missing_sdk_degrades() -> None:
    # A fresh interpreter where opentelemetry.sdk cannot be imported, as on a machine without
    # the package: glossogen.tracing is imported there for real, nothing of it is replaced.
    done = subprocess.run(
        [sys.executable, "-c", MISSING_SDK % (PUBLIC, SECRET)],
        capture_output=True,
        text=True,
        check=True,
    )
    instrumentation_off, warning = done.stdout.strip().splitlines()
    assert instrumentation_off == "True"
    assert warning == (
        "Langfuse tracing off (http://127.0.0.1:9): install opentelemetry-sdk and "
        "opentelemetry-exporter-otlp-proto-http (missing module opentelemetry.sdk.trace)"
    )
    _no_secret_in(warning)
