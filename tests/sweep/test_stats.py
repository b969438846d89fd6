"""Wilson intervals, pass^k and consistency, checked against hand computation."""

from __future__ import annotations

import math

import pytest

from glossogen.sweep import Z_95, consistency, pass_hat_k, summarize_metric, wilson_interval


def _wilson_by_hand(c: int, n: int) -> tuple[float, float]:
    # Wilson (1927): (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    z, p = 1.959964, c / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


def test_the_wilson_interval_of_3_passes_in_4_trials() -> None:
    low, high = wilson_interval(3, 4)
    assert Z_95 == 1.959964
    assert (low, high) == pytest.approx(_wilson_by_hand(3, 4), abs=1e-12)
    assert (round(low, 4), round(high, 4)) == (0.3006, 0.9544)


def test_the_bounds_are_exact_at_zero_and_all_passes() -> None:
    assert wilson_interval(0, 3) == (0.0, pytest.approx(_wilson_by_hand(0, 3)[1]))
    assert wilson_interval(0, 3)[0] == 0.0
    assert wilson_interval(3, 3) == (pytest.approx(_wilson_by_hand(3, 3)[0]), 1.0)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="passes 5 outside 0..4"):
        wilson_interval(5, 4)


def test_pass_hat_k_is_the_chance_that_k_trials_all_pass() -> None:
    # 3 passes in 4: C(3,k)/C(4,k) = 3/4, 3/6, 1/4, 0/1
    assert [pass_hat_k(3, 4, k) for k in (1, 2, 3, 4)] == [0.75, 0.5, 0.25, 0.0]
    assert pass_hat_k(2, 2, 3) is None
    with pytest.raises(ValueError):
        pass_hat_k(1, 2, 0)


def test_consistency_names_all_passed_all_failed_and_mixed() -> None:
    assert consistency([True, True]) == "passed_consistently"
    assert consistency([False, False, False]) == "failed_consistently"
    assert consistency([True, False]) == "inconsistent"
    assert consistency([]) == "unmeasured"


def test_a_metric_summary_holds_rate_interval_and_pass_hat_k() -> None:
    summary = summarize_metric([True, False, True, True])
    assert (summary.trials, summary.passes, summary.pass_rate) == (4, 3, 0.75)
    assert summary.consistency == "inconsistent"
    assert (summary.wilson_low, summary.wilson_high) == pytest.approx(_wilson_by_hand(3, 4))
    assert summary.pass_hat_k == {"1": 0.75, "2": 0.5, "3": 0.25, "4": 0.0}
    empty = summarize_metric([])
    assert (empty.pass_rate, empty.wilson_low, empty.pass_hat_k) == (None, None, {})
