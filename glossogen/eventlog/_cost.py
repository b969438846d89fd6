"""How a cost is written in the event log and summed from it: USD, 10 decimal places.

One rule for every reader and the writer: the session's totals in ``simulation_ended``, the
run's view of its spend (``RunView``) and the export's fast path all sum costs with
:func:`add_usd`, so they give the same figure to the last place.
"""

from __future__ import annotations

USD_DECIMALS = 10
"""Decimal places a logged cost keeps (catalogue rates times whole tokens fit in them)."""


def logged_usd(value: float) -> float:
    """Return ``value`` (USD) rounded to ``USD_DECIMALS`` places, never rounded to zero.

    A sum of float costs drifts (``0.04480000000000003``); the log keeps the rounded figure. A
    cost smaller than the last place is kept as it is: a paid call never logs as free.
    """
    rounded = round(value, USD_DECIMALS)
    return rounded if rounded or not value else value


def add_usd(total: float | None, cost: float | None) -> float | None:
    """Add one cost to a running total (USD, :func:`logged_usd` places); None stays unknown."""
    if total is None or cost is None:
        return None
    value = total + cost  # logged_usd inlined: a cohort's spend fold adds a few hundred a run
    rounded = round(value, USD_DECIMALS)
    return rounded if rounded or not value else value
