"""A run's tape: each seat's model calls in the order it made them, with what each got back.

Read from the log (:attr:`~glossogen.eventlog.RunView.tape`), keyed by ``(seat, call)``: the
seat's agent id (``judge`` for the in-run judge) and its call's 1-based index among that seat's
calls in the log. Each call carries the fingerprint of the request as it was sent
(``model_request_sent.request_sha256``, or an unbilled seat's ``llm_response_received``) and
its outcome: the answer (text, thinking, tool calls with their ids and arguments, token usage,
cost), the failure (kind and message), or that it was abandoned (a phase end cut its asker
off; answered with its usage, or not). A replay (:mod:`glossogen.replay`) hands each seat, at
its n-th call, the n-th call's outcome.

Limits, said plainly: a response's text parts are logged joined, and its parts as text, then
thinking, then tool calls, so an answer whose parts interleaved is replayed in that order; the
judge's answer is logged as its ruling (``success``, ``reason``, ``detail``), not as the raw
output it parsed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel

from glossogen.eventlog._events import (
    TOKEN_FIELDS,
    AgentRunCycleFailed,
    Event,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestSent,
    Tokens,
)

Outcome = Literal["answered", "failed", "abandoned", "ruled", "cached"]


class TapeCall(BaseModel):
    """One model call of one seat and what it got back."""

    seat: str
    call: int
    """1-based index among the seat's calls in the log."""
    model: str
    provider: str
    round_number: int
    request_sha256: str | None
    outcome: Outcome
    text: str = ""
    thinking: str = ""
    tool_calls: list[dict[str, Any]] = []
    tokens: Tokens = Tokens()
    """The call's token usage, as logged (a judge's ruling: its attempt's)."""
    cost_usd: float | None = None
    error_kind: str | None = None
    error: str | None = None
    answered: bool = True
    """False for a failed call or an abandoned one the provider never answered."""
    ruling: dict[str, Any] | None = None
    """The judge's ruling (``success``, ``reason`` and ``detail``) for its ``ruled`` and
    ``cached`` calls. A ``cached`` call is a ruling the judge cache answered (no request sent):
    its ``request_sha256`` is the cache key it was found under (``judge_called.cache_key``)."""
    line: int
    """Index, in the events read, of the event that settled the call."""


class Tape(BaseModel):
    """Every seat's calls, in the order each seat made them."""

    calls: dict[str, list[TapeCall]]

    @property
    def fingerprinted(self) -> bool:
        """True when every call records its request's fingerprint (a log written since)."""
        every = [c for calls in self.calls.values() for c in calls]
        return bool(every) and all(c.request_sha256 is not None for c in every)

    def call(self, seat: str, index: int) -> TapeCall | None:
        """The seat's ``index``-th call (1-based), or None past its last."""
        calls = self.calls.get(seat, [])
        return calls[index - 1] if 0 < index <= len(calls) else None

    @property
    def count(self) -> int:
        """How many calls the tape holds."""
        return sum(len(calls) for calls in self.calls.values())


def _tokens(event: Event) -> Tokens:
    return Tokens(**{name: getattr(event, name) for name in TOKEN_FIELDS})


def read_tape(events: list[Event], every_event: Iterable[Event] = ()) -> Tape:
    """Fold ``events`` (one log's, in order) into its tape.

    ``every_event``: the whole log, when ``events`` are its counted events. A request a killed
    process sent in a round the resume superseded is settled by a counted event (the resume
    logs it abandoned) while its ``model_request_sent`` is not counted: its fingerprint is
    taken from there, or the whole tape would count as recorded without fingerprints.
    """
    sent: dict[str, tuple[int, ModelRequestSent]] = {}
    fingerprints = {
        e.request_id: e.request_sha256 for e in every_event if isinstance(e, ModelRequestSent)
    }
    found: list[tuple[int, TapeCall]] = []  # (order it was sent, call with index 0)

    def add(order: int, line: int, seat: str, sent_event: ModelRequestSent | None,
            event: Event, **fields: Any) -> None:  # fmt: skip
        found.append(
            (
                order,
                TapeCall(
                    seat=seat,
                    call=0,
                    model=str(getattr(event, "model", sent_event.model if sent_event else "")),
                    provider=str(
                        getattr(event, "provider", sent_event.provider if sent_event else "")
                    ),
                    round_number=(sent_event or event).round_number,
                    line=line,
                    **fields,
                ),
            )
        )

    def of(request_id: str | None, line: int) -> tuple[int, ModelRequestSent | None]:
        if request_id is not None and request_id in sent:
            return sent[request_id]
        return line, None

    def fingerprint(request: ModelRequestSent | None, request_id: str | None) -> str | None:
        if request is not None:
            return request.request_sha256
        return fingerprints.get(request_id) if request_id is not None else None

    for line, event in enumerate(events):
        if isinstance(event, ModelRequestSent):
            sent[event.request_id] = (line, event)
        elif isinstance(event, LlmResponseReceived):
            order, request = of(event.request_id, line)
            add(order, line, event.agent_id, request, event, outcome="answered",
                request_sha256=request.request_sha256 if request else event.request_sha256,
                text=event.text, thinking=event.thinking, tool_calls=event.tool_calls,
                cost_usd=event.cost_usd, tokens=_tokens(event))  # fmt: skip
        elif isinstance(event, ModelRequestAbandoned):
            order, request = of(event.request_id, line)
            add(order, line, event.agent_id, request, event, outcome="abandoned",
                request_sha256=fingerprint(request, event.request_id),
                answered=event.answered, error=event.error, cost_usd=event.cost_usd,
                tokens=_tokens(event))  # fmt: skip
        elif isinstance(event, AgentRunCycleFailed):
            for request_id in event.request_ids:
                order, request = of(request_id, line)
                add(order, line, event.agent_id, request, event, outcome="failed",
                    request_sha256=fingerprint(request, request_id),
                    answered=False, error_kind=event.error_kind, error=event.error,
                    cost_usd=event.cost_usd)  # fmt: skip
        elif isinstance(event, JudgeCalled):
            ruling = {"success": event.success, "reason": event.reason, "detail": event.detail}
            # a ruling the judge cache answered sent no request: its call is under its key
            cached: list[str | None] = [None] * event.cached
            for asked in event.request_ids or cached:
                order, request = of(asked, line)
                add(order, line, "judge", request, event,
                    outcome="ruled" if asked else "cached", ruling=ruling,
                    request_sha256=fingerprint(request, asked) or event.cache_key,
                    cost_usd=event.cost_usd, tokens=_tokens(event))  # fmt: skip
    calls: dict[str, list[TapeCall]] = {}
    for _, call in sorted(found, key=lambda pair: pair[0]):
        seat = calls.setdefault(call.seat, [])
        call.call = len(seat) + 1
        seat.append(call)
    return Tape(calls=calls)
