"""Model requests a phase end cut off: finished in the background, so their spend is known.

A provider bills a request it answers whether or not the caller still waits, so the engine
never drops one. A request is run as a task of its own and awaited through ``asyncio.shield``:
when the phase end cancels the agent, the request goes on; its answer (usage priced with the
catalogue) or its failure is logged as ``model_request_abandoned``. A request still unanswered
when the run ends is cancelled and logged with ``cost_usd`` null, so the run's total says it
is not known instead of undercounting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from pydantic_ai.messages import ModelResponse

from glossogen.eventlog import ModelRequestAbandoned
from glossogen.pricing import price_usage

SETTLE_SECONDS = 30.0
"""How long the run's end waits for abandoned requests still in flight before it gives up on
them (their cost is then unknown)."""

Sender = tuple[str, str, str, int]
"""Who sent a request: ``(agent_id, model, provider, round_number)``."""


class AbandonedRequests:
    """The requests of one run that a phase end stopped waiting for.

    ``log`` receives one ``ModelRequestAbandoned`` per request, when it answers, fails, or is
    given up at the run's end.
    """

    def __init__(self, log: Callable[[ModelRequestAbandoned], None]) -> None:
        self._log = log
        self._pending: dict[asyncio.Task[ModelResponse], Sender] = {}
        self.given_up = 0
        """Requests given up unanswered at the run's end (their cost is unknown)."""

    @property
    def pending(self) -> int:
        """Abandoned requests still in flight."""
        return len(self._pending)

    async def shielded(
        self, request: Coroutine[Any, Any, ModelResponse] | Awaitable[ModelResponse], sender: Sender
    ) -> ModelResponse:
        """Await ``request``; if the caller is cancelled first, keep the request going."""
        task: asyncio.Task[ModelResponse] = asyncio.ensure_future(request)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                self._pending[task] = sender
                task.add_done_callback(self._ended)
            elif not task.cancelled() and task.exception() is None:
                self._log_answer(task.result(), sender)  # it answered as the phase ended
            raise

    def _ended(self, task: asyncio.Task[ModelResponse]) -> None:
        sender = self._pending.pop(task, None)
        if sender is None:  # given up by settle/give_up, already logged
            return
        if task.cancelled():
            self._log_unknown(sender, "cancelled before it answered")
        elif (exc := task.exception()) is not None:
            agent_id, model, provider, sent = sender
            self._log(
                ModelRequestAbandoned(
                    agent_id=agent_id,
                    model=model,
                    provider=provider,
                    sent_in_round=sent,
                    answered=False,
                    cost_usd=0.0,  # a failed call is not billed (as every failed call)
                    error=f"{type(exc).__name__}: {exc}"[:300],
                )
            )
        else:
            self._log_answer(task.result(), sender)

    def _log_answer(self, response: ModelResponse, sender: Sender) -> None:
        agent_id, model, provider, sent = sender
        usage = response.usage
        self._log(
            ModelRequestAbandoned(
                agent_id=agent_id,
                model=model,
                provider=provider,
                sent_in_round=sent,
                answered=True,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cache_write_1h_tokens=usage.cache_write_1h_tokens,
                cost_usd=price_usage(provider, model, usage),
            )
        )

    def _log_unknown(self, sender: Sender, why: str) -> None:
        agent_id, model, provider, sent = sender
        self.given_up += 1
        self._log(
            ModelRequestAbandoned(
                agent_id=agent_id,
                model=model,
                provider=provider,
                sent_in_round=sent,
                answered=False,
                cost_usd=None,
                error=f"no answer: {why}; its cost is unknown",
            )
        )

    async def settle(self, seconds: float = SETTLE_SECONDS) -> None:
        """Wait up to ``seconds`` for the requests in flight, then give up on the rest."""
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=seconds)
        self.give_up(f"the run ended and it had not answered {seconds:g} s later")

    def give_up(self, why: str) -> None:
        """Log every request still in flight as unanswered (cost unknown) and cancel it."""
        for task, sender in list(self._pending.items()):
            del self._pending[task]
            self._log_unknown(sender, why)
            task.cancel()
