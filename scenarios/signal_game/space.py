"""The attribute space of signal_game and the draw of each target's candidates.

An object is one value per attribute: ``attributes`` attributes, ``values_per_attribute``
values each, taken from the first rows and columns of :data:`ATTRIBUTES`. For a target, the
distractors are distinct objects sharing exactly ``distractor_overlap`` attributes with it
(more overlap: harder to tell apart). The receiver sees the candidates shuffled, each under a
label drawn afresh per target, so neither position nor label says anything.
"""

from __future__ import annotations

import itertools
import math
import random

from pydantic import BaseModel

ATTRIBUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hue", ("ochre", "slate", "rose", "moss", "cobalt", "umber")),
    ("pattern", ("striped", "dotted", "plain", "checked", "marbled", "ringed")),
    ("form", ("disc", "shard", "loop", "spire", "cusp", "knot")),
    ("finish", ("glassy", "furred", "rough", "waxen", "gilded", "chalky")),
    ("heft", ("airy", "dense", "hollow", "brittle", "springy", "leaden")),
    ("glow", ("dim", "pulsing", "steady", "flickering", "dark", "bright")),
)
MAX_ATTRIBUTES = len(ATTRIBUTES)
MAX_VALUES = len(ATTRIBUTES[0][1])
LABELS = (
    "pell", "quor", "vask", "tiln", "brim", "dosk", "yarn", "melk", "sonn", "fiv", "garp", "hult",
)  # fmt: skip
"""Labels the receiver's candidates are shown under (nonsense words, reshuffled per target)."""

Item = tuple[int, ...]
"""An object: one value index per attribute."""


def distractor_pool(attributes: int, values: int, overlap: int) -> int:
    """Return how many objects share exactly ``overlap`` attributes with a given target."""
    return math.comb(attributes, overlap) * (values - 1) ** (attributes - overlap)


def words(item: Item) -> dict[str, str]:
    """Return ``item`` as attribute name -> value word."""
    return {ATTRIBUTES[i][0]: ATTRIBUTES[i][1][v] for i, v in enumerate(item)}


def hamming(a: Item, b: Item) -> int:
    """Return how many attributes ``a`` and ``b`` differ in."""
    return sum(x != y for x, y in zip(a, b, strict=True))


class Target(BaseModel):
    """One target of a round: the target, the receiver's candidates and their labels."""

    target: list[int]
    candidates: list[list[int]]
    """The receiver's candidates in its shown order (the target among them)."""
    labels: list[str]
    """The label of each candidate, item for item."""

    @property
    def answer(self) -> str:
        """The label the target is shown under."""
        return self.labels[self.candidates.index(self.target)]


def draw_target(
    rng: random.Random, *, attributes: int, values: int, candidates: int, overlap: int
) -> Target:
    """Draw a target and ``candidates - 1`` distractors sharing exactly ``overlap`` attributes."""
    target = tuple(rng.randrange(values) for _ in range(attributes))
    pool = [
        item
        for item in itertools.product(range(values), repeat=attributes)
        if attributes - hamming(item, target) == overlap
    ]
    shown = [target, *rng.sample(pool, candidates - 1)]
    rng.shuffle(shown)
    labels = rng.sample(LABELS, candidates)
    return Target(target=list(target), candidates=[list(c) for c in shown], labels=labels)
