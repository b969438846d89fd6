"""``--compare KEY=A,B``: B - A of each mean and rate, paired when the arms' runs pair.

Runs pair one to one as a fork and its source, else by the same recorded ``seed``; paired arms
resample pairs together, unpaired ones each arm's runs apart (:mod:`._stats`).
"""

from __future__ import annotations

import math
from functools import partial

import polars as pl

from glossogen.analysis import _money as money
from glossogen.analysis._cells import (
    INTERVALLED,
    Values,
    aggregate_of,
    scaled_bounds,
    values_of,
)
from glossogen.analysis._query import Query
from glossogen.analysis._result import Comparison, Interval, key_shown
from glossogen.analysis._rows import key_label, key_labels, sort_key
from glossogen.analysis._stats import (
    paired_bootstrap,
    unpaired_bootstrap,
)
from glossogen.analysis._terms import Compare
from glossogen.export import RunRecord


def _pairing(
    records: dict[str, RunRecord], a_runs: set[str], b_runs: set[str]
) -> tuple[list[tuple[str, str]], str]:
    """Pair the arms' runs: a fork with its source, else the same recorded seed, one to one.

    Returns:
        The pairs ``(a_run, b_run)`` and how they were paired, or no pair and why not.
    """
    sources = {
        r: str((records[r].lineage or {}).get("source_run_id") or "") for r in a_runs | b_runs
    }
    forks = [(sources[b], b) for b in sorted(b_runs) if sources[b] in a_runs]
    forks += [(a, sources[a]) for a in sorted(a_runs) if sources[a] in b_runs]
    if forks and len(forks) == len(a_runs) == len(b_runs):
        if len({a for a, _ in forks}) == len(forks) == len({b for _, b in forks}):
            return sorted(forks), "fork of its source"
    if not a_runs or not b_runs:
        return [], "unpaired: an arm has no value"
    seeds = {r: records[r].config.get("seed") for r in a_runs | b_runs}
    a_seeds = [seeds[r] for r in a_runs]
    b_seeds = [seeds[r] for r in b_runs]
    if None in a_seeds or None in b_seeds:
        return [], "unpaired: a run records no seed"
    if len(set(a_seeds)) != len(a_seeds) or len(set(b_seeds)) != len(b_seeds):
        return [], "unpaired: an arm repeats a seed"
    if set(a_seeds) != set(b_seeds):
        return [], "unpaired: the arms' seeds differ"
    by_seed = {seeds[b]: b for b in b_runs}
    return sorted((a, by_seed[seeds[a]]) for a in a_runs), "seed"


def compare_arms(
    query: Query,
    compare: Compare,
    frame: pl.DataFrame,
    columns: dict[str, str],
    key_column: str,
    within: dict[str, str],
    records: dict[str, RunRecord],
    overflowed: list[str],
) -> list[Comparison]:
    """B - A of each mean and rate measure, within each group of the ``within`` keys.

    ``within`` maps each other key's name in the query to its column. A difference or an
    interval past the float's limit is blank, and what it is of is added to ``overflowed``.
    """
    labels = key_labels(frame, key_column)
    frame = frame.with_columns(labels.alias("__arm"))
    columns_within = list(within.values())
    parts = (
        frame.partition_by(columns_within, as_dict=True, maintain_order=True)
        if within
        else {(): frame}
    )
    out = []
    for key, part in sorted(parts.items(), key=lambda kv: sort_key(kv[0])):
        names = {w: key_label(v) for w, v in zip(within, key, strict=True)}
        arms = {arm: part.filter(pl.col("__arm").is_null() if arm is None else
                                 pl.col("__arm") == arm)
                for arm in (compare.a, compare.b)}  # fmt: skip
        for measure in query.measures:
            if measure.agg not in INTERVALLED:
                continue
            data = {arm: values_of(arms[arm], columns[measure.label]) for arm in arms}
            a, b = data[compare.a], data[compare.b]
            pairs, pairing = _pairing(records, set(a.runs), set(b.runs))
            exponent = max(a.exponent(), b.exponent())
            bounds = scaled_bounds(partial(_difference, a, b, pairs, query), exponent)
            method = "paired bootstrap" if pairs else "bootstrap"
            enough = len(pairs) >= 2 if pairs else min(len(set(a.runs)), len(set(b.runs))) >= 2
            a_value = aggregate_of("mean", a.values, a.usd)
            b_value = aggregate_of("mean", b.values, b.usd)
            diff = money.difference(a.values, b.values) if a.usd else None
            if diff is None and a_value is not None and b_value is not None:
                diff = b_value - a_value
            what = (f"{measure.label}: the difference {compare.key} {key_shown(compare.b)} - "
                    f"{key_shown(compare.a)}"
                    + "".join(f" within {k} {key_shown(v)}" for k, v in names.items()))  # fmt: skip
            if diff is not None and not math.isfinite(diff):
                overflowed.append(what)
                diff = None
            if enough and bounds is None:
                overflowed.append(f"{what}: its interval")
            interval = Interval(low=bounds[0] if bounds else None,
                                high=bounds[1] if bounds else None,
                                method=method if bounds else "none")  # fmt: skip
            out.append(Comparison(
                measure=measure.label, key=compare.key, a=compare.a, b=compare.b, within=names,
                a_value=a_value, b_value=b_value, difference=diff, interval=interval,
                paired=bool(pairs), pairing=pairing, n_a=len(a.values), n_b=len(b.values),
                pairs=len(pairs),
            ))  # fmt: skip
    return out


def _difference(
    a: Values, b: Values, pairs: list[tuple[str, str]], query: Query, exponent: int
) -> tuple[float, float] | None:
    """The interval of B - A (paired when ``pairs``), values scaled by ``2 ** -exponent``."""
    a_runs, a_sums, a_counts = a.clusters(exponent)
    b_runs, b_sums, b_counts = b.clusters(exponent)
    if not pairs:
        return unpaired_bootstrap(
            (a_sums, a_counts), (b_sums, b_counts), query.seed, query.resamples
        )
    ai = {r: i for i, r in enumerate(a_runs)}
    bi = {r: i for i, r in enumerate(b_runs)}
    pa = ([a_sums[ai[x]] for x, _ in pairs], [a_counts[ai[x]] for x, _ in pairs])
    pb = ([b_sums[bi[y]] for _, y in pairs], [b_counts[bi[y]] for _, y in pairs])
    return paired_bootstrap(pa, pb, query.seed, query.resamples)


__all__ = [
    "compare_arms",
]
