"""Channels, the per-round character budget and channel noise.

Budget rule: characters of the composed text, on metered channels only,
charged inside the send; warnings fire in ascending order, each threshold once per round.
Noise is applied after metering, so the sender pays for what it wrote, not what arrived.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

WARNING_THRESHOLDS: tuple[float, ...] = (0.5, 0.8, 1.0)
"""Shares of the round budget at which agents are warned (each once per round)."""

MASK_CHARACTER = "_"


@dataclass
class ChannelMessage:
    """A message as the channel holds it (``text`` composed, ``delivered_text`` after noise)."""

    message_id: str
    channel_id: str
    sender_id: str
    text: str
    delivered_text: str
    round_number: int
    seq: int
    """The run's count of messages sent, this one included (continued by a resume or fork)."""

    @property
    def short_id(self) -> str:
        """The id agents see, ``m<seq>``: a UUID would cost every seat tokens per message."""
        return f"m{self.seq}"

    def as_delivered(self) -> dict[str, str]:
        """Return what a recipient sees: channel, sender, delivered text, short message id."""
        return {
            "message_id": self.short_id,
            "channel_id": self.channel_id,
            "sender_id": self.sender_id,
            "text": self.delivered_text,
        }


@dataclass
class Channel:
    """An ordered list of messages with its members and whether it is metered."""

    channel_id: str
    metered: bool
    members: tuple[str, ...]
    messages: list[ChannelMessage] = field(default_factory=list)


@dataclass
class BudgetMeter:
    """Characters charged this round against ``budget_chars``.

    ``charge(n)`` returns the thresholds newly crossed, in ascending order; ``exceeded`` turns
    true once ``used_chars`` passes ``budget_chars``.
    """

    budget_chars: int
    used_chars: int = 0
    warned: set[float] = field(default_factory=set)
    exceeded_reported: bool = False
    thresholds: tuple[float, ...] = WARNING_THRESHOLDS
    """Shares of the budget at which members are warned (the scenario may name its own)."""

    def charge(self, chars: int) -> list[float]:
        """Charge ``chars`` characters; return the warning thresholds this charge crossed."""
        self.used_chars += chars
        crossed = [
            t
            for t in self.thresholds
            if t not in self.warned and self.used_chars >= t * self.budget_chars
        ]
        self.warned.update(crossed)
        return crossed

    @property
    def exceeded(self) -> bool:
        """True once more characters were charged than the budget holds."""
        return self.used_chars > self.budget_chars


def apply_noise(text: str, level: float, mode: Literal["mask", "drop"], rng: random.Random) -> str:
    """Return ``text`` as delivered through a noisy channel.

    Each non-space character is hit independently with probability ``level`` (0..1), drawn from
    ``rng`` in order; a hit character becomes ``_`` (``mask``) or disappears (``drop``). Spaces
    are never hit, so word boundaries survive. Level 0 returns ``text`` unchanged and draws nothing.
    """
    if level <= 0.0:
        return text
    out: list[str] = []
    for ch in text:
        if not ch.isspace() and rng.random() < level:
            if mode == "mask":
                out.append(MASK_CHARACTER)
        else:
            out.append(ch)
    return "".join(out)
