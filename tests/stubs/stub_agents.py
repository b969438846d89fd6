"""The real pydantic-ai agents the stub servers' tests drive, one per wire, and their replies."""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from tests.fixtures.model_stubs import StubModelServer, StubReply
from tests.fixtures.polling import wait_until

WIRES = ["chat", "responses", "anthropic"]
MAX_TOKENS_FIELD = {
    "chat": "max_completion_tokens",
    "responses": "max_output_tokens",
    "anthropic": "max_tokens",
}
SETTINGS: Any = {"max_tokens": 16384}
RETRY_LOG = re.compile(r"^Retrying request (?:to \S+ )?in ([0-9.]+) seconds")
"""What both SDKs log (INFO) with the wait they chose, just before sleeping it."""


def model_on(wire: str, stub: StubModelServer) -> Any:
    """The real pydantic-ai model of ``wire`` (``WIRES``), pointed at ``stub``."""
    if wire == "anthropic":
        provider = AnthropicProvider(base_url=stub.anthropic_base_url, api_key="sk-ant-test")
        return AnthropicModel("claude-sonnet-4-6", provider=provider)
    cls = OpenAIChatModel if wire == "chat" else OpenAIResponsesModel
    return cls("gpt-5.4", provider=OpenAIProvider(base_url=stub.openai_base_url, api_key="sk-test"))


def send_message(channel_id: str, text: str) -> str:
    """Send ``text`` on a channel."""
    return f"sent {text!r} on {channel_id}"


def agent_on(wire: str, stub: StubModelServer) -> Agent[None, str]:
    """An agent on ``wire``'s model at ``stub``, with one tool (:func:`send_message`)."""
    return Agent(model_on(wire, stub), tools=[send_message], instructions="Talk.")


def failure(agent: Agent[None, str], **settings: Any) -> BaseException:
    """The exception ``agent``'s run raises under ``settings`` (on top of ``SETTINGS``)."""
    with pytest.raises(Exception) as info:
        agent.run_sync("go", model_settings={**SETTINGS, **settings})
    return info.value


class HandTurnedClock(asyncio.SelectorEventLoop):
    """An event loop whose clock stands still until :meth:`turn` moves it.

    ``loop.time()`` is the clock anyio's deadlines (pydantic-ai's ``request_timeout``) and the
    SDKs' retry sleeps read, so a client-side deadline under test expires when the test turns
    this clock, never because a loaded machine was slow to send the request.
    """

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def time(self) -> float:
        return self.now

    def turn(self, seconds: float) -> None:
        self.now += seconds


def failure_past_deadline(
    agent: Agent[None, str], stub: StubModelServer, **settings: Any
) -> BaseException:
    """As :func:`failure`, on a :class:`HandTurnedClock` turned 1 s once ``stub`` recorded the
    run's first request: a ``request_timeout`` under 1 s expires after that request was sent
    (never before it, as a 0.1 s one did on a loaded machine) and long before any SDK retry's
    sleep (0.5 s and up, or a ``Retry-After``) could end on that clock."""
    loop = HandTurnedClock()

    def turn_once_sent() -> None:
        try:
            wait_until(lambda: stub.requests, "the run's first request at the stub")
        finally:
            loop.call_soon_threadsafe(loop.turn, 1.0)

    async def run() -> None:
        async with agent:  # its HTTP client closed on this loop, before the loop is
            await agent.run("go", model_settings={**SETTINGS, **settings})

    turner = threading.Thread(target=turn_once_sent, daemon=True)
    turner.start()
    try:
        with pytest.raises(Exception) as info:
            loop.run_until_complete(run())
    finally:
        loop.close()
    turner.join()
    return info.value


CALL = StubReply(
    tool_calls=[("send_message", {"channel_id": "link", "text": "hi"})],
    input_tokens=100, output_tokens=20, cache_read_tokens=30, cache_write_tokens=7,
    cache_write_1h_tokens=3,
)  # fmt: skip
DONE = StubReply(text="done", input_tokens=200, output_tokens=10, cache_read_tokens=50)
