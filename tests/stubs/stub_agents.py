"""The real pydantic-ai agents the stub servers' tests drive, one per wire, and their replies."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from tests.fixtures.model_stubs import StubModelServer, StubReply
from tests.fixtures.polling import POLL_SECONDS, wait_until

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


SDK_LOGGERS = ("openai._base_client", "anthropic._base_client")
"""The loggers both SDKs say ``Retrying request ... in N seconds`` on (:data:`RETRY_LOG`)."""


class _TurnOnRetry(logging.Handler):
    """Turns a :class:`HandTurnedClock` 1 s when an SDK says it will sleep before a retry.

    The SDK logs, then starts its sleep, in one step of its task: the turn, a callback the loop
    runs once that step has yielded, ends the sleep whatever its length up to 1 s (a longer
    one, a ``Retry-After``, is left asleep)."""

    def __init__(self, clock: HandTurnedClock) -> None:
        super().__init__(logging.INFO)
        self.clock = clock

    def emit(self, record: logging.LogRecord) -> None:
        if RETRY_LOG.search(record.getMessage()):
            self.clock.call_soon(self.clock.turn, 1.0)


def failure_on_turned_clock(
    agent: Agent[None, str], stub: StubModelServer, **settings: Any
) -> BaseException:
    """As :func:`failure`, on a :class:`HandTurnedClock` that moves only once ``stub`` has the
    request a client-side timeout is about: a ``timeout`` or ``request_timeout`` under 1 s then
    expires after the request was sent, never before it (as 0.1 s ones did on a loaded
    machine: the stub saw no request, or the client had left before the stub read its body).

    The clock is turned 1 s when the stub records a request, and again every poll while one is
    held there (a turn taken before the client started its read's timeout is followed by
    another); and 1 s when an SDK logs a retry's sleep (:class:`_TurnOnRetry`). Nothing else
    moves it, so no timeout of the run can expire while its request is on the way.
    """
    clock = HandTurnedClock()
    ended = threading.Event()
    open_clock = threading.Lock()  # held to turn the clock, and to close it once the run ended

    def turn() -> None:
        with open_clock:
            if not ended.is_set():
                clock.call_soon_threadsafe(clock.turn, 1.0)

    def turn_as_requests_come() -> None:
        seen = 0
        while True:
            wait_until(lambda n=seen: len(stub.requests) > n or ended.is_set(), "a request")
            if ended.is_set():
                return
            seen += 1
            turn()
            while stub.in_flight and not ended.is_set() and len(stub.requests) == seen:
                time.sleep(POLL_SECONDS)  # polling the stub's thread, not pacing the client
                turn()

    async def run() -> None:
        async with agent:  # its HTTP client closed on this loop, before the loop is
            await agent.run("go", model_settings={**SETTINGS, **settings})

    on_retry = _TurnOnRetry(clock)
    loggers = [logging.getLogger(name) for name in SDK_LOGGERS]
    levels = [logger.level for logger in loggers]
    turner = threading.Thread(target=turn_as_requests_come, daemon=True)
    turner.start()
    try:
        for logger in loggers:
            logger.addHandler(on_retry)
            logger.setLevel(logging.INFO)
        with pytest.raises(Exception) as info:
            clock.run_until_complete(run())
    finally:
        with open_clock:
            ended.set()
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(on_retry)
            logger.setLevel(level)
        clock.close()
        turner.join()
    return info.value


CALL = StubReply(
    tool_calls=[("send_message", {"channel_id": "link", "text": "hi"})],
    input_tokens=100, output_tokens=20, cache_read_tokens=30, cache_write_tokens=7,
    cache_write_1h_tokens=3,
)  # fmt: skip
DONE = StubReply(text="done", input_tokens=200, output_tokens=10, cache_read_tokens=50)
