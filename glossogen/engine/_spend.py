"""The run's spend cap as a reservation ledger: a model request is paid for before it is sent.

Rule: before a billed model request (an agent's or the in-run judge's) is sent, its worst case
is reserved against the run's ``spend_cap_usd``; the request that would pass the cap is refused
(:class:`~glossogen.eventlog.ModelRequestRefused`, then ``SpendCapReached``) and none after it is
sent. So the spend the run commits, ``spent + reserved``, never passes the cap, and neither
does what it logs.

- **Worst case** of one request: a safe upper bound of its input tokens at the dearer of the
  input and cache-write rates, plus its output cap (the request's ``max_tokens``) at the output
  rate, priced with genai-prices (:func:`glossogen.pricing.price_call`). The input bound is the
  UTF-8 bytes of the whole request as pydantic-ai holds it (messages with their instructions,
  plus the tool and output definitions) plus :data:`FRAMING_TOKENS` for what a provider adds
  (Anthropic's tool-use preamble): every tokenizer in use emits at least one byte per token.
  Under a cap a request whose settings name no ``max_tokens`` is sent with
  :data:`~glossogen.knobs.DEFAULT_MAX_TOKENS`, so its output is bounded.
- **Settled** when answered: the reservation becomes the answer's priced usage (the figure its
  event logs); a call that fails is not billed (released); one cancelled unanswered keeps its
  worst case (its cost is unknown). A request a phase end abandons settles when it finishes in
  the background.
- ``spent`` starts at what earlier processes of the run logged (a resume).

Money is kept in ``Decimal`` (every priced figure is already rounded to the log's places), so
``spent + reserved + worst > cap`` is decided exactly.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai.capabilities import Hooks
from pydantic_ai.capabilities.abstract import WrapModelRequestHandler
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from glossogen.engine._requests import sending
from glossogen.engine._runner import SpendCapReached
from glossogen.eventlog import Event, ModelRequestRefused
from glossogen.knobs import DEFAULT_MAX_TOKENS
from glossogen.pricing import price_call, price_usage

FRAMING_TOKENS = 1024
"""Input tokens a provider may add to a request beyond its own bytes (a tool-use preamble)."""


@cache
def _parameters() -> TypeAdapter[ModelRequestParameters]:
    """The request parameters' serializer, built on a capped run's first request.

    Not at import: its schema was most of this module's import time, and a run without a cap
    never needs it.
    """
    return TypeAdapter(ModelRequestParameters)


def input_token_bound(request_context: ModelRequestContext) -> int:
    """A safe upper bound of the input tokens of one request: its UTF-8 bytes + framing."""
    messages = ModelMessagesTypeAdapter.dump_json(request_context.messages)
    parameters = _parameters().dump_json(request_context.model_request_parameters)
    return len(messages) + len(parameters) + FRAMING_TOKENS


LONG_CACHE = ("1h", "12h")
"""Cache lifetimes whose writes are priced above five-minute ones (Anthropic's one hour)."""


def worst_case_usd(
    provider: str, model: str, input_tokens: int, max_tokens: int, long_cache: bool = False
) -> float | None:
    """USD of a request of ``input_tokens`` whose answer uses its whole ``max_tokens``.

    The input is priced at the dearer of the plain and cache-write rates (a cached prompt
    costs more the first time), the one-hour write rate too when the request caches for long
    (``long_cache``: its ``cache`` is one of :data:`LONG_CACHE`); None when the model is not
    in the price catalogue.
    """
    writes = [(0, 0), (input_tokens, 0)] + ([(input_tokens, input_tokens)] if long_cache else [])
    prices = [
        price_call(
            provider,
            model,
            input_tokens=input_tokens,
            output_tokens=max_tokens,
            cache_write_tokens=written,
            cache_write_1h_tokens=written_1h,
        )
        for written, written_1h in writes
    ]
    known = [p for p in prices if p is not None]
    return max(known) if len(known) == len(prices) else None


def _usd(value: float) -> Decimal:
    return Decimal(repr(value))


class SpendReservations:
    """The run's spend (settled) and the worst cases of its requests in flight, against its cap.

    Attributes:
        cap: USD the run's own model requests may spend (None: no cap, nothing is reserved).
        spent: USD settled: what earlier processes logged plus every answer of this one.
        refused: The refusal that capped the run (None while every request fitted).
    """

    def __init__(self, cap: float | None, emit: Callable[[Event], None]) -> None:
        """A ledger for ``cap``; ``emit`` logs the refusal (the engine's sink)."""
        self.cap = cap
        self.spent = Decimal(0)
        self.refused: ModelRequestRefused | None = None
        self._emit = emit
        self._open: dict[int, Decimal] = {}
        self._tokens = itertools.count(1)

    @property
    def reserved(self) -> Decimal:
        """USD reserved for the requests in flight (their worst cases)."""
        return sum(self._open.values(), Decimal(0))

    @property
    def capped(self) -> bool:
        """True once a request was refused, or the settled spend has reached the cap."""
        return self.refused is not None or (self.cap is not None and self.spent >= _usd(self.cap))

    def allows_call(self) -> bool:
        """False once the run is capped: no new model request is made."""
        return not self.capped

    def reserve(self, worst: float) -> int | None:
        """Reserve ``worst`` USD; its token, or None when it would pass the cap (or capped)."""
        if self.capped:
            return None
        if self.cap is not None and self.spent + self.reserved + _usd(worst) > _usd(self.cap):
            return None
        token = next(self._tokens)
        self._open[token] = _usd(worst)
        return token

    def settle(self, token: int, cost: float | None) -> None:
        """Count an answered request at its priced ``cost`` (None: unknown, its worst case)."""
        worst = self._open.pop(token, Decimal(0))
        self.spent += worst if cost is None else _usd(cost)

    def release(self, token: int) -> None:
        """Drop the reservation of a request that failed unbilled."""
        self._open.pop(token, None)

    def hooks(self, agent_id: str, provider: str, model: str) -> Hooks[Any]:
        """The ``wrap_model_request`` capability that reserves each request of one caller.

        ``agent_id`` is the seat (or ``judge``). Placed after the engine's own request hook, it
        wraps the HTTP request itself, so a request a phase end abandons settles when it ends.
        """

        async def wrap_model_request(
            ctx: RunContext[Any],
            *,
            request_context: ModelRequestContext,
            handler: WrapModelRequestHandler,
        ) -> ModelResponse:
            if self.cap is None or provider in ("scripted", "local"):
                return await handler(request_context)
            if self.refused is not None:  # a request was refused: none is sent after it
                raise SpendCapReached
            settings = ModelSettings(**(request_context.model_settings or {}))
            max_tokens = settings.get("max_tokens")
            if max_tokens is None:  # an unbounded answer cannot be reserved
                max_tokens = settings["max_tokens"] = DEFAULT_MAX_TOKENS
                request_context.model_settings = settings
            bound = input_token_bound(request_context)
            long_cache = settings.get("cache") in LONG_CACHE
            worst = worst_case_usd(provider, model, bound, max_tokens, long_cache)
            token = None if worst is None else self.reserve(worst)
            if token is None:
                self._refuse(agent_id, provider, model, bound, max_tokens, worst)
                raise SpendCapReached
            if (sent := sending()) is not None:  # its model_request_sent records the worst case
                sent.reserved_usd = worst
            try:
                response = await handler(request_context)
            except asyncio.CancelledError:
                self.settle(token, None)  # given up unanswered: it may have been billed
                raise
            except BaseException:
                self.release(token)  # a failed call is not billed (as the log prices it)
                raise
            self.settle(token, price_usage(provider, model, response.usage))
            return response

        return Hooks[Any](model_request=wrap_model_request)

    def _refuse(
        self,
        agent_id: str,
        provider: str,
        model: str,
        bound: int,
        max_tokens: int,
        worst: float | None,
    ) -> None:
        refusal = ModelRequestRefused(
            agent_id=agent_id,
            model=model,
            provider=provider,
            input_tokens_bound=bound,
            max_tokens=max_tokens,
            worst_case_usd=worst,
            spent_usd=float(self.spent),
            reserved_usd=float(self.reserved),
            cap_usd=float(self.cap or 0.0),
        )
        self.refused = refusal
        self._emit(refusal)
