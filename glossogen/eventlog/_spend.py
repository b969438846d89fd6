"""Spend of a set of model and judge calls, as a run's log prices them (USD, tokens, requests).

:class:`Spend` folds the priced events (:data:`PricedEvent`): per seat (:class:`SeatSpend`) and
the in-run judge's, the calls whose cost is unknown counted apart (never taken as free), and a
GlossoGen 0.5.x log's recorded total. ``RunView`` folds its own spend and a derived run's
inherited one with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from glossogen.eventlog._cost import add_usd
from glossogen.eventlog._events import (
    AgentRunCycleFailed,
    Event,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    Tokens,
)
from glossogen.eventlog._usage import CallUsage


@dataclass
class SeatSpend(Tokens):
    """What one seat's model calls cost and used (USD, tokens, requests)."""

    agent_id: str
    cost_usd: float | None = 0.0
    requests: int = 0
    answered: int = 0
    """Of ``requests``, those the provider answered (an abandoned request may have had none)."""
    usage_unread: int = 0
    """Answered calls whose usage could not be read: their cost is unknown (null)."""

    def add(self, event: LlmResponseReceived | CallUsage | ModelRequestAbandoned) -> None:
        """Count one model call: answered, or abandoned at a phase end (priced as it ended)."""
        cost = event.cost_usd
        self.cost_usd = _add(self.cost_usd, cost)
        self.add_tokens(event)
        self.requests += 1
        if type(event) is not ModelRequestAbandoned or event.answered:
            self.answered += 1
            if cost is None and _unread(event):  # a priced call is read (a cohort's common case)
                self.usage_unread += 1


@dataclass
class Spend:
    """Spend of a set of calls: per seat (registration order) and the in-run judge's."""

    agents: dict[str, SeatSpend] = field(default_factory=dict)
    judge_cost_usd: float | None = 0.0
    judge_calls: int = 0
    judge_tokens: Tokens = field(default_factory=Tokens)
    """Tokens of the judge's answered calls (``judge_called`` and its abandoned requests)."""
    unanswered_requests: int = 0
    """Requests abandoned at a phase end that never answered: their cost is unknown (null)."""
    recorded_total_usd: float | None = None
    """A GlossoGen 0.5.x log's ``simulation_ended.total_cost_usd``: its calls carry no cost, so
    the total it recorded is the only figure (None for a log of this platform)."""

    @property
    def total_cost_usd(self) -> float | None:
        """Agents plus judge, USD; None when some call was not costed."""
        if self.recorded_total_usd is not None:
            return self.recorded_total_usd
        total: float | None = self.judge_cost_usd
        for seat in self.agents.values():
            total = _add(total, seat.cost_usd)
        return total

    judge_usage_unread: int = 0
    """Judge calls whose usage could not be read (cost unknown)."""
    timed_out_requests: int = 0
    """Sent requests that timed out at the client (seats and judge): the provider may have
    answered and billed them after the client left, so their cost is unknown (null)."""
    known_cost_usd: float = 0.0
    """USD of the calls whose cost is known: the total's lower bound when it is unknown."""

    def count(self, event: Event | CallUsage) -> None:
        """Add ``event`` when it is a priced one (a model or judge call); ignore it otherwise."""
        if type(event) not in _PRICED_TYPES:
            return
        cost = event.cost_usd  # type: ignore[union-attr]  # every priced class has one
        if cost is not None:
            self.known_cost_usd = _add(self.known_cost_usd, cost) or 0.0
        if type(event) is LlmResponseReceived or type(event) is CallUsage:
            seat = self.agents.get(event.agent_id)  # not setdefault: no seat built per call
            if seat is None:
                seat = self.agents[event.agent_id] = SeatSpend(event.agent_id)
            seat.add(event)
        elif type(event) is JudgeCalled:
            self.judge_cost_usd = _add(self.judge_cost_usd, event.cost_usd)
            self.judge_calls += 1
            self.judge_tokens.add_tokens(event)
            self.judge_usage_unread += int(_unread(event))
        elif type(event) is ModelRequestAbandoned:
            if event.cost_usd is None and not event.answered:
                self.unanswered_requests += 1
            if event.agent_id == "judge":
                self.judge_cost_usd = _add(self.judge_cost_usd, event.cost_usd)
                self.judge_tokens.add_tokens(event)
            else:
                self.agents.setdefault(event.agent_id, SeatSpend(event.agent_id)).add(event)
        elif type(event) is AgentRunCycleFailed and event.cost_usd != 0.0:
            # answers a failed attempt was billed for that no other event prices, or a request
            # that timed out after it was sent (its cost unknown)
            if event.cost_usd is None and event.error_kind == "timeout":
                self.timed_out_requests += 1
            if event.agent_id == "judge":
                self.judge_cost_usd = _add(self.judge_cost_usd, event.cost_usd)
            else:
                seat = self.agents.setdefault(event.agent_id, SeatSpend(event.agent_id))
                seat.cost_usd = _add(seat.cost_usd, event.cost_usd)

    @property
    def tokens(self) -> Tokens:
        """Tokens of every seat's and the judge's calls, summed."""
        total = Tokens()
        for counted in [*self.agents.values(), self.judge_tokens]:
            total.add_tokens(counted)
        return total

    @property
    def requests(self) -> int:
        """Answered model calls of every seat."""
        return sum(s.requests for s in self.agents.values())

    @property
    def answered_requests(self) -> int:
        """Model calls of every seat that the provider answered."""
        return sum(s.answered for s in self.agents.values())

    @property
    def usage_unread(self) -> int:
        """Answered calls (seats and judge) whose usage could not be read: cost unknown."""
        return self.judge_usage_unread + sum(s.usage_unread for s in self.agents.values())


_add = add_usd
_PRICED = (LlmResponseReceived, JudgeCalled, ModelRequestAbandoned, AgentRunCycleFailed)
PricedEvent = (
    LlmResponseReceived | CallUsage | JudgeCalled | ModelRequestAbandoned | AgentRunCycleFailed
)
_PRICED_TYPES: frozenset[type] = frozenset((*_PRICED, CallUsage))
"""The priced classes, all final, and a call read for its usage alone: ``type(event) in`` it is
``isinstance(event, _PRICED)`` for an event."""


def _unread(event: LlmResponseReceived | CallUsage | ModelRequestAbandoned | JudgeCalled) -> bool:
    """An answered call logged with no cost and no token: its usage was not read."""
    return event.cost_usd is None and not (event.input_tokens or event.output_tokens)


__all__ = ["PricedEvent", "SeatSpend", "Spend"]
