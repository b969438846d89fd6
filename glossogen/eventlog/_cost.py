"""How a cost is written in the event log and summed from it: USD, 10 decimal places.

One rule for every reader and the writer: the session's totals in ``simulation_ended``, the
run's view of its spend (``RunView``) and the export's fast path all sum costs with
:func:`add_usd`, so they give the same figure to the last place.
"""

from __future__ import annotations

USD_DECIMALS = 10
"""Decimal places a logged cost keeps (catalogue rates times whole tokens fit in them)."""

_SCALE = 1e10  # 10 ** USD_DECIMALS, exact in a float
_SCALED_BELOW = 2.0**40
"""Below it (about $110) a scaled cost's float is within 2**-13 of the exact product."""
_MARGIN = 2.0**-10
"""How far from a half the scaled fraction must be for its float to round as the exact one."""


def _round_usd(value: float) -> float:
    """``round(value, USD_DECIMALS)``, the same float, without ``round``'s decimal conversion.

    For a positive ``value`` under :data:`_SCALED_BELOW` scaled whose scaled fraction is not
    within :data:`_MARGIN` of a half, ``value * 1e10`` rounds to the same whole number ``N`` as
    the exact product, and ``N / 1e10`` (both exact, one correctly rounded division) is the
    float ``round`` gives, the one nearest ``N`` ten-billionths. Any other value (zero, a
    negative, a near-half, huge, NaN) is left to ``round``. About a sixth of its cost: a
    cohort's spend folds round a few hundred sums a run.
    """
    scaled = value * _SCALE
    if 0.0 < scaled < _SCALED_BELOW:
        whole = int(scaled)
        fraction = scaled - whole
        if fraction < 0.5 - _MARGIN:
            return whole / _SCALE
        if fraction > 0.5 + _MARGIN:
            return (whole + 1) / _SCALE
    return round(value, USD_DECIMALS)


def logged_usd(value: float) -> float:
    """Return ``value`` (USD) rounded to ``USD_DECIMALS`` places, never rounded to zero.

    A sum of float costs drifts (``0.04480000000000003``); the log keeps the rounded figure. A
    cost smaller than the last place is kept as it is: a paid call never logs as free.
    """
    rounded = _round_usd(value)
    return rounded if rounded or not value else value


def add_usd(total: float | None, cost: float | None) -> float | None:
    """Add one cost to a running total (USD, :func:`logged_usd` places); None stays unknown."""
    if total is None or cost is None:
        return None
    value = total + cost  # logged_usd inlined: a cohort's spend fold adds a few hundred a run
    if not value:  # a free call (a scripted seat's): round(±0.0) is itself
        return value
    scaled = value * _SCALE  # and _round_usd's common case
    if 0.0 < scaled < _SCALED_BELOW:
        whole = int(scaled)
        fraction = scaled - whole
        if fraction < 0.5 - _MARGIN:
            return whole / _SCALE or value
        if fraction > 0.5 + _MARGIN:
            return (whole + 1) / _SCALE
    rounded = round(value, USD_DECIMALS)
    return rounded if rounded or not value else value
