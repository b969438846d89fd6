"""The stub model servers, proven against the real pydantic-ai models over real HTTP.

Findings these tests pin (pydantic-ai 2.68, openai 3.57, anthropic 2.14):

* ``agent.run`` / ``agent.iter`` send non-streamed requests (``"stream": false``) on all three
  wires, except Anthropic when ``max_tokens`` is unset: pydantic-ai then sends the model's maximum
  (128000 for claude-sonnet-4-6), which the SDK refuses to send unstreamed, so it streams (SSE).
  An ``event_stream_handler`` streams on every wire.
* ``infer_model("openai:...")`` builds an ``OpenAIResponsesModel`` (``/v1/responses``);
  ``openai-chat:`` builds the chat model. Both SDKs honour ``OPENAI_BASE_URL`` /
  ``ANTHROPIC_BASE_URL`` (and the ``*_API_KEY`` variables) when no base URL is passed.

Retries, faults and timeouts: ``tests/stubs/test_stub_faults.py``.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic_ai import Agent
from pydantic_ai.models import infer_model

from tests.fixtures.model_stubs import RecordedRequest, StubReply
from tests.stubs.stub_agents import (
    CALL,
    DONE,
    MAX_TOKENS_FIELD,
    SETTINGS,
    WIRES,
    agent_on,
)


@pytest.mark.parametrize("wire", WIRES)
def test_tool_call_then_text_reports_exact_usage_and_sends_tool_result(model_stub, wire):
    model_stub.queue(CALL, DONE)
    result = agent_on(wire, model_stub).run_sync("go", model_settings=SETTINGS)

    assert result.output == "done"
    usage = result.usage
    assert (usage.requests, usage.tool_calls) == (2, 1)
    assert usage.input_tokens == 300  # cache included
    assert usage.output_tokens == 30
    assert usage.cache_read_tokens == 80
    # every wire reports cache writes; only Anthropic's tells the one-hour ones apart
    assert usage.cache_write_tokens == 7
    assert usage.cache_write_1h_tokens == (3 if wire == "anthropic" else 0)

    first, second = model_stub.requests
    for req in (first, second):
        assert req.wire == wire and not req.stream
        assert req.model == ("claude-sonnet-4-6" if wire == "anthropic" else "gpt-5.4")
        assert req.tool_names == ["send_message"]
        assert req.body[MAX_TOKENS_FIELD[wire]] == 16384
        assert req.headers["authorization"] == f"Bearer {req.api_key}"  # anthropic 2.14 too
    assert first.api_key == ("sk-ant-test" if wire == "anthropic" else "sk-test")
    assert first.tool_results == []
    [(call_id, content)] = second.tool_results
    assert call_id.startswith("call_stub_")
    assert "sent 'hi' on link" in str(content)


@pytest.mark.parametrize("wire", WIRES)
def test_event_stream_handler_streams_sse_with_same_usage(model_stub, wire):
    model_stub.queue(CALL, DONE)
    seen: list[Any] = []

    async def handler(ctx, events):
        async for event in events:
            seen.append(event)

    result = agent_on(wire, model_stub).run_sync(
        "go", model_settings=SETTINGS, event_stream_handler=handler
    )

    assert result.output == "done"
    assert all(r.stream for r in model_stub.requests)
    assert seen
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (300, 30, 80)
    assert usage.cache_write_tokens == 7
    assert usage.cache_write_1h_tokens == (3 if wire == "anthropic" else 0)
    assert model_stub.requests[1].tool_results


def test_anthropic_without_max_tokens_streams_behind_the_scenes(model_stub):
    model_stub.queue(CALL, DONE)
    result = agent_on("anthropic", model_stub).run_sync("go")

    assert result.output == "done"
    assert [r.stream for r in model_stub.requests] == [True, True]
    assert model_stub.requests[0].body["max_tokens"] == 128000
    assert (result.usage.cache_write_tokens, result.usage.cache_write_1h_tokens) == (7, 3)


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("chat", {"max_completion_tokens": 16384, "reasoning_effort": "high"}),
        (
            "responses",
            {"max_output_tokens": 16384, "reasoning": {"effort": "high", "context": "all_turns"}},
        ),
        (
            "anthropic",
            {
                "max_tokens": 16384,
                "thinking": {"type": "adaptive"},
                "output_config": {"effort": "high"},
            },
        ),
    ],
)
def test_thinking_setting_reaches_the_wire(model_stub, wire, expected):
    agent_on(wire, model_stub).run_sync("go", model_settings={**SETTINGS, "thinking": "high"})
    body = model_stub.requests[0].body
    assert {k: body[k] for k in expected} == expected


@pytest.mark.parametrize("wire", WIRES)
def test_temperature_reaches_the_wire_without_thinking(model_stub, wire):
    agent_on(wire, model_stub).run_sync("go", model_settings={**SETTINGS, "temperature": 0.3})
    assert model_stub.requests[0].body["temperature"] == 0.3


@pytest.mark.parametrize("wire", WIRES)
def test_responder_scripts_the_agent_from_what_it_was_sent(model_stub, wire):
    def responder(req: RecordedRequest) -> StubReply:
        if not req.tool_results:
            return StubReply(tool_calls=[("send_message", {"channel_id": "c", "text": "ping"})])
        return StubReply(text=f"tool said: {req.tool_results[-1][1]}")

    model_stub.responder = responder
    result = agent_on(wire, model_stub).run_sync("go", model_settings=SETTINGS)
    assert "sent 'ping' on c" in result.output
    assert len(model_stub.requests) == 2


def test_queue_first_then_responder_then_default_ok(model_stub):
    agent = agent_on("chat", model_stub)
    model_stub.queue(StubReply(text="queued"), lambda req: StubReply(text=f"cb {req.model}"))
    model_stub.responder = lambda req: StubReply(text="responder")
    outputs = [agent.run_sync("go", model_settings=SETTINGS).output for _ in range(3)]
    assert outputs == ["queued", "cb gpt-5.4", "responder"]
    model_stub.responder = None
    assert agent.run_sync("go", model_settings=SETTINGS).output == "ok"


def test_models_endpoint_and_unknown_paths(model_stub):
    listing = httpx.get(f"{model_stub.base_url}/models").json()
    assert listing["data"][0]["id"] == "stub-model"
    assert httpx.post(f"{model_stub.base_url}/embeddings", json={}).status_code == 404
    assert [r.wire for r in model_stub.requests] == ["models"]


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("openai:gpt-5.4", "/v1/responses"),
        ("openai-chat:gpt-5.4", "/v1/chat/completions"),
        ("anthropic:claude-sonnet-4-6", "/v1/messages"),
    ],
)
def test_sdks_honour_base_url_and_key_env_vars(model_stub, monkeypatch, name, path):
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)

    assert Agent(infer_model(name)).run_sync("go", model_settings=SETTINGS).output == "ok"
    [req] = model_stub.requests
    assert req.path == path
    assert req.api_key == ("sk-ant-env" if name.startswith("anthropic") else "sk-env")
