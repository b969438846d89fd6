"""The run's ledger of model requests: each one is accounted from the moment it is sent.

A provider bills a request it answers whether or not the caller still waits, so no billed
request may end outside the event log. Rules:

- The engine's ``wrap_model_request`` hook opens every hosted model request (an agent's or the
  judge's) in the :class:`RequestLedger` *before* it is sent (:meth:`RequestLedger.send`). It
  runs as a task of its own, awaited through ``asyncio.shield``: cancelling whoever waits for it
  (a phase end, a stop) never cancels the request.
- Write-ahead: the innermost hook (:meth:`RequestLedger.hooks`, inside the spend cap's) logs
  ``model_request_sent`` with the request's id just before the HTTP call, so the log names a
  request before any byte of it goes out; the one event that settles it names the same id. A
  request the spend cap refuses never reaches that hook: it is not sent, and no id is logged.
  A request sent and never settled was in flight when its process was killed:
  :func:`unsettled_requests` finds it and a resume logs it (:meth:`RequestLedger.abandon_killed`)
  as ``model_request_abandoned``, cost unknown.
- The request is filed with its asker (:func:`asking`: an agent's cycle, one attempt of the
  judge) through a context variable. pydantic-ai runs the hook in its graph's own task, not in
  the asker's, so nothing may hand the answer over through shared state the asker reads once:
  the asker may have looked before that task resumed with the answer.
- It is settled exactly once (:meth:`SentRequest.settle`) by the one event that logs it: its
  asker's ``llm_response_received``, ``agent_run_cycle_failed`` or ``judge_called``. When the
  asker ends (cut off, or done) every request it has not settled becomes the ledger's: logged as
  ``model_request_abandoned`` once it ends (answered: priced from its usage; failed: its error,
  not billed).
- Before ``simulation_ended`` the ledger is closed (:meth:`RequestLedger.close`): a request that
  ended is logged as it ended, one still unanswered is cancelled and logged with ``cost_usd``
  null (its cost is unknown, so the run's total says so instead of undercounting). The run's end
  first waits :data:`SETTLE_SECONDS` for them (:meth:`RequestLedger.settle`), a stop
  :data:`STOP_SETTLE_SECONDS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic_ai.capabilities import Hooks
from pydantic_ai.capabilities.abstract import WrapModelRequestHandler
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from glossogen.engine._fingerprint import request_fingerprint
from glossogen.eventlog import ModelRequestAbandoned, ModelRequestSent, new_id
from glossogen.pricing import price_usage

SETTLE_SECONDS = 30.0
"""How long the run's end waits for requests still in flight before it gives up on them (their
cost is then unknown)."""

STOP_SETTLE_SECONDS = 10.0
"""How long a stopped run waits for answers already coming before it gives up on them."""

UNBILLED = ("scripted", "local")
"""Providers whose requests run on this machine and are not billed: not in the ledger."""

Sender = tuple[str, str, str, int, int | None]
"""Who sent a request: ``(agent_id, model, provider, round_number, call)``; ``call`` is the
seat's cycle, None for a caller without one (the judge: the ledger counts its requests)."""

KILLED = "the process that sent it was killed before it answered"
"""Why a resume gives up a request its log shows sent and never settled."""


class SentRequest:
    """One billed model request, from the moment it is sent until the one event that logs it."""

    def __init__(self, ledger: RequestLedger, sender: Sender) -> None:
        self._ledger = ledger
        self.sender = sender
        self.task: asyncio.Future[ModelResponse]
        """The request running (set by :meth:`RequestLedger.send` as it starts it)."""
        self.request_id = new_id()
        """The ledger's key, logged by ``model_request_sent`` and by the event that settles it."""
        self.reserved_usd: float | None = None
        """The worst case the spend cap reserved for it (set by the cap's hook), if any."""
        self.announced = False
        """True once ``model_request_sent`` is logged (the request reached its HTTP call)."""
        self.settled = False
        """True once an event logs this request (it is then out of the ledger)."""
        self.watched = False
        """True once the ledger logs it when it ends (its asker is gone)."""

    @property
    def response(self) -> ModelResponse | None:
        """The answer, once the provider answered; else None."""
        task = self.task
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result()
        return None

    @property
    def failure(self) -> BaseException | None:
        """Why the request failed, once it did; else None."""
        task = self.task
        if task.done() and not task.cancelled():
            return task.exception()
        return None

    @property
    def logged_id(self) -> str | None:
        """The id its settling event names: None when it was never sent (no event names it)."""
        return self.request_id if self.announced else None

    def settle(self) -> bool:
        """Mark the request logged; False when something else already logged it (log nothing)."""
        if self.settled:
            return False
        self.settled = True
        self._ledger.forget(self)
        return True


