"""``character_entropy_bits``: how varied a message's characters are."""

from __future__ import annotations

from glossogen.evaluation._contract import MetricContext, Scored
from glossogen.evaluation._measures import character_entropy_bits as entropy_of
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import per_message_mean


@metric("character_entropy_bits", unit="bits per character", reads=())
async def character_entropy_bits(ctx: MetricContext) -> Scored:
    """Mean over messages of each message's Shannon character entropy, bits per character.

    Per message ``H = -sum(p_c * log2(p_c))`` over its distinct characters (Shannon 1948;
    :func:`glossogen.evaluation.character_entropy_bits`, the helper the export uses), then the
    mean over every message on the primary channels in phase ``main`` (composed, pre-noise
    text). Not the entropy of all text pooled. ``"aab"`` scores 0.9183. Lower means more
    repetitive characters.
    """
    return per_message_mean(ctx.run.messages, entropy_of, "bits per character")
