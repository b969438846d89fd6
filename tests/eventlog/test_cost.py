"""add_usd and logged_usd give ``round(value, 10)``'s very float without calling ``round``."""

from __future__ import annotations

import random
import struct

import pytest

from glossogen.eventlog import add_usd, logged_usd


def _bits(value: float | None) -> bytes | None:
    return None if value is None else struct.pack("<d", value)


def _reference_add(total: float | None, cost: float | None) -> float | None:
    if total is None or cost is None:
        return None
    value = total + cost
    rounded = round(value, 10)
    return rounded if rounded or not value else value


def _reference_logged(value: float) -> float:
    rounded = round(value, 10)
    return rounded if rounded or not value else value


EDGES = [
    (0.0, 0.0), (-0.0, -0.0), (0.0, -0.0), (None, 0.001), (0.001, None), (0.0, 1e-12),
    (1e-12, 3e-12), (0.0, 4e-11), (0.0, 5e-11), (0.0, 6e-11), (0.0, -1e-12), (0.0, 1.5e-10),
    (0.0, 2.5e-10), (0.04, 0.0048), (109.0, 0.99), (110.0, 1e-3), (1e20, 1.0),
    (0.0, float("inf")), (0.0, float("nan")),
]  # fmt: skip


@pytest.mark.parametrize(("total", "cost"), EDGES)
def test_edges_round_as_round_does(total: float | None, cost: float | None) -> None:
    assert _bits(add_usd(total, cost)) == _bits(_reference_add(total, cost))
    if cost is not None:
        assert _bits(logged_usd(cost)) == _bits(_reference_logged(cost))


def test_sampled_sums_and_near_halves_round_as_round_does() -> None:
    draw = random.Random(31)
    pairs = []
    for _ in range(20_000):
        pairs.append(
            (draw.random() * 10 ** draw.uniform(-12, 2), draw.random() * 10 ** -draw.uniform(1, 14))
        )
        whole = draw.randrange(0, 10**11)  # a multiple of the last place, plus near a half of it
        pairs.append((whole / 1e10, draw.choice([0.0, 5e-11, 4.9999e-11, 5.0001e-11, 1e-13])))
    wrong = [(t, c) for t, c in pairs if _bits(add_usd(t, c)) != _bits(_reference_add(t, c))] + [
        (c, c) for _, c in pairs if _bits(logged_usd(c)) != _bits(_reference_logged(c))
    ]
    assert wrong == []
