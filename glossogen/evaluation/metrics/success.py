"""``round_success``: the share of rounds won."""

from __future__ import annotations

from collections import defaultdict

from glossogen.evaluation._contract import (
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import plural
from glossogen.eventlog import RoundResultRecorded


@metric("round_success", unit="share of rounds won", needs=("verdicts",), reads=())
async def round_success(ctx: MetricContext) -> Scored:
    """Share of judged rounds won: ``rounds won / rounds judged``.

    Reads ``round_result_recorded`` (the scenario's verdict per team). A round is won when every
    team's verdict in it is a success (one team in most scenarios); void rounds (nobody could
    play) are left out of both counts, as the simulation's own win rate does. The denominator is
    every judged round, silent ones included, the definition GlossoGen 0.5 published
    (``round_success`` there: rounds judged a success over rounds judged). ``per_round`` holds
    one entry per (round, team): 1.0 won, 0.0 lost, with the verdict's reason.
    """
    verdicts: dict[int, list[tuple[str, bool, str]]] = defaultdict(list)
    void: set[int] = set()
    for e in ctx.run.of_type(RoundResultRecorded):
        if e.void:
            void.add(e.round_number)
        else:
            verdicts[e.round_number].append((e.team_id, e.success, e.reason))
    judged = {r: v for r, v in sorted(verdicts.items()) if r not in void}
    if not judged:
        raise NotApplicable("no round was judged")
    won = sum(1 for v in judged.values() if all(ok for _, ok, _ in v))
    per_round = [
        RoundObservation(
            round_number=r,
            value=1.0 if ok else 0.0,
            team_id=team,
            note=f"{'won' if ok else 'lost'}: {reason}",
        )
        for r, v in judged.items()
        for team, ok, reason in v
    ]
    summary = f"{won} of {plural(len(judged), 'round')} won"
    if void:
        summary += f" ({plural(len(void), 'void round')} left out)"
    return Scored(score=won / len(judged), summary=summary, rounds=len(judged), per_round=per_round)
