"""Agents of one event loop share a hosted model (one HTTP client), and a new endpoint is obeyed."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent

from glossogen.models import build_model
from tests.fixtures.model_stubs import StubModelServer, StubReply

SECRET = "sk-test-shared-0123456789"


def test_agents_of_one_loop_share_a_model_until_its_endpoint_changes(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    model_stub.responder = lambda req: StubReply(text="pong")

    async def scenario() -> tuple[bool, bool, str]:
        first, second = build_model("openai", "gpt-5.4"), build_model("openai", "gpt-5.4")
        monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
        moved = build_model("openai", "gpt-5.4")
        answer = await Agent(moved).run("ping")
        return first.wrapped is second.wrapped, moved.wrapped is first.wrapped, answer.output

    shared, kept_old_endpoint, output = asyncio.run(scenario())
    assert (shared, kept_old_endpoint, output) == (True, False, "pong")
    assert len(model_stub.requests) == 1


def test_models_built_outside_a_loop_are_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    first, second = build_model("openai", "gpt-5.4"), build_model("openai", "gpt-5.4")
    assert first.wrapped is not second.wrapped
