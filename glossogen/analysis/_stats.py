"""Intervals: Wilson for a rate of runs, a seeded cluster bootstrap for everything else.

Rows of one run are not independent (a protocol carries from round to round), so every
interval resamples whole runs: the estimate of a mean is the ratio ``sum of the values of the
resampled runs / count of their values``, recomputed on ``resamples`` draws of ``k`` runs with
replacement from the group's ``k`` runs, and the interval is the 2.5th and 97.5th percentiles
of those estimates (numpy's ``quantile``, linear). At the run grain each run holds one value
and this is the ordinary bootstrap. The draws come from ``numpy.random.default_rng(seed)``
started afresh for each interval, as ``rng.integers(0, k, size=(resamples, k))``, so an
interval depends only on its group's values and the seed (tests rebuild one by hand).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054
"""The standard normal's 97.5th percentile."""


def wilson(successes: int, n: int) -> tuple[float, float] | None:
    """Return the 95% Wilson score interval of ``successes`` out of ``n`` (None for n = 0).

    No success has lower bound exactly 0 and all successes upper bound exactly 1, as the
    formula gives in exact arithmetic (floating point leaves a residue such as ``2.8e-17``).
    """
    if n == 0:
        return None
    p = successes / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _percentiles(estimates: np.ndarray) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles; None when a draw's estimate overflowed (not finite)."""
    if not np.isfinite(estimates).all():
        return None
    low, high = np.quantile(estimates, [0.025, 0.975])
    return float(low), float(high)


def _ratio_means(sums: Sequence[float], counts: Sequence[int], picks: np.ndarray) -> np.ndarray:
    """Per draw (a row of ``picks``: run indices), the picked runs' value sum over their count."""
    s, c = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is inf: no interval
        return _ratio_means_of(s, c, picks)


def _ratio_means_of(s: np.ndarray, c: np.ndarray, picks: np.ndarray) -> np.ndarray:
    if c.size and (c == c[0]).all():  # every run holds as many values: the same sum, exactly
        return np.asarray(s[picks].sum(axis=1) / (c[0] * picks.shape[1]))
    return np.asarray(s[picks].sum(axis=1) / c[picks].sum(axis=1))


def cluster_bootstrap(
    sums: Sequence[float], counts: Sequence[int], seed: int, resamples: int
) -> tuple[float, float] | None:
    """Return the 95% percentile interval of ``sum(sums) / sum(counts)`` over resampled runs.

    Args:
        sums: Per run (cluster), the sum of its values.
        counts: Per run, how many values it holds (at least 1 each).
        seed: The generator's seed.
        resamples: Draws of ``len(sums)`` runs with replacement.

    Returns:
        ``(low, high)``, or None with fewer than two runs (no spread to resample).
    """
    k = len(sums)
    if k < 2:
        return None
    picks = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    return _percentiles(_ratio_means(sums, counts, picks))


def unpaired_bootstrap(
    a: tuple[Sequence[float], Sequence[int]],
    b: tuple[Sequence[float], Sequence[int]],
    seed: int,
    resamples: int,
) -> tuple[float, float] | None:
    """Return the 95% interval of B's ratio mean minus A's, each arm's runs resampled apart.

    One generator draws A's picks, then B's (``(resamples, k_a)`` then ``(resamples, k_b)``).
    None when an arm has fewer than two runs.
    """
    if len(a[0]) < 2 or len(b[0]) < 2:
        return None
    rng = np.random.default_rng(seed)
    a_picks = rng.integers(0, len(a[0]), size=(resamples, len(a[0])))
    b_picks = rng.integers(0, len(b[0]), size=(resamples, len(b[0])))
    with np.errstate(over="ignore", invalid="ignore"):
        return _percentiles(_ratio_means(*b, b_picks) - _ratio_means(*a, a_picks))


def paired_bootstrap(
    a: tuple[Sequence[float], Sequence[int]],
    b: tuple[Sequence[float], Sequence[int]],
    seed: int,
    resamples: int,
) -> tuple[float, float] | None:
    """Return the 95% interval of B - A with pairs resampled together (``a[i]`` pairs ``b[i]``).

    None with fewer than two pairs.
    """
    k = len(a[0])
    if k < 2:
        return None
    picks = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    with np.errstate(over="ignore", invalid="ignore"):
        return _percentiles(_ratio_means(*b, picks) - _ratio_means(*a, picks))


__all__ = ["Z95", "cluster_bootstrap", "paired_bootstrap", "unpaired_bootstrap", "wilson"]