class Asked:
    """The billed requests one asker (an agent's cycle, one judge attempt) sent, in order."""

    def __init__(self) -> None:
        self.sent: list[SentRequest] = []

    def claim(self, response: ModelResponse) -> SentRequest | None:
        """Settle the request ``response`` answers; it, when the caller is to log it.

        The request is the one whose answer is ``response`` (else the one answered and not
        yet logged); None when the run's end already logged it.
        """
        for request in self.sent:
            if request.response is response:
                return request if request.settle() else None
        for request in self.sent:
            if not request.settled and request.response is not None:
                return request if request.settle() else None
        return None

    def claim_in(self, messages: Sequence[object]) -> list[tuple[ModelResponse, str | None]]:
        """Settle the requests whose answers are in ``messages`` and not logged.

        For the asker that was cut off after the answer reached its history, before it handled
        it: the caller logs each answer returned, with its request id.
        """
        kept = {id(m) for m in messages}
        answers = []
        for request in self.sent:
            response = request.response
            if response is not None and id(response) in kept and request.settle():
                answers.append((response, request.logged_id))
        return answers

    def claim_failed(self) -> list[str]:
        """Settle every request that failed (the caller's failure event logs them); their ids."""
        failed = [r for r in self.sent if r.failure is not None and not r.settled]
        return _ids(r for r in failed if r.settle())

    def claim_ended(self) -> list[str]:
        """Settle every request that ended (the caller's one event logs them); their ids."""
        ended = [r for r in self.sent if r.task.done() and not r.settled]
        return _ids(r for r in ended if r.settle())


def _ids(requests: Iterable[SentRequest]) -> list[str]:
    return [r.request_id for r in requests if r.announced]


_SENDING: ContextVar[SentRequest | None] = ContextVar("glossogen_sending", default=None)
"""The request whose task this is (set by :meth:`RequestLedger.send`, read by its hook)."""


def sending() -> SentRequest | None:
    """The billed request the current task sends (inside a request hook); None elsewhere."""
    return _SENDING.get()


_ASKER: ContextVar[Asked | None] = ContextVar("glossogen_asker", default=None)


@contextmanager
def asking() -> Iterator[Asked]:
    """File the billed requests sent inside (this task and the tasks it starts) with the caller.

    On the way out, however it is left, each request the caller did not settle is handed to
    its ledger, which logs it as ``model_request_abandoned`` once it ends.
    """
    asked = Asked()
    token = _ASKER.set(asked)
    try:
        yield asked
    finally:
        _ASKER.reset(token)
        for request in asked.sent:
            request._ledger.watch(request)  # noqa: SLF001 (the ledger's own type)


