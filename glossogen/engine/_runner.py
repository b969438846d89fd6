"""One agent's life in a run: its pydantic-ai ``Agent``, message history, inbox and idle state.

An agent decides when to speak: the runner only feeds it prompts (briefings, then notification
batches) and logs what it does. Idle means blocked waiting for notifications with an empty
inbox, or a finished cycle with nothing queued; a failed or turn-limited agent counts as idle.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.settings import ModelSettings
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from glossogen.engine._faults import (
    INVALID_TOOL_ARGUMENTS,
    backoff_seconds,
    classify,
    cost_of_failed,
)
from glossogen.engine._faults import MAX_ATTEMPTS as MAX_ATTEMPTS
from glossogen.engine._requests import UNBILLED, Asked, asking
from glossogen.eventlog import (
    AgentRunCycleFailed,
    AgentTurnLimitReached,
    Event,
    LlmResponseReceived,
    ToolCallInvoked,
    ToolResultReceived,
)
from glossogen.models import request_model_settings
from glossogen.pricing import price_usage
from glossogen.scenario import AgentDeps, AgentSpec, Observation
from glossogen.tracing import agent_attributes

INTERRUPTED = "interrupted: the phase ended before this tool returned"
SEAT: contextvars.ContextVar[str | None] = contextvars.ContextVar("glossogen_seat", default=None)
"""The seat whose phase task this is, and of every task that task starts (its model requests,
its tools); None in the round's own task. A replay orders the seats' steps by it."""


def seat_context(agent_id: str) -> contextvars.Context:
    """A copy of the current context in which :data:`SEAT` names ``agent_id``."""
    context = contextvars.copy_context()
    context.run(SEAT.set, agent_id)
    return context


REQUEST_TIMEOUT_SECONDS = 300.0
"""Longest one model request may take when the agent's settings name no ``timeout``."""


def _payload(content: object) -> dict[str, Any]:
    """A tool's return value as a scripted observation's data (a non-dict under ``value``)."""
    if isinstance(content, dict):
        return content
    return {"value": content}


class TurnLimitReached(Exception):
    """Raised inside a cycle when the agent has used ``max_agent_turns`` model requests."""


class ModelErrorsInARow(Exception):
    """Raised inside a cycle when the agent's model errors in a row reached ``MAX_ATTEMPTS``."""


REJECTED_CAUSES = ("validation_error", "unknown_tool")
"""Why pydantic-ai sends a tool call back to the model that are the model's own error."""


class SpendCapReached(TurnLimitReached):
    """Raised before a model request the run's spend cap refuses (``engine/_spend.py``)."""


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


def _worth_retrying(exc: BaseException) -> bool:
    """True for a failure a retry may mend; never for cancellation or the turn limit."""
    if not isinstance(exc, Exception) or isinstance(exc, TurnLimitReached | ModelErrorsInARow):
        return False
    return classify(exc).retryable


