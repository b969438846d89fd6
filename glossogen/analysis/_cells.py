"""One group's cell: its values, their aggregate, and its 95% interval.

A cell's values are its rows' non-blank values, each with its run (the clusters of the
bootstrap); blank rows are counted as ``missing``. An aggregate that overflows a float inside
(a sum past 1.8e308) is computed again on the values scaled by a power of two; one that still
overflows is blank with a note. Money (``*_usd``) is added exactly (:mod:`._money`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from glossogen.analysis import _money as money
from glossogen.analysis._query import Query
from glossogen.analysis._result import Cell, Group, Interval
from glossogen.analysis._rows import NAMED_RUNS
from glossogen.analysis._stats import (
    cluster_bootstrap,
    wilson,
)
from glossogen.analysis._terms import Measure

INTERVALLED = ("mean", "rate")


@dataclass
class Values:
    """One measure's values in one group: the values and the run of each."""

    values: list[Any]
    """Floats, except for a ``count`` of a text field (its texts)."""
    runs: list[str]
    missing: int
    usd: bool = False
    """The values are USD (:func:`~glossogen.analysis._money.is_money`): added exactly."""

    def exponent(self) -> int:
        """The power of two every value's magnitude is below (:func:`_exponent`)."""
        return _exponent(self.values)

    def clusters(self, exponent: int = 0) -> tuple[list[str], list[float], list[int]]:
        """Per run (sorted by run id): the sum and the count of its values.

        Each run's values are added in row order (``numpy.bincount`` adds its weights in input
        order), so a sum is the one a running total would give. ``exponent``: each value is
        first scaled by ``2 ** -exponent`` (exactly: a power of two), so that sums of values
        near the float's limit do not overflow. Money (``usd``, unscaled) is added exactly
        (:func:`~glossogen.analysis._money.run_sums`), each run's sum the float nearest it.
        """
        if not self.runs:
            return [], [], []
        exact = money.run_sums(self.runs, self.values) if self.usd and not exponent else None
        if exact is not None:  # money: each run's exact sum (no value near the float's limit)
            return exact
        order, codes = np.unique(np.asarray(self.runs, dtype=str), return_inverse=True)
        values = np.ldexp(np.asarray(self.values, dtype=float), -exponent)
        sums = np.bincount(codes, weights=values)
        counts = np.bincount(codes)
        return [str(r) for r in order], sums.tolist(), counts.tolist()


def _number(value: object) -> float:
    """A polars aggregate of a non-empty Float64 series without nulls, as a float."""
    if not isinstance(value, (int, float)):
        raise TypeError(f"an aggregate of numbers gave {value!r}")
    return float(value)


_SCALABLE = ("mean", "rate", "median", "stddev", "sem")
"""Aggregates that scale with their values: computed again on the values scaled by a power of
two when a sum or square inside overflowed (the true value may still be a float)."""


def _exponent(values: Sequence[float]) -> int:
    """The least ``e`` with every finite value's magnitude below ``2 ** e`` (0 for none)."""
    return max((math.frexp(v)[1] for v in values if math.isfinite(v)), default=0)


def _ldexp(value: float, exponent: int) -> float:
    """``value * 2 ** exponent``; infinite where that overflows a float."""
    try:
        return math.ldexp(value, exponent)
    except OverflowError:
        return math.copysign(math.inf, value)


def aggregate_of(agg: str, values: list[Any], usd: bool = False) -> float | None:
    """``agg`` of ``values`` (None: no value, or too few for a spread).

    ``usd``: the values are money, whose sum, mean and median are exact
    (:func:`~glossogen.analysis._money.aggregate`), unless a value is past its reach.

    A mean, median or spread of finite values whose computation overflowed (a sum past
    1.8e308: ``1e308, 1e308, 40, 40``) is computed on the values scaled by ``2 ** -e`` and
    scaled back, so it is the float it is whenever that fits (``5e307 + 20``); a sum that
    overflows stays infinite (blanked with a note, :func:`overflow_notes`).
    """
    if usd and agg in money.EXACT_AGGREGATES and values:
        exact = money.aggregate(agg, values)
        if exact is not None:
            return exact
    value = _plain_aggregate(agg, values)
    if value is None or math.isfinite(value) or agg not in _SCALABLE:
        return value
    exponent = _exponent(values)
    scaled = _plain_aggregate(agg, [math.ldexp(v, -exponent) for v in values])
    return None if scaled is None else _ldexp(scaled, exponent)


def _plain_aggregate(agg: str, values: list[Any]) -> float | None:
    n = len(values)
    if n == 0:
        return None  # blank under every aggregate, count too (its n says 0)
    if agg == "count":
        return float(n)
    series = pl.Series(values, dtype=pl.Float64)
    if agg in ("mean", "rate"):
        return _number(series.mean())
    if agg == "median":
        return _number(series.median())
    if agg == "sum":
        return float(series.sum())
    if agg == "min":
        return _number(series.min())
    if agg == "max":
        return _number(series.max())
    if n < 2:
        return None
    stddev = _number(series.std(ddof=1))
    return stddev if agg == "stddev" else stddev / math.sqrt(n)


def _no_interval() -> Interval:
    return Interval(low=None, high=None, method="none")


