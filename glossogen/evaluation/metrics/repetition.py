"""``language_repetition`` (judged): how much each message says the same thing twice."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._judged import every_call_failed, judge_each_round
from glossogen.evaluation.metrics._observe import mean, plural
from glossogen.eventlog import MessageSent

SIDECAR = "language_repetition.jsonl"

INSTRUCTIONS = (
    "You read short messages that teammates exchanged under a character budget. For each "
    "numbered message, rate how much of it restates information it already carries: the same "
    "fact given twice, a number written both as digits and as a word, an abbreviation followed "
    "by its expansion, a repeated word that adds nothing. Give a repetition_factor of 1.0 for a "
    "message with no redundancy, 2.0 when everything in it is said twice, and values in between "
    "(or above) accordingly. Judge only redundancy, not clarity or style. Return one entry per "
    "message, using its number as index."
)


class MessageRepetition(BaseModel):
    """The judge's rating of one numbered message."""

    index: int = Field(description="The message's number in the list (1-based).")
    repetition_factor: float = Field(ge=1.0, description="1.0 = no redundancy; 2.0 = said twice.")


class RepetitionJudgement(BaseModel):
    """The judge's answer for one round: one rating per message."""

    messages: list[MessageRepetition]


def _prompt(messages: list[MessageSent]) -> str:
    lines = [f"{i}. [{m.sender_id}] {m.text}" for i, m in enumerate(messages, 1)]
    return "Messages of one round, in order:\n" + "\n".join(lines)


def _agreement(samples: list[list[float]]) -> float | None:
    """Mean over messages rated at least twice of ``1 - (max - min) / max`` (factors >= 1)."""
    spread = [1.0 - (max(s) - min(s)) / max(s) for s in samples if len(s) >= 2]
    return mean(spread) if spread else None


def _unusable(messages: list[MessageSent], answer: RepetitionJudgement) -> str | None:
    """Why ``answer`` rates none of the round's numbered messages (None: it rates one)."""
    if any(1 <= item.index <= len(messages) for item in answer.messages):
        return None
    shown = [item.index for item in answer.messages]
    return f"unusable answer: rates none of messages 1-{len(messages)} (indexes {shown})"


@metric(
    "language_repetition",
    unit="repetition factor per message",
    kind="judged",
    sidecar=SIDECAR,
    reads=(),
)
async def language_repetition(ctx: MetricContext) -> Scored:
    """Mean over messages of the judge's repetition factor (1.0 = no redundancy).

    Per round, the judge reads the round's messages on the primary channels (phase ``main``,
    composed text) as a numbered list and rates each one (``--judge-replicas`` independent
    calls). A message's factor is the mean of the replicas that rated it; the score is the mean
    over rated messages. Agreement: mean over messages rated twice or more of
    ``1 - (max - min) / max`` of their ratings. Sidecar ``language_repetition.jsonl``: one line
    per message (``repetition_factor`` null when every replica failed for it). Fails when every
    judge call failed; an answer rating none of the round's messages is a failed call (priced,
    never kept in the judge cache).
    """
    rounds, answers, cost = await judge_each_round(
        ctx, INSTRUCTIONS, _prompt, RepetitionJudgement, _unusable
    )
    rows: list[dict[str, Any]] = []
    samples: list[list[float]] = []
    per_round: list[RoundObservation] = []
    agents: dict[str, list[float]] = defaultdict(list)
    for (r, messages), answer in zip(rounds.items(), answers, strict=True):
        ratings: dict[int, list[float]] = defaultdict(list)
        for output in answer.succeeded:
            seen: set[int] = set()
            for item in output.messages:
                if 1 <= item.index <= len(messages) and item.index not in seen:
                    seen.add(item.index)
                    ratings[item.index].append(item.repetition_factor)
        factors: list[float] = []
        for i, m in enumerate(messages, 1):
            factor = mean(ratings[i]) if ratings.get(i) else None
            rows.append(
                {
                    "message_id": m.message_id,
                    "round_number": r,
                    "sender_id": m.sender_id,
                    "repetition_factor": factor,
                }
            )
            if factor is not None:
                factors.append(factor)
                samples.append(ratings[i])
                agents[m.sender_id].append(factor)
        if factors:
            per_round.append(
                RoundObservation(
                    round_number=r,
                    value=mean(factors),
                    note=f"{len(factors)} of {plural(len(messages), 'message')} rated",
                )
            )
    rated = [row["repetition_factor"] for row in rows if row["repetition_factor"] is not None]
    if not rated:
        raise every_call_failed(answers, cost)
    score = mean(rated)
    return Scored(
        score=score,
        summary=f"repetition factor {score:.3f} on average over {plural(len(rated), 'message')}",
        rounds=len(per_round),
        per_round=per_round,
        per_agent=[AgentObservation(agent_id=a, value=mean(v)) for a, v in agents.items()],
        replicas=ctx.judge_replicas,
        agreement=_agreement(samples),
        cost_usd=cost,
        sidecar_rows=rows,
    )
