"""``cost_per_round_usd``: what the simulation spent per round."""

from __future__ import annotations

from collections import defaultdict

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import mean, plural
from glossogen.eventlog import JudgeCalled, LlmResponseReceived


@metric("cost_per_round_usd", unit="USD per round")
async def cost_per_round_usd(ctx: MetricContext) -> Scored:
    """Mean over rounds played of the run's own spend in the round, USD.

    Sums ``cost_usd`` of every ``llm_response_received`` (agents) and ``judge_called`` (the
    in-run judge) of the round, main phase and postmortem alike; these were priced with
    genai-prices when the run played. Not the text of any channel. A call the catalogue could
    not price makes the spend unknown: the metric is then left blank (never 0). Evaluation's own
    judge spend is not included (see ``evaluation_cost``). ``per_agent``: each agent's spend per
    round played (the in-run judge is in the round totals only).
    """
    played = ctx.run.rounds_played
    if not played:
        raise NotApplicable("no round was played")
    rounds: dict[int, float] = defaultdict(float)
    agents: dict[str, float] = defaultdict(float)
    for e in ctx.run.events:
        if not isinstance(e, (LlmResponseReceived, JudgeCalled)):
            continue
        cost = e.cost_usd
        if cost is None:
            who = getattr(e, "agent_id", "judge")
            raise NotApplicable(
                f"not costed: a call of {who} ({e.provider}:{e.model}) has no price"
            )
        rounds[e.round_number] += cost
        if isinstance(e, LlmResponseReceived):
            agents[e.agent_id] += cost
    per_round = {r: rounds.get(r, 0.0) for r in played}
    score = mean(per_round.values())
    return Scored(
        score=score,
        summary=(
            f"${score:.6f} per round (${sum(rounds.values()):.6f} over "
            f"{plural(len(played), 'round')})"
        ),
        rounds=len(played),
        per_round=[RoundObservation(round_number=r, value=v) for r, v in per_round.items()],
        per_agent=[
            AgentObservation(agent_id=a, value=agents.get(a, 0.0) / len(played))
            for a in ctx.run.seats
        ],
    )