class CycleDriver:
    """Runs agent cycles and turns what happens in them into events.

    ``emit`` appends an event (envelope completed by the engine); ``changed`` tells the round
    monitor that state moved.
    """

    def __init__(
        self,
        emit: Callable[[Event], None],
        changed: Callable[[], None],
        max_agent_turns: int,
        mark_read: Callable[[str, dict[str, list[dict[str, Any]]]], None],
        pause: Callable[[float], Awaitable[None]],
        rng: Callable[..., random.Random],
    ) -> None:
        """Bind the driver to the engine's event sink, change signal, read marks and clock."""
        self.emit = emit
        self.changed = changed
        self.max_agent_turns = max_agent_turns
        self.mark_read = mark_read
        self.pause = pause
        self.rng = rng
        self.call_allowed: Callable[[], bool] = lambda: True
        """Asked before every model request; False (the run's spend cap) takes the agent out."""

    async def run_phase(self, runner: AgentRunner, deps: AgentDeps) -> None:
        """Feed ``runner`` prompts until the phase is cancelled; returns if the agent is out."""
        while not runner.out:
            if runner.prompts:
                text, data = runner.prompts.popleft()
                while runner.prompts:
                    more, more_data = runner.prompts.popleft()
                    text, data = f"{text}\n\n{more}", {**data, **more_data}
                runner.observations.append(Observation("briefing", {**data, "text": text}))
            elif runner.inbox:
                batch = runner.drain_inbox()
                self.mark_read(runner.spec.agent_id, batch)
                runner.observations.append(Observation("notifications", dict(batch)))
                text = format_batch(batch)
            else:
                runner.wake.clear()
                runner.idle = True
                self.changed()
                await runner.wake.wait()
                runner.idle = False
                continue
            await self._prompt(runner, deps, text)
        runner.idle = True
        self.changed()

    async def _prompt(self, runner: AgentRunner, deps: AgentDeps, prompt: str) -> None:
        """Run one prompt, retrying failed cycles (tenacity) with backoff on the game clock.

        After ``MAX_ATTEMPTS`` model errors in a row (failed calls, refusals and invalid tool
        arguments, counted across prompts and phases, reset by an answer processed without
        error), or one failure that retrying cannot mend (credentials, quota, a rejected
        request), the agent is taken out of the run.
        """

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            fault = classify(exc) if exc else classify(RuntimeError())
            rng = self.rng("backoff", runner.spec.agent_id, runner.turns, state.attempt_number)
            return backoff_seconds(state.attempt_number, fault, rng)

        retrying = AsyncRetrying(
            stop=lambda state: runner.failures >= MAX_ATTEMPTS,
            wait=wait,
            retry=retry_if_exception(_worth_retrying),
            sleep=self.pause,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    await self._cycle(runner, deps, prompt)
        except SpendCapReached:
            runner.out = True  # the run's spend cap: the session ends the run with the reason
        except TurnLimitReached:
            runner.out = True
            self.emit(
                AgentTurnLimitReached(
                    agent_id=runner.spec.agent_id, max_agent_turns=self.max_agent_turns
                )
            )
        except ModelErrorsInARow:
            runner.out = True
        except Exception:  # noqa: BLE001 (already logged per attempt; the agent is out)
            runner.out = True
        self.changed()

    async def _cycle(self, runner: AgentRunner, deps: AgentDeps, prompt: str) -> None:
        """Run one prompt to the agent's final answer; log and re-raise a failure."""
        # A history must never end in an unanswered tool call (pydantic-ai refuses a prompt).
        before = runner.history = self._close(runner, runner.history, INTERRUPTED)
        spec = runner.spec
        # The cycle's billed requests are filed with it (the request hook runs in pydantic-ai's
        # own task); one it does not log is the run ledger's once the cycle is left.
        with asking() as asked:
            try:
                with agent_attributes(spec.agent_id, spec.role, runner.model, runner.provider):
                    await self._iterate(runner, deps, prompt, asked)
            except asyncio.CancelledError:
                if runner.unconfirmed:  # cut off while its tools ran: the answer was good
                    self._confirm(runner)
                raise
            except (TurnLimitReached, ModelErrorsInARow):
                raise
            except Exception as exc:
                self._failed(runner, before, exc, asked)
                raise
            finally:
                while runner.held:  # the failure (if any) is logged: game time may move again
                    runner.held.pop()()

    def _failed(
        self, runner: AgentRunner, before: list[ModelMessage], exc: Exception, asked: Asked
    ) -> None:
        """Log a failed cycle (``agent_run_cycle_failed``); it accounts for its failed request."""
        runner.unconfirmed = False  # the response that failed to process is no answer
        runner.failures += 1
        runner.phase_failures += 1
        if not any(isinstance(m, ModelResponse) for m in runner.history[len(before) :]):
            runner.history = before  # nothing was answered: the retry re-sends the prompt
        fault = classify(exc)
        settled = asked.claim_failed()  # this event logs its failed request
        self.emit(
            AgentRunCycleFailed(
                agent_id=runner.spec.agent_id,
                error_kind=fault.kind,
                error=f"{type(exc).__name__}: {exc}"[:500],
                attempts=runner.failures,
                retryable=fault.retryable,
                retry_after_seconds=fault.retry_after,
                cost_usd=cost_of_failed(fault, bool(settled), 0.0),
                request_ids=settled,
            )
        )

    async def _iterate(
        self, runner: AgentRunner, deps: AgentDeps, prompt: str, asked: Asked
    ) -> None:
        """Drive one pydantic-ai run node by node, logging what happens.

        The history kept is a copy of the run's messages taken as the cycle ends (pydantic-ai
        may still add to its own list as it closes), with its dangling tool calls closed. An
        answer already in that history whose node was not handled is logged here; one that is
        not (its answer came as the cycle was cut off) is left to the run's ledger.
        """
        async with runner.agent.iter(
            prompt,
            message_history=runner.history,
            deps=deps,
            model_settings=runner.request_settings(),
            usage_limits=UsageLimits(request_limit=None),
        ) as run:
            unanswered = INTERRUPTED
            try:
                async for node in run:
                    self._observe(runner, node, asked)
            except Exception as exc:
                if classify(exc).kind == INVALID_TOOL_ARGUMENTS:
                    unanswered = f"rejected: {exc}"[:500]
                raise
            finally:
                messages = list(run.all_messages())
                for answer, request_id in asked.claim_in(messages):  # cut off before handled
                    self._log_response(runner, answer, request_id)
                runner.history = self._close(runner, messages, unanswered)

    def _close(
        self, runner: AgentRunner, history: list[ModelMessage], unanswered: str
    ) -> list[ModelMessage]:
        """Close the tool calls a cycle's end cut off and log each one's result.

        A tool that ran returns its real result (its effect happened); one that did not gets
        ``unanswered``, marked ``interrupted``.
        """
        closed = close_dangling_calls(history, runner.returned, unanswered)
        if len(closed) > len(history):
            for part in closed[-1].parts:
                assert isinstance(part, ToolReturnPart)
                if part.tool_call_id in runner.results_logged:
                    continue  # logged as the request it was in was built, before the cut
                runner.results_logged.add(part.tool_call_id)
                ran = part.tool_call_id in runner.returned
                self.emit(
                    ToolResultReceived(
                        agent_id=runner.spec.agent_id,
                        tool_name=part.tool_name,
                        tool_call_id=part.tool_call_id,
                        result=part.content,
                        interrupted=not ran,
                        refused=runner.refused.get(part.tool_call_id),
                    )
                )
        return closed

    def _confirm(self, runner: AgentRunner) -> None:
        """Count the last logged response as an answer: it ends a run of model errors."""
        if runner.unconfirmed:
            runner.unconfirmed = False
            runner.failures = 0
            runner.phase_answers += 1

    def _rejected(self, runner: AgentRunner, part: ToolReturnPart) -> None:
        """Log a tool call pydantic-ai sent back (bad arguments, unknown tool) as a model error."""
        runner.unconfirmed = False
        runner.failures += 1
        runner.phase_failures += 1
        self.emit(
            AgentRunCycleFailed(
                agent_id=runner.spec.agent_id,
                error_kind=INVALID_TOOL_ARGUMENTS,
                error=f"{part.tool_name}: {part.model_response_str()}"[:500],
                attempts=runner.failures,
                retryable=True,
            )
        )
        if runner.failures >= MAX_ATTEMPTS:
            raise ModelErrorsInARow

    def _observe(self, runner: AgentRunner, node: Any, asked: Asked) -> None:
        agent_id = runner.spec.agent_id
        if Agent.is_end_node(node):
            self._confirm(runner)
        elif Agent.is_model_request_node(node):
            rejected = []
            for part in node.request.parts:
                if isinstance(part, ToolReturnPart) and part.content != INTERRUPTED:
                    result = _payload(part.content)
                    runner.observations.append(Observation("tool_result", result, part.tool_name))
                    runner.results_logged.add(part.tool_call_id)
                    self.emit(
                        ToolResultReceived(
                            agent_id=agent_id,
                            tool_name=part.tool_name,
                            tool_call_id=part.tool_call_id,
                            result=part.content,
                            refused=runner.refused.get(part.tool_call_id),
                        )
                    )
                    if part.retry is not None and part.retry.cause in REJECTED_CAUSES:
                        rejected.append(part)
            for part in rejected:
                self._rejected(runner, part)
            self._confirm(runner)
            if runner.made >= self.max_agent_turns:
                raise TurnLimitReached
            if not self.call_allowed():
                raise SpendCapReached
            runner.turns += 1
            runner.made += 1
            runner.phase_turns += 1
        elif Agent.is_call_tools_node(node):
            response = node.model_response
            calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
            if runner.provider in UNBILLED:
                self._log_response(runner, response, None)
            elif (request := asked.claim(response)) is not None:
                self._log_response(runner, response, request.logged_id)
            # An answer counts once it is processed without error (a refusal or a tool call
            # with invalid arguments is a model error, though it was answered and paid).
            runner.unconfirmed = True
            for call in calls:
                self.emit(
                    ToolCallInvoked(
                        agent_id=agent_id,
                        tool_name=call.tool_name,
                        tool_call_id=call.tool_call_id,
                        args=call.args_as_dict(),
                    )
                )

    def _log_response(
        self, runner: AgentRunner, response: ModelResponse, request_id: str | None
    ) -> None:
        """Log one answered request (``llm_response_received``, priced, naming its request)."""
        agent_id = runner.spec.agent_id
        usage = response.usage
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        runner.tool_calls += len(calls)
        self.emit(
            LlmResponseReceived(
                agent_id=agent_id,
                model=runner.model,
                provider=runner.provider,
                cycle=runner.turns,
                text="".join(p.content for p in response.parts if isinstance(p, TextPart)),
                thinking="".join(p.content for p in response.parts if isinstance(p, ThinkingPart)),
                tool_calls=[
                    {
                        "tool_name": c.tool_name,
                        "tool_call_id": c.tool_call_id,
                        "args": c.args_as_dict(),
                    }
                    for c in calls
                ],
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cache_write_1h_tokens=usage.cache_write_1h_tokens,
                cost_usd=price_usage(runner.provider, runner.model, usage),
                request_id=request_id,
                request_sha256=runner.sent_sha256 if runner.provider in UNBILLED else None,
            )
        )
