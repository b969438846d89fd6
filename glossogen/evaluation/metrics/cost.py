"""``cost_per_round_usd``: what the simulation spent per round."""

from __future__ import annotations

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import mean, plural

SPEND_EVENTS = (
    "llm_response_received",
    "judge_called",
    "model_request_abandoned",
    "agent_run_cycle_failed",
)
"""The priced events :class:`~glossogen.eventlog.RunView`'s spend is the sum of (read for their
usage alone: the metric reads nothing else of them)."""


@metric("cost_per_round_usd", unit="USD per round", version=2, reads=(), usage=SPEND_EVENTS)
async def cost_per_round_usd(ctx: MetricContext) -> Scored:
    """Mean over the rounds this run played itself of its own spend in the round, USD.

    The spend is :class:`~glossogen.eventlog.RunView`'s: ``cost_usd`` of every
    ``llm_response_received`` (agents) and ``judge_called`` (the in-run judge) the run paid
    for, main phase and postmortem alike, an attempt a crash cut off included (an answered
    call was paid); priced with genai-prices when the run played. The rounds a derived run
    copied from its source cost it nothing and are left out of the mean. Not the text of any
    channel. A call the catalogue could not price makes the spend unknown: the metric is then
    left blank (never 0). Evaluation's own judge spend is not included (see
    ``evaluation_cost``). ``per_agent``: each agent's own spend per round (the in-run judge is
    in the round totals only). Version 2: own spend (version 1 counted a fork's copied rounds
    and left out the cut-off attempts).
    """
    run = ctx.run
    copied = run.copied_rounds
    played = [r for r in run.rounds_played if r not in copied]
    if not played:
        raise NotApplicable("no round was played" + (" by the run itself" if copied else ""))
    spend = run.view.spend
    uncosted = [s.agent_id for s in spend.agents.values() if s.cost_usd is None]
    if spend.judge_cost_usd is None:
        uncosted.append("the in-run judge")
    by_round = run.view.spend_by_round()
    if uncosted or any(by_round.get(r, 0.0) is None for r in played):
        seat = run.seats.get(uncosted[0]) if uncosted else None
        model = f" ({seat.provider}:{seat.model})" if seat is not None else ""
        who = uncosted[0] if uncosted else "a call"
        raise NotApplicable(f"not costed: a call of {who}{model} has no price")
    per_round = {r: by_round.get(r) or 0.0 for r in played}
    score = mean(per_round.values())
    return Scored(
        score=score,
        summary=(
            f"${score:.6f} per round (${sum(per_round.values()):.6f} over "
            f"{plural(len(played), 'round')})"
        ),
        rounds=len(played),
        per_round=[RoundObservation(round_number=r, value=v) for r, v in per_round.items()],
        per_agent=[
            AgentObservation(
                agent_id=a,
                value=(spend.agents[a].cost_usd or 0.0) / len(played) if a in spend.agents else 0.0,
            )
            for a in run.seats
        ],
    )
