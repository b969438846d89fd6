"""Money, added exactly: a ``*_usd`` field's values as polars Decimals.

Floats do not add money: ten calls at $0.00042 add to ``0.0042000000000000015`` in floats,
where the run's ``total_cost_usd`` reads ``0.0042`` (the log keeps each cost to 10 places and
sums costs to those places, ``eventlog._cost``). A field whose name ends in ``_usd``
(``cost_usd``, ``total_cost_usd``, ``judge_cost_usd``, ``metric.cost_per_round_usd``: the
units' suffix of the design) is money. Its values are read as the decimals their shortest text
says (the text the log holds, ``0.00042``) into a polars ``Decimal(38, 18)``, whose sum is
exact (a 128-bit count of 1e-18 dollars; the log keeps 1e-10). From that sum a mean is the sum
over the count, and a comparison's difference the difference of two such means; a median is
the middle value or the midpoint of the middle two. Each is answered as the float nearest the
exact figure (``0.0042``), so every surface shows it without float noise.

The quotients and the midpoint are Python ``decimal`` arithmetic on polars' exact sums:
polars' own ``mean`` and ``median`` of a Decimal column are computed in floats (they give
``0.049999999999999996`` for 0.1 and 1e-25). A spread (``stddev``, ``sem``) stays a float: a
square root is no sum of money. The bootstrap's interval is a percentile of resampled means,
computed in floats from each run's exact sum (:func:`run_sums`).

A value past 1e20 dollars does not fit the Decimal (nor does a sum past it): such values are
then aggregated as any other number (:func:`decimals` answers None).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Context, Decimal

import polars as pl
from polars.exceptions import PolarsError

SCALE = 18
"""Decimal places money is held to (a billionth of a billionth of a dollar)."""

HELD = pl.Decimal(38, SCALE)
"""The type money is held as to be added (what the fields list gives as its dtype)."""

_EXACT = Context(prec=80)
"""Enough digits for a quotient of two 38-digit decimals to round once, to the float."""

EXACT_AGGREGATES = ("sum", "mean", "median")
"""The aggregates of money computed on its decimals (min and max are values as recorded)."""


def is_money(column: str) -> bool:
    """Whether ``column`` holds USD: its name, after any family prefix, ends in ``_usd``."""
    return column.rpartition(".")[2].endswith("_usd")


def decimals(values: Sequence[float]) -> pl.Series | None:
    """``values`` as decimals of :data:`SCALE` places, each as its shortest text reads.

    None when one does not fit (a value past 1e20 dollars).
    """
    texts = pl.Series(values, dtype=pl.Float64).cast(pl.String)  # the shortest text: 0.00042
    held = texts.str.to_decimal(scale=SCALE)
    return None if held.null_count() else held


def _sum(held: pl.Series) -> Decimal | None:
    """The exact sum of ``held``; None when it passes the Decimal's 38 digits."""
    try:
        total = held.sum()
    except PolarsError:  # "overflow in decimal addition"
        return None
    return Decimal(total)


def exact_mean(values: Sequence[float]) -> Decimal | None:
    """The exact mean of ``values`` (None: no value, or one past the Decimal's reach)."""
    held = decimals(values) if values else None
    total = None if held is None else _sum(held)
    return None if total is None else _EXACT.divide(total, Decimal(len(values)))


def aggregate(agg: str, values: Sequence[float]) -> float | None:
    """``agg`` (one of :data:`EXACT_AGGREGATES`) of ``values``, exactly, as the nearest float.

    None when there is no value or one does not fit the Decimal (the caller adds floats).
    """
    held = decimals(values) if values else None
    if held is None:
        return None
    if agg == "median":
        ordered = held.sort()
        middle = len(ordered) // 2
        upper = Decimal(ordered[middle])
        if len(ordered) % 2:
            return float(upper)
        return float(_EXACT.divide(_EXACT.add(Decimal(ordered[middle - 1]), upper), Decimal(2)))
    total = _sum(held)
    if total is None:
        return None
    if agg == "sum":
        return float(total)
    return float(_EXACT.divide(total, Decimal(len(values))))


def difference(a: Sequence[float], b: Sequence[float]) -> float | None:
    """B's exact mean less A's, as the nearest float (None when either has none)."""
    a_mean, b_mean = exact_mean(a), exact_mean(b)
    if a_mean is None or b_mean is None:
        return None
    return float(_EXACT.subtract(b_mean, a_mean))


def run_sums(
    runs: Sequence[str], values: Sequence[float]
) -> tuple[list[str], list[float], list[int]] | None:
    """Per run (sorted by run id): the exact sum of its values, as a float, and their count.

    None when a value or a run's sum does not fit the Decimal.
    """
    held = decimals(values)
    if held is None:
        return None
    frame = pl.DataFrame({"run": pl.Series(runs, dtype=pl.String), "value": held})
    try:
        sums = frame.group_by("run").agg(pl.col("value").sum(), pl.len()).sort("run")
    except PolarsError:
        return None
    return (
        sums.get_column("run").to_list(),
        [float(Decimal(v)) for v in sums.get_column("value").to_list()],
        sums.get_column("len").to_list(),
    )


__all__ = ["EXACT_AGGREGATES", "SCALE", "aggregate", "decimals", "difference", "is_money"]
