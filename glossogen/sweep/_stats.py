"""Statistics over a cell's trials: consistency, pass rate with a Wilson interval, pass^k.

Sources:
- Wilson score interval: E. B. Wilson (1927), "Probable inference, the law of succession, and
  statistical inference", JASA 22(158):209-212. For ``c`` passes in ``n`` trials, ``p = c/n``:
  centre ``(p + z²/2n) / (1 + z²/n)``, half-width
  ``z / (1 + z²/n) * sqrt(p(1-p)/n + z²/4n²)``, with ``z = 1.959964`` (95%, two-sided).
- pass^k: S. Yao et al. (2024), "tau-bench: A Benchmark for Tool-Agent-User Interaction in
  Real-World Domains", arXiv:2406.12045, section 3: the chance that ``k`` independent trials
  of a task all pass, estimated without bias from ``n`` trials with ``c`` passes as
  ``C(c, k) / C(n, k)``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

Z_95 = 1.959964
"""Two-sided 95% normal quantile used by :func:`wilson_interval`."""

Consistency = Literal["passed_consistently", "failed_consistently", "inconsistent", "unmeasured"]


def wilson_interval(passes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """Return the Wilson score interval ``(low, high)`` of a pass rate, or None with no trials.

    Args:
        passes: Trials that passed, ``0 <= passes <= trials``.
        trials: Trials measured.
        z: Normal quantile (1.959964 for 95%).

    Raises:
        ValueError: ``passes`` outside ``0..trials``.
    """
    if not 0 <= passes <= trials:
        raise ValueError(f"passes {passes} outside 0..{trials}")
    if trials == 0:
        return None
    p = passes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # At p = 0 (p = 1) the bound is exactly 0 (1); rounding would leave about 1e-17.
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == trials else min(1.0, centre + half)
    return low, high


def pass_hat_k(passes: int, trials: int, k: int) -> float | None:
    """Return tau-bench's pass^k estimate ``C(passes, k) / C(trials, k)``; None when ``k > trials``.

    Raises:
        ValueError: ``k < 1`` or ``passes`` outside ``0..trials``.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0 <= passes <= trials:
        raise ValueError(f"passes {passes} outside 0..{trials}")
    if k > trials:
        return None
    return math.comb(passes, k) / math.comb(trials, k)


def consistency(outcomes: list[bool]) -> Consistency:
    """Name a cell's outcomes: all passed, all failed, mixed, or none measured."""
    if not outcomes:
        return "unmeasured"
    if all(outcomes):
        return "passed_consistently"
    if not any(outcomes):
        return "failed_consistently"
    return "inconsistent"


class MetricSummary(BaseModel):
    """One metric of one cell over its measured trials.

    Attributes:
        trials: Trials measured (runs that ended; not-launched and running ones excluded).
        passes: Trials that passed.
        consistency: ``passed_consistently``, ``failed_consistently``, ``inconsistent`` or
            ``unmeasured`` (no trial measured).
        pass_rate: ``passes / trials`` (null with no trial).
        wilson_low: Lower bound of the 95% Wilson score interval (null with no trial).
        wilson_high: Upper bound of the same interval.
        pass_hat_k: ``{k: C(passes,k)/C(trials,k)}`` for ``k = 1..trials`` (keys as strings).
    """

    trials: int
    passes: int
    consistency: Consistency
    pass_rate: float | None
    wilson_low: float | None
    wilson_high: float | None
    pass_hat_k: dict[str, float]


def summarize_metric(outcomes: list[bool]) -> MetricSummary:
    """Summarise one metric's pass/fail outcomes (one per measured trial)."""
    n, c = len(outcomes), sum(outcomes)
    interval = wilson_interval(c, n)
    pass_k: dict[str, float] = {}
    for k in range(1, n + 1):
        value = pass_hat_k(c, n, k)
        if value is not None:
            pass_k[str(k)] = value
    return MetricSummary(
        trials=n,
        passes=c,
        consistency=consistency(outcomes),
        pass_rate=c / n if n else None,
        wilson_low=interval[0] if interval else None,
        wilson_high=interval[1] if interval else None,
        pass_hat_k=pass_k,
    )
