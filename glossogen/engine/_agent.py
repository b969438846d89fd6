"""One agent's life in a run: its pydantic-ai ``Agent``, message history, inbox and idle state.

Idle means blocked waiting for notifications with an empty inbox, or a finished cycle with
nothing queued; a failed or turn-limited agent counts as idle. The cycles themselves are
:class:`~glossogen.engine._runner.CycleDriver`'s.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.settings import ModelSettings

from glossogen.models import request_model_settings
from glossogen.scenario import AgentDeps, AgentSpec, Observation

INTERRUPTED = "interrupted: the phase ended before this tool returned"

REQUEST_TIMEOUT_SECONDS = 300.0
"""Longest one model request may take when the agent's settings name no ``timeout``."""


@dataclass
class AgentRunner:
    """The state of one seat: model, history, inbox, observations, counters.

    Attributes:
        spec: The seat.
        agent: The pydantic-ai agent (model, instructions, tools).
        model: Model name recorded in events; ``provider`` likewise.
        model_settings: pydantic-ai settings sent with every request.
        history: pydantic-ai messages so far (whole run), sanitised at every phase end.
        inbox: Messages and world events not yet handed to the agent.
        prompts: Briefings waiting to become the next prompt.
        observations: What the agent saw this phase (for scripted policies).
        turns: Agent cycles of the run as its log keeps them; a cycle is one model request
            and the tool calls of its response (each cycle's number).
        made: Model requests the seat made in the whole run, every process of it: what
            ``max_agent_turns`` caps. It runs ahead of ``turns`` after a resume, which plays
            again a round a kill or a stop cut off: that round's requests were made and billed.
    """

    spec: AgentSpec
    agent: Agent[AgentDeps, str]
    model: str
    provider: str
    model_settings: dict[str, Any]
    cache_key: str | None = None
    """The seat's prompt cache key, ``<run_id>:<agent_id>`` (:func:`request_model_settings`)."""
    history: list[ModelMessage] = field(default_factory=list)
    inbox: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque)
    prompts: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque)
    observations: list[Observation] = field(default_factory=list)
    turns: int = 0
    made: int = 0
    tool_calls: int = 0
    logged: list[ModelMessage] = field(default_factory=list)
    """The history as last logged (``agent_history_appended``), message objects kept."""
    phase_turns: int = 0
    phase_failures: int = 0
    phase_answers: int = 0
    idle: bool = False
    out: bool = False
    failures: int = 0
    """Model errors in a row (failed calls, refusals, invalid tool arguments); reset by an
    answer that was processed without error."""
    unconfirmed: bool = False
    """A response was logged whose processing (refusal check, tool arguments) is still going."""
    returned: dict[str, Any] = field(default_factory=dict)
    """What each tool call of this phase returned, by ``tool_call_id`` (its effect happened)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Why the engine answered a tool call of this phase without running the tool, by id."""
    results_logged: set[str] = field(default_factory=set)
    """``tool_call_id`` of every ``tool_result_received`` logged this phase: a result logged
    as its request was built (then the turn limit cut the request off) is not logged again
    when the cycle's end closes that call in the history."""
    held: list[Callable[[], None]] = field(default_factory=list)
    """Game-clock holds of failed calls, released once the cycle has logged the failure
    (:meth:`~glossogen.engine.VirtualClock.hold`): another seat's sleep cannot end the phase
    between the failure and its event."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    answered: bool = False
    """True from a cycle's final answer until the agent takes up its next prompt (briefings or
    news): what it does in between logs nothing."""
    parked: bool = False
    """True while the agent waits for news (:meth:`wait_for_news`), until its first step after
    the wake, which takes up what came."""
    asking: bool = False
    """True for an unbilled seat from the moment its next request is built (the results of its
    tools logged) until that request is handed to its model: what it does in between (pydantic-
    ai prepares the request) logs nothing and waits on nothing."""
    sent_sha256: str | None = None
    """An unbilled seat's last request fingerprint, logged with its answer (billed requests
    log theirs on ``model_request_sent``)."""

    def request_settings(self) -> ModelSettings:
        """Return the settings sent with each request: the agent's, SDK retries off.

        Its ``cache`` is asked of the provider as it takes it, with the seat's cache key.

        Retries are the engine's (each failure is an event), so vendor SDKs must not retry
        silently underneath; a request without its own ``timeout`` gets ``REQUEST_TIMEOUT_SECONDS``.
        """
        if self.provider in ("scripted", "local"):
            return request_model_settings(self.model_settings, self.provider)
        settings = {"max_retries": 0, **self.model_settings}
        if "timeout" not in settings:
            settings["request_timeout"] = REQUEST_TIMEOUT_SECONDS
        return request_model_settings(settings, self.provider, self.cache_key)

    def deliver(self, kind: str, item: dict[str, Any]) -> None:
        """Queue a message (``kind="message"``) or world event (``"event"``) and wake the agent."""
        self.inbox.append((kind, item))
        self.idle = False
        self.wake.set()

    async def wait_for_news(self, changed: Callable[[], None]) -> None:
        """Wait, idle, until a message, notice or briefing wakes the agent.

        ``changed`` is called once the agent is idle (the engine may find the phase over).
        """
        self.wake.clear()
        self.idle = True
        self.parked = True
        changed()
        try:
            await self.wake.wait()
        finally:
            self.parked = False
        self.idle = False

    @property
    def woken(self) -> bool:
        """Whether a wake reached the agent as it waits for news and is not yet taken up."""
        return self.parked and self.wake.is_set()

    def drain_inbox(self) -> dict[str, list[dict[str, Any]]]:
        """Hand over and clear the inbox as ``{"messages": [...], "events": [...]}``."""
        batch: dict[str, list[dict[str, Any]]] = {"messages": [], "events": []}
        while self.inbox:
            kind, item = self.inbox.popleft()
            batch["messages" if kind == "message" else "events"].append(item)
        self.wake.clear()
        return batch

    def new_phase(self) -> None:
        """Forget this phase's observations and idle state before a phase opens."""
        self.observations = []
        self.phase_turns = 0
        self.phase_failures = 0
        self.phase_answers = 0
        self.answered = False
        self.returned = {}
        self.refused = {}
        self.results_logged = set()
        self.idle = False
        self.wake.clear()


def format_batch(batch: dict[str, list[dict[str, Any]]]) -> str:
    """Render a notification batch as the text an agent reads."""
    lines = [f"[{m['channel_id']}] {m['sender_id']}: {m['text']}" for m in batch["messages"]]
    lines += [f"[notice] {e['text']}" for e in batch["events"]]
    return "\n".join(lines) if lines else "No new notifications."


def close_dangling_calls(
    history: list[ModelMessage],
    returned: dict[str, Any] | None = None,
    unanswered: str = INTERRUPTED,
) -> list[ModelMessage]:
    """Return ``history`` with the tool calls of its last response closed by a return part.

    A history ending in a tool call with no return cannot be continued (pydantic-ai refuses,
    Anthropic answers 400). A call whose tool ran (its id in ``returned``) is closed by what the
    tool returned: its effect happened, whatever cut the cycle off. Any other call is closed by
    ``unanswered`` (the "interrupted" note by default).
    """
    if not history or not isinstance(history[-1], ModelResponse):
        return history
    calls = [p for p in history[-1].parts if isinstance(p, ToolCallPart)]
    if not calls:
        return history
    known = returned or {}
    returns = [
        ToolReturnPart(
            c.tool_name, known.get(c.tool_call_id, unanswered), tool_call_id=c.tool_call_id
        )
        for c in calls
    ]
    return [*history, ModelRequest(parts=returns)]
