"""Message length and traffic per round and per message on the primary channels."""

from __future__ import annotations

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import by_agent, by_round, mean, plural


def _require(ctx: MetricContext) -> None:
    if not ctx.run.messages:
        channels = ", ".join(ctx.run.primary_channels) or "none"
        raise NotApplicable(f"no message on the primary channels ({channels}) in phase main")


@metric("mean_chars_per_round", unit="characters per round", reads=())
async def mean_chars_per_round(ctx: MetricContext) -> Scored:
    """Mean characters sent per round on the primary channels, over rounds with a message.

    ``sum(len(text)) per round``, averaged over the rounds that carried at least one message
    (characters are Unicode code points of the composed, pre-noise text; phase ``main``). Rounds
    without traffic are left out, the definition GlossoGen 0.5 published for its
    ``mean_chars_per_round`` ("averaged across rounds that had at least one message"), so scores
    of old runs carry over. ``per_agent``: each agent's characters per such round.
    """
    _require(ctx)
    rounds = by_round(ctx.run.messages)
    totals = {r: sum(len(m.text) for m in ms) for r, ms in rounds.items()}
    score = mean(totals.values())
    return Scored(
        score=score,
        summary=(
            f"{score:.1f} characters per round ({sum(totals.values())} characters over "
            f"{plural(len(totals), 'round')} with messages)"
        ),
        rounds=len(totals),
        per_round=[
            RoundObservation(
                round_number=r, value=float(totals[r]), note=plural(len(ms), "message")
            )
            for r, ms in rounds.items()
        ],
        per_agent=[
            AgentObservation(
                agent_id=a, value=sum(len(m.text) for m in ms) / len(rounds), note=None
            )
            for a, ms in by_agent(ctx.run.messages).items()
        ],
    )


@metric("mean_chars_per_message", unit="characters per message", reads=())
async def mean_chars_per_message(ctx: MetricContext) -> Scored:
    """Mean characters per message on the primary channels: ``sum(len(text)) / messages``.

    Flattened over every message of the run, not a mean of round means, as GlossoGen 0.5
    defined its ``mean_chars_per_message``. Composed (pre-noise) text, phase ``main``.
    ``per_round`` and ``per_agent`` are the same mean within each round and each sender.
    """
    _require(ctx)
    messages = ctx.run.messages
    total = sum(len(m.text) for m in messages)
    score = total / len(messages)
    rounds = by_round(messages)
    return Scored(
        score=score,
        summary=(
            f"{score:.1f} characters per message ({total} over {plural(len(messages), 'message')})"
        ),
        rounds=len(rounds),
        per_round=[
            RoundObservation(
                round_number=r,
                value=mean(len(m.text) for m in ms),
                note=plural(len(ms), "message"),
            )
            for r, ms in rounds.items()
        ],
        per_agent=[
            AgentObservation(
                agent_id=a, value=mean(len(m.text) for m in ms), note=plural(len(ms), "message")
            )
            for a, ms in by_agent(messages).items()
        ],
    )


@metric("messages_per_round", unit="messages per round", reads=())
async def messages_per_round(ctx: MetricContext) -> Scored:
    """Mean messages sent per round on the primary channels, over every round played.

    ``messages / rounds played`` (phase ``main``). Unlike ``mean_chars_per_round``, a round
    without traffic counts, as 0: it is how often agents speak, silence included.
    ``per_agent``: each agent's messages per round played.
    """
    played = ctx.run.rounds_played
    if not played:
        raise NotApplicable("no round was played")
    rounds = by_round(ctx.run.messages)
    counts = {r: len(rounds.get(r, [])) for r in played}
    score = mean(counts.values())
    return Scored(
        score=score,
        summary=(
            f"{score:.2f} messages per round ({len(ctx.run.messages)} over "
            f"{plural(len(played), 'round')})"
        ),
        rounds=len(played),
        per_round=[RoundObservation(round_number=r, value=float(n)) for r, n in counts.items()],
        per_agent=[
            AgentObservation(agent_id=a, value=len(ms) / len(played))
            for a, ms in by_agent(ctx.run.messages).items()
        ],
    )
