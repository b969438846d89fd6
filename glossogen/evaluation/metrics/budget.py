"""``budget_utilisation``: how much of the round's character budget was used."""

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
from glossogen.eventlog import MessageSent


@metric("budget_utilisation", unit="share of the round budget used", needs=("budget",), reads=())
async def budget_utilisation(ctx: MetricContext) -> Scored:
    """Mean over rounds played of ``characters sent on metered channels / round budget``.

    Characters are those of the composed text (what the engine charges) of every message on the
    scenario's metered channels in phase ``main``; the budget is the one each message logged
    (``budget_chars``), else the scenario's ``budget_chars()`` under the run's knobs. A round
    without traffic counts as 0.0; a round over budget scores above 1.0. Applies only to
    scenarios with a budget (blank otherwise). ``per_agent``: each agent's share, averaged
    over the same rounds.
    """
    run = ctx.run
    if not run.rounds_played or not run.budget_chars:
        raise NotApplicable("no round played under a budget")
    used: dict[int, int] = defaultdict(int)
    budgets: dict[int, int] = {}
    agents: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for m in run.of_type(MessageSent):
        if m.phase == "main" and m.channel_id in run.metered_channels:
            used[m.round_number] += len(m.text)
            agents[m.sender_id][m.round_number] += len(m.text)
            if m.budget_chars:
                budgets[m.round_number] = m.budget_chars
    shares = {r: used[r] / budgets.get(r, run.budget_chars) for r in run.rounds_played}
    over = sum(1 for s in shares.values() if s > 1.0)
    score = mean(shares.values())
    return Scored(
        score=score,
        summary=(
            f"{score:.1%} of the {run.budget_chars}-character budget used per round on average; "
            f"{over} of {plural(len(shares), 'round')} over budget"
        ),
        rounds=len(shares),
        per_round=[
            RoundObservation(
                round_number=r,
                value=s,
                note=f"{used[r]} of {budgets.get(r, run.budget_chars)} characters",
            )
            for r, s in shares.items()
        ],
        per_agent=[
            AgentObservation(
                agent_id=a,
                value=mean(
                    rounds.get(r, 0) / budgets.get(r, run.budget_chars) for r in run.rounds_played
                ),
            )
            for a, rounds in agents.items()
        ],
    )