class RequestLedger:
    """The billed model requests of one run that no event has logged yet.

    ``log`` receives the ``model_request_abandoned`` of each request the ledger settles itself.
    """

    def __init__(self, log: Any) -> None:
        self._log = log
        self._open: dict[SentRequest, None] = {}
        self.given_up = 0
        """Requests given up unanswered (their cost is unknown)."""
        self.settling = False
        """True while :meth:`settle` waits for the requests in flight."""
        self._calls: dict[str, int] = {}

    @property
    def pending(self) -> int:
        """Requests sent and not yet logged."""
        return len(self._open)

    async def send(
        self, request: Coroutine[Any, Any, ModelResponse] | Awaitable[ModelResponse], sender: Sender
    ) -> ModelResponse:
        """Open ``request`` in the ledger, then send it and await its answer.

        The request is opened before its task first runs (nothing has been sent yet); if the
        caller is cancelled, the request goes on and its asker's way out hands it to the ledger.
        A request sent with no asker is the ledger's from the start.
        """
        agent_id, model, provider, round_number, call = sender
        if call is None:  # a caller without a cycle: its requests in this process, counted
            call = self._calls[agent_id] = self._calls.get(agent_id, 0) + 1
        sent = SentRequest(self, (agent_id, model, provider, round_number, call))
        sent.task = asyncio.ensure_future(self._sending(sent, request))
        self._open[sent] = None
        asker = _ASKER.get()
        if asker is None:
            self.watch(sent)
        else:
            asker.sent.append(sent)
        return await asyncio.shield(sent.task)

    @staticmethod
    async def _sending(
        sent: SentRequest, request: Coroutine[Any, Any, ModelResponse] | Awaitable[ModelResponse]
    ) -> ModelResponse:
        _SENDING.set(sent)  # this task's own context: its hook (:meth:`hooks`) finds the request
        return await request

    def hooks(self) -> Hooks[Any]:
        """The innermost ``wrap_model_request`` capability: log ``model_request_sent``.

        Placed after every other request hook (the spend cap's reservation included), it runs
        just before the HTTP call of a request :meth:`send` opened, and logs it first.
        """

        async def wrap_model_request(
            ctx: RunContext[Any],
            *,
            request_context: ModelRequestContext,
            handler: WrapModelRequestHandler,
        ) -> ModelResponse:
            sent = _SENDING.get()
            if sent is not None and not sent.announced and not sent.settled:
                sent.announced = True
                agent_id, model, provider, _, call = sent.sender
                fingerprint = request_fingerprint(
                    request_context.messages, request_context.model_request_parameters
                )
                self._log(
                    ModelRequestSent(
                        request_id=sent.request_id,
                        agent_id=agent_id,
                        model=model,
                        provider=provider,
                        call=call or 0,
                        reserved_usd=sent.reserved_usd,
                        request_sha256=fingerprint,
                    )
                )
            return await handler(request_context)

        return Hooks[Any](model_request=wrap_model_request)

    def abandon_killed(self, sent: Iterable[ModelRequestSent]) -> int:
        """Log each request ``sent`` that no event settled as abandoned, cost unknown; how many.

        For a resume: those requests were in flight when the process that sent them was
        killed. Each is logged once, naming its request id, so the run's total is a lower bound
        (null, with its note) rather than a quiet undercount.
        """
        count = 0
        for event in sent:
            sender = (event.agent_id, event.model, event.provider, event.round_number, event.call)
            self._abandoned(sender, event.request_id, answered=False, cost_usd=None,
                            error=f"no answer: {KILLED}; its cost is unknown")  # fmt: skip
            count += 1
        return count

    def _abandoned(self, sender: Sender, request_id: str | None, **outcome: Any) -> None:
        """Log ``model_request_abandoned`` of a request of ``sender`` with its ``outcome``."""
        agent_id, model, provider, sent, _ = sender
        self._log(
            ModelRequestAbandoned(
                agent_id=agent_id,
                model=model,
                provider=provider,
                sent_in_round=sent,
                request_id=request_id,
                **outcome,
            )
        )

    def forget(self, request: SentRequest) -> None:
        """Drop a settled request from the open ones."""
        self._open.pop(request, None)

    def watch(self, request: SentRequest) -> None:
        """Log ``request`` when it ends, unless an event already logged it (its asker is gone)."""
        if request.settled or request.watched:
            return
        request.watched = True
        if request.task.done():
            self._ended(request)
        else:
            request.task.add_done_callback(lambda _: self._ended(request))

    def _ended(self, request: SentRequest) -> None:
        if not request.settle():  # logged already: by its asker, or given up at the run's end
            return
        if request.task.cancelled():
            self._log_unknown(request, "cancelled before it answered")
        elif (exc := request.task.exception()) is not None:
            self._abandoned(
                request.sender,
                request.logged_id,
                answered=False,
                cost_usd=0.0,  # a failed call is not billed (as every failed call)
                error=f"{type(exc).__name__}: {exc}"[:300],
            )
        else:
            self._log_answer(request)

    def _log_answer(self, request: SentRequest) -> None:
        _, model, provider, _, _ = request.sender
        usage = request.task.result().usage
        self._abandoned(
            request.sender,
            request.logged_id,
            answered=True,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cache_write_1h_tokens=usage.cache_write_1h_tokens,
            cost_usd=price_usage(provider, model, usage),
        )

    def _log_unknown(self, request: SentRequest, why: str) -> None:
        self.given_up += 1
        self._abandoned(
            request.sender,
            request.logged_id,
            answered=False,
            cost_usd=None,
            error=f"no answer: {why}; its cost is unknown",
        )

    async def settle(self, seconds: float = SETTLE_SECONDS) -> None:
        """Wait up to ``seconds`` for the requests in flight, then close the ledger."""
        if self._open:
            self.settling = True
            try:
                await asyncio.wait([r.task for r in self._open], timeout=seconds)
            finally:
                self.settling = False
        self.close(f"the run ended and it had not answered {seconds:g} s later")

    def close(self, why: str) -> int:
        """Settle every request still open; return how many were given up unanswered.

        A request that ended is logged as it ended (answered and priced, or failed); one still
        in flight is logged with its cost unknown (``why`` says why it was not waited for) and
        cancelled.
        """
        given_up = 0
        for request in list(self._open):
            if request.task.done():
                request.watched = True
                self._ended(request)
            elif request.settle():
                self._log_unknown(request, why)
                request.task.cancel()
                given_up += 1
        return given_up
