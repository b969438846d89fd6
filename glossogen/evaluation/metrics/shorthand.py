"""``shorthand_codes`` (judged): invented codes and abbreviations per round."""

from __future__ import annotations

import itertools

from pydantic import BaseModel, Field

from glossogen.evaluation._contract import (
    MetricContext,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._judged import every_call_failed, judge_each_round
from glossogen.evaluation.metrics._observe import mean, plural
from glossogen.eventlog import MessageSent

INSTRUCTIONS = (
    "You read the messages two or more teammates exchanged in one round. List every shorthand "
    "code they use: an abbreviation, a clipped word, a symbol or a made-up token that stands for "
    "a longer meaning the team seems to share (for example 'L4' for 'intensity level 4'). Do "
    "not list ordinary words used in their ordinary sense, numbers on their own, or names. "
    "List each code once, with the meaning you infer. An empty list is a valid answer."
)


class ShorthandCode(BaseModel):
    """One code the judge found."""

    code: str = Field(description="The code exactly as written.")
    meaning: str = Field(description="What it seems to stand for.")


class ShorthandJudgement(BaseModel):
    """The judge's answer for one round."""

    codes: list[ShorthandCode]


def _prompt(messages: list[MessageSent]) -> str:
    lines = [f"- [{m.sender_id}] {m.text}" for m in messages]
    return "Messages of one round, in order:\n" + "\n".join(lines)


def _jaccard(a: set[str], b: set[str]) -> float:
    """``|a & b| / |a | b|``; two empty sets agree fully (1.0)."""
    return len(a & b) / len(a | b) if a | b else 1.0


@metric("shorthand_codes", unit="shorthand codes per round", kind="judged", reads=())
async def shorthand_codes(ctx: MetricContext) -> Scored:
    """Mean over judged rounds of the distinct shorthand codes the judge lists for the round.

    Per round with messages, the judge reads the round's messages on the primary channels
    (phase ``main``, composed text) and lists the codes and abbreviations the team invented
    (``--judge-replicas`` independent calls). A round's value is the mean count over the
    replicas that answered (codes compared case-folded); the score is the mean over rounds.
    Agreement: mean over rounds answered twice or more of the mean pairwise Jaccard index of the
    replicas' code sets. Fails when every judge call failed.
    """
    rounds, answers, cost = await judge_each_round(ctx, INSTRUCTIONS, _prompt, ShorthandJudgement)
    per_round: list[RoundObservation] = []
    agreements: list[float] = []
    for r, answer in zip(rounds, answers, strict=True):
        sets = [
            {c.code.strip().casefold() for c in o.codes if c.code.strip()} for o in answer.succeeded
        ]
        if not sets:
            continue
        union = sorted(set().union(*sets))
        per_round.append(
            RoundObservation(
                round_number=r,
                value=mean(len(s) for s in sets),
                note=", ".join(union)[:200] or None,
            )
        )
        pairs = [_jaccard(a, b) for a, b in itertools.combinations(sets, 2)]
        if pairs:
            agreements.append(mean(pairs))
    if not per_round:
        raise every_call_failed(answers, cost)
    score = mean(o.value for o in per_round)
    return Scored(
        score=score,
        summary=f"{score:.2f} shorthand codes per round over {plural(len(per_round), 'round')}",
        rounds=len(per_round),
        per_round=per_round,
        replicas=ctx.judge_replicas,
        agreement=mean(agreements) if agreements else None,
        cost_usd=cost,
    )
