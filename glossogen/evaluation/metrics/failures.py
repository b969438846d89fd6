"""``agent_cycle_failures``: agent cycles that failed after their retries."""

from __future__ import annotations

from collections import Counter

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import plural
from glossogen.eventlog import AgentRunCycleFailed

JUDGE_AGENT_ID = "judge"
"""The ``agent_id`` the in-run judge's failures are logged under (not an agent's failure)."""


@metric("agent_cycle_failures", unit="failed agent cycles", reads=("agent_run_cycle_failed",))
async def agent_cycle_failures(ctx: MetricContext) -> Scored:
    """Count of ``agent_run_cycle_failed`` events of agents over the run (0 is a real count).

    Counts the events the engine logs when an agent's cycle failed after its retries (provider
    errors, bad tool calls), in every phase; failures of the in-run judge (``agent_id``
    ``judge``) are left out. Not computed from any channel's text. ``per_round``: the count in
    each round played (zeros included); ``per_agent``: the count per agent.
    """
    played = ctx.run.rounds_played
    if not played:
        raise NotApplicable("no round was played")
    failed = [e for e in ctx.run.of_type(AgentRunCycleFailed) if e.agent_id != JUDGE_AGENT_ID]
    rounds = Counter(e.round_number for e in failed)
    agents = Counter(e.agent_id for e in failed)
    return Scored(
        score=float(len(failed)),
        summary=f"{plural(len(failed), 'failed agent cycle')} over {plural(len(played), 'round')}",
        rounds=len(played),
        per_round=[RoundObservation(round_number=r, value=float(rounds.get(r, 0))) for r in played],
        per_agent=[
            AgentObservation(agent_id=a, value=float(agents.get(a, 0))) for a in ctx.run.seats
        ],
    )
