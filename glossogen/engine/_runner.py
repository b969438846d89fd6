"""A seat's cycles: the prompts fed to its agent, retries, failures, and what is logged of them.

An agent decides when to speak: :class:`CycleDriver` only feeds it prompts (briefings, then
notification batches) and logs what it does; the seat's state is its
:class:`~glossogen.engine._agent.AgentRunner`.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from glossogen.engine._agent import INTERRUPTED, AgentRunner, close_dangling_calls, format_batch
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
from glossogen.pricing import price_usage
from glossogen.scenario import AgentDeps, Observation
from glossogen.tracing import agent_attributes

SEAT: contextvars.ContextVar[str | None] = contextvars.ContextVar("glossogen_seat", default=None)
"""The seat whose phase task this is, and of every task that task starts (its model requests,
its tools); None in the round's own task. A replay orders the seats' steps by it."""


def seat_context(agent_id: str) -> contextvars.Context:
    """A copy of the current context in which :data:`SEAT` names ``agent_id``."""
    context = contextvars.copy_context()
    context.run(SEAT.set, agent_id)
    return context


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
                await runner.wait_for_news(self.changed)
                continue
            runner.answered = False
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
        may still add to its own list as it closes), with its dangling tool calls closed. A
        billed answer already in that history whose node was not handled is logged here; one
        that is not (its answer came as the cycle was cut off) is left to the run's ledger.

        An unbilled seat's answer (scripted, local) that a cancellation (a phase end, a stop)
        found in that history before its node was handled is dropped from it: nothing logged
        it, so the seat's history after the cut holds what the log holds, as if the answer
        had not come (:func:`_unhandled_dropped`). Kept, its tool calls were closed and
        logged ``interrupted`` for an answer the log never held, and whether it had come
        before the cancellation (a turn of the event loop either way) is not in the log: a
        replay cut at the same place could not tell.
        """
        async with runner.agent.iter(
            prompt,
            message_history=runner.history,
            deps=deps,
            model_settings=runner.request_settings(),
            usage_limits=UsageLimits(request_limit=None),
        ) as run:
            unanswered = INTERRUPTED
            handled: list[Any] = []  # the answers this cycle handled (logged), in order
            cancelled = False
            try:
                async for node in run:
                    self._observe(runner, node, asked)
                    if Agent.is_call_tools_node(node):
                        handled.append(node.model_response)
            except asyncio.CancelledError:
                cancelled = True
                raise
            except Exception as exc:
                if classify(exc).kind == INVALID_TOOL_ARGUMENTS:
                    unanswered = f"rejected: {exc}"[:500]
                raise
            finally:
                messages = list(run.all_messages())
                if cancelled and runner.provider in UNBILLED:
                    messages = _unhandled_dropped(messages, handled)
                for answer, request_id in asked.claim_in(messages):  # cut off before handled
                    self._log_response(runner, answer, request_id)
                runner.history = self._close(runner, messages, unanswered)
                runner.asking = False

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
            runner.asking = runner.provider in UNBILLED
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
            # text and no tool call: the cycle's final answer, nothing more logged until the
            # agent takes up its next prompt
            runner.answered = not calls and any(
                isinstance(p, TextPart) and p.content for p in response.parts
            )
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


def _unhandled_dropped(messages: list[ModelMessage], handled: list[Any]) -> list[ModelMessage]:
    """``messages`` without a last answer the cycle did not handle (an unbilled seat's, cut off).

    Only the last message can be one: an answer is handled before the next request is built.
    """
    if messages and isinstance(messages[-1], ModelResponse):
        if messages[-1] not in handled:  # by identity, else by value
            return messages[:-1]
    return messages
