"""``topographic_similarity`` of signal_game (Brighton & Kirby 2006), a metric plug-in.

Declared in the ``glossogen.metrics`` entry-point group like any third-party metric.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

from glossogen.evaluation import (
    MetricContext,
    NotApplicable,
    RoundObservation,
    Scored,
    metric,
)
from scenarios.signal_game.events import SignalGameChoiceMade

Named = tuple[dict[str, str], str]
"""One target's attributes and the message that named it."""


def edit_distance(a: str, b: str) -> int:
    """Return the Levenshtein distance of ``a`` and ``b`` (insert, delete, substitute: 1 each).

    Written out (a dozen lines) because no installed library provides it.
    """
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[len(b)]


def meaning_distance(a: dict[str, str], b: dict[str, str]) -> int:
    """Return how many attributes two targets differ in (Hamming distance)."""
    return sum(a[name] != b.get(name) for name in a)


def topographic(named: list[Named]) -> float | None:
    """Spearman correlation of meaning distances and message edit distances over all pairs.

    Returns None with fewer than two pairs, or when either distance is the same for every pair
    (the correlation is undefined).
    """
    pairs = list(itertools.combinations(named, 2))
    if len(pairs) < 2:
        return None
    import polars as pl  # here, not at import: metrics register in every evaluate's start-up

    frame = pl.DataFrame(
        {
            "meaning": [meaning_distance(a, b) for (a, _), (b, _) in pairs],
            "message": [edit_distance(x, y) for (_, x), (_, y) in pairs],
        }
    )
    if frame["meaning"].n_unique() < 2 or frame["message"].n_unique() < 2:
        return None
    rho = frame.select(pl.corr("meaning", "message", method="spearman")).item()
    return None if rho is None or math.isnan(rho) else float(rho)


@metric(
    "topographic_similarity",
    unit="Spearman correlation of meaning and message distances",
    needs=("channels",),
    scenarios=("signal_game",),
    reads=("signal_game_choice_made",),
)
async def topographic_similarity(ctx: MetricContext) -> Scored:
    """Spearman correlation between targets' attribute distances and their messages' distances.

    Over every pair of signal_game targets (``signal_game_choice_made``: the target's
    attributes and the sender's message): the meaning distance is the number of attributes in
    which the two targets differ (Hamming), the message distance the Levenshtein edit distance
    of the two messages; the score is their Spearman rank correlation over all of the run's
    messages, ``per_round`` the same within each round (a round whose distances do not vary is
    left out). 1.0: similar meanings always get similar messages (a compositional code).
    """
    rounds: dict[int, list[Named]] = defaultdict(list)
    for e in ctx.run.of_type(SignalGameChoiceMade):
        rounds[e.round_number].append((e.attributes, e.message))
    everything = [n for r in sorted(rounds) for n in rounds[r]]
    score = topographic(everything)
    if score is None:
        raise NotApplicable("fewer than two pairs of named targets with varying distances")
    per_round = []
    for r in sorted(rounds):
        rho = topographic(rounds[r])
        if rho is not None:
            per_round.append(
                RoundObservation(round_number=r, value=rho, note=f"{len(rounds[r])} messages")
            )
    return Scored(
        score=score,
        summary=f"topographic similarity {score:.3f} over {len(everything)} messages",
        rounds=len(rounds),
        per_round=per_round,
    )
