"""What a run spent, read back from its event log, the ledger (:func:`price_spend`).

The run's own calls (agents and judge, tokens apart), what a derived run's copied rounds cost
its source, its model errors by kind, and why the total is unknown when it is.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from glossogen.eventlog import (
    AgentCost,
    AgentRunCycleFailed,
    RunView,
    Tokens,
)
from glossogen.pricing import logged_usd
from glossogen.storage import (
    RunFolder,
)


class RunSpend(BaseModel):
    """What a run spent, in USD, read from its event log (null = some call not costed).

    ``total_cost_usd``, ``judge_cost_usd`` and ``agent_costs`` are the run's own calls;
    ``inherited_cost_usd`` is what a derived run's copied rounds cost its source.
    """

    total_cost_usd: float | None
    judge_cost_usd: float | None
    agent_costs: list[AgentCost]
    inherited_cost_usd: float | None = 0.0
    model_errors: dict[str, int] = {}
    """This run's own ``agent_run_cycle_failed`` events by ``error_kind``."""
    cost_note: str | None = None
    """Why ``total_cost_usd`` is null, when it is."""
    priced_cost_usd: float | None = None
    """When ``total_cost_usd`` is null: the calls whose cost is known, summed (a lower bound)."""
    tokens: Tokens = Field(default_factory=Tokens)
    """Tokens of the run's own calls, agents and judge (cache reads and writes apart)."""
    judge_tokens: Tokens = Field(default_factory=Tokens)
    """Tokens of the in-run judge's own calls."""


def _usd(value: float | None) -> float | None:
    return None if value is None else logged_usd(value)


def _unanswered_note(count: int, known_usd: float) -> str:
    return (
        f"{count} model request(s) never answered (abandoned at a phase end, or in flight when "
        f"a process was killed): what they cost is unknown; the calls priced sum to "
        f"{known_usd:.6f} USD, a lower bound"
    )


def price_spend(folder: RunFolder) -> RunSpend:
    """Return a run's spend as its event log records it (:class:`~glossogen.eventlog.RunView`).

    Raises:
        StorageError: the log cannot be read.
    """
    view = RunView.load(folder.log_url)
    own = view.spend
    errors: dict[str, int] = {}
    for event in view.events:
        if isinstance(event, AgentRunCycleFailed) and event.event_id not in view.inherited:
            errors[event.error_kind] = errors.get(event.error_kind, 0) + 1
    note = None
    if own.total_cost_usd is None:
        notes = (
            [_unanswered_note(own.unanswered_requests, own.known_cost_usd)]
            if own.unanswered_requests
            else []
        )
        if own.timed_out_requests:
            notes.append(
                f"{own.timed_out_requests} model request(s) timed out after they were sent: the "
                "provider may have answered and billed them after the client left, so what they "
                f"cost is unknown; the calls priced sum to {own.known_cost_usd:.6f} USD, a lower "
                "bound"
            )
        if own.usage_unread:
            notes.append(
                f"{own.usage_unread} answered model call(s) returned no usage that could be "
                "read: what they cost is unknown"
            )
        note = (
            "; ".join(notes) or "a model of this run is not in the price catalogue (genai-prices)"
        )
    return RunSpend(
        total_cost_usd=_usd(own.total_cost_usd),
        judge_cost_usd=_usd(own.judge_cost_usd),
        agent_costs=[
            AgentCost(
                agent_id=seat.agent_id,
                cost_usd=_usd(seat.cost_usd),
                input_tokens=seat.input_tokens,
                output_tokens=seat.output_tokens,
                requests=seat.requests,
                cache_read_tokens=seat.cache_read_tokens,
                cache_write_tokens=seat.cache_write_tokens,
                cache_write_1h_tokens=seat.cache_write_1h_tokens,
            )
            for seat in own.agents.values()
        ],
        inherited_cost_usd=_usd(view.inherited_spend.total_cost_usd),
        model_errors=errors,
        cost_note=note,
        priced_cost_usd=None if note is None else _usd(own.known_cost_usd),
        tokens=own.tokens,
        judge_tokens=own.judge_tokens,
    )
