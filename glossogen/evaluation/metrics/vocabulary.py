"""``vocabulary_growth``: new word types per round."""

from __future__ import annotations

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import by_round, mean, plural, words


@metric("vocabulary_growth", unit="new word types per round", reads=())
async def vocabulary_growth(ctx: MetricContext) -> Scored:
    r"""Mean over rounds played of the word types first used in that round.

    Word types are distinct lower-cased runs of Unicode word characters (regex ``\w+``) in the
    composed text of messages on the primary channels in phase ``main``. A type is new in the
    first round any agent uses it, so round 1 counts its whole vocabulary; a silent round adds
    0. The curve of a team settling on a code flattens. ``per_agent``: the types each agent
    introduced first (a count over the run).
    """
    played = ctx.run.rounds_played
    if not played or not ctx.run.messages:
        raise NotApplicable("no message on the primary channels in phase main")
    seen: set[str] = set()
    introduced: dict[str, int] = {}
    new_per_round: dict[int, int] = {r: 0 for r in played}
    for r, messages in by_round(ctx.run.messages).items():
        for m in messages:
            for w in words(m.text):
                if w not in seen:
                    seen.add(w)
                    new_per_round[r] = new_per_round.get(r, 0) + 1
                    introduced[m.sender_id] = introduced.get(m.sender_id, 0) + 1
    score = mean(new_per_round.values())
    return Scored(
        score=score,
        summary=(
            f"{score:.1f} new word types per round ({len(seen)} types over "
            f"{plural(len(new_per_round), 'round')})"
        ),
        rounds=len(new_per_round),
        per_round=[
            RoundObservation(round_number=r, value=float(n))
            for r, n in sorted(new_per_round.items())
        ],
        per_agent=[
            AgentObservation(agent_id=a, value=float(introduced.get(a, 0)))
            for a in ctx.run.seats
            if a in introduced or any(m.sender_id == a for m in ctx.run.messages)
        ],
    )