def _interval(grain: str, agg: str, data: Values, seed: int, resamples: int) -> Interval | None:
    """The cell's interval: ``none`` with too few values or runs; None when it overflows."""
    if grain == "run" and agg == "rate":
        bounds = wilson(int(sum(data.values)), len(data.values))
        method = "wilson"
    else:
        if len(set(data.runs)) < 2:
            return _no_interval()
        bounds = scaled_bounds(
            lambda e: cluster_bootstrap(*data.clusters(e)[1:], seed, resamples), data.exponent()
        )
        method = "bootstrap"
        if bounds is None:  # two runs or more, and still no interval: it overflowed
            return None
    if bounds is None:
        return _no_interval()
    return Interval(low=bounds[0], high=bounds[1], method=method)


def scaled_bounds(
    bounds_at: Callable[[int], tuple[float, float] | None], exponent: int
) -> tuple[float, float] | None:
    """``bounds_at(0)``, or where a draw's sum overflowed, ``bounds_at(exponent)`` scaled back.

    ``bounds_at(e)`` is the interval of the values scaled by ``2 ** -e`` (the same draws, from
    the same seed). None when even those overflow (a difference past 1.8e308), or when there
    are too few values for an interval.
    """
    plain = bounds_at(0)
    if plain is not None or not exponent:
        return plain
    bounds = bounds_at(exponent)
    if bounds is None:
        return None
    low, high = _ldexp(bounds[0], exponent), _ldexp(bounds[1], exponent)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def values_of(part: pl.DataFrame, column: str) -> Values:
    present = part.filter(pl.col(column).is_not_null())
    series = present.get_column(column)
    numeric = series.dtype.is_numeric() or series.dtype == pl.Boolean
    values = series.cast(pl.Float64).to_list() if numeric else series.to_list()
    runs = present.get_column("run_id").to_list()
    usd = numeric and money.is_money(column)
    return Values(values, runs, part.height - present.height, usd)


def group_cell(
    grain: str, measure: Measure, column: str, part: pl.DataFrame, query: Query,
    overflowed: list[str], blanked: list[str],
) -> Cell:  # fmt: skip
    """One group's cell.

    Its label is added to ``blanked`` when its aggregate overflowed a float (the value is left
    blank), and ``<label>: its interval`` to ``overflowed`` when its interval did.
    """
    data = values_of(part, column)
    value = aggregate_of(measure.agg, data.values, data.usd)
    interval = None
    if value is not None and not math.isfinite(value):  # JSON has no infinity: blank, noted
        blanked.append(measure.label)
        value = None
    elif measure.agg in INTERVALLED:
        interval = _interval(grain, measure.agg, data, query.seed, query.resamples)
        if interval is None:
            overflowed.append(f"{measure.label}: its interval")
            interval = _no_interval()
    return Cell(
        measure=measure.label, value=value, n=len(data.values), missing=data.missing,
        runs=len(set(data.runs)), interval=interval,
    )  # fmt: skip


def finite_only(frame: pl.DataFrame, columns: Sequence[str]) -> tuple[pl.DataFrame, list[str]]:
    """The frame with each non-finite number (NaN, inf) of the measured ``columns`` blank.

    A report's value that is not a finite number counts as missing, as a value the report
    does not hold, and a note names the run and the field (the first few runs of each field).
    """
    notes: list[str] = []
    blanked = []
    for column in columns:
        if frame.schema[column] not in (pl.Float32, pl.Float64):
            continue
        bad = ~pl.col(column).is_finite()
        runs = frame.filter(bad).get_column("run_id").unique(maintain_order=True).to_list()
        if not runs:
            continue
        named = ", ".join(runs[:NAMED_RUNS]) + (f" and {len(runs) - NAMED_RUNS} more"
                                                  if len(runs) > NAMED_RUNS else "")  # fmt: skip
        notes.append(f"{column}: a value that is not a finite number (text, NaN or infinite) "
                     f"counted as missing in {named}")  # fmt: skip
        blanked.append(pl.when(bad).then(None).otherwise(pl.col(column)).alias(column))
    return (frame.with_columns(blanked) if blanked else frame), notes


def single_values(groups: list[Group], query: Query) -> list[str]:
    """The notes naming each spread (``stddev``, ``sem``) blank for a group of one value."""
    spreads = [i for i, m in enumerate(query.measures) if m.agg in ("stddev", "sem")]
    labels = [query.measures[i].label for i in spreads
              if any(g.cells[i].n == 1 for g in groups)]  # fmt: skip
    return [f"{label}: blank where a group has a single value (a spread needs two)"
            for label in labels]  # fmt: skip


def overflow_notes(labels: list[str]) -> list[str]:
    """The notes naming each measure whose aggregate overflowed a float (``group_cell`` blanks).

    JSON has no infinity: every surface shows the same blank value, and the note says why.
    """
    return [f"{label}: overflows a float (beyond 1.8e308): left blank"
            for label in dict.fromkeys(labels)]  # fmt: skip


__all__ = [
    "INTERVALLED",
    "Values",
    "aggregate_of",
    "finite_only",
    "group_cell",
    "overflow_notes",
    "scaled_bounds",
    "single_values",
    "values_of",
]
