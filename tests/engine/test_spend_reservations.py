"""The spend cap's ledger decides exactly: spent + reserved + the next worst case against the cap.

Money is kept in ``Decimal``: a cap of $0.30 holds $0.10 spent and a $0.20 worst case (a float
sum says 0.30000000000000004 and would refuse it). Reservations are released when a request
fails unbilled and settled at the answer's priced cost when it is answered; the first refusal
is logged and latches (``allows_call`` is false from then on).
"""

from __future__ import annotations

from decimal import Decimal

from glossogen.engine import SpendReservations, worst_case_usd
from glossogen.eventlog import Event


def test_the_ledger_reserves_settles_and_releases_to_the_cent() -> None:
    logged: list[Event] = []
    ledger = SpendReservations(0.3, logged.append)
    first = ledger.reserve(0.2)
    assert first is not None
    assert ledger.reserve(0.2) is None  # 0.2 in flight + 0.2 > 0.3
    ledger.release(first)  # failed, not billed
    again = ledger.reserve(0.2)
    assert again is not None
    ledger.settle(again, 0.1)  # answered for less than its worst case
    assert (ledger.spent, ledger.reserved) == (Decimal("0.1"), Decimal(0))
    last = ledger.reserve(0.2)  # 0.1 + 0.2 == 0.3: within the cap, exactly
    assert last is not None
    assert ledger.reserve(1e-10) is None
    ledger.settle(last, None)  # answered with no usage read: counted at its worst case
    assert ledger.spent == Decimal("0.3")
    assert ledger.capped and not ledger.allows_call()
    assert logged == []  # reserve() decides; the request hook logs a refusal


def test_no_cap_reserves_without_refusing() -> None:
    ledger = SpendReservations(None, [].append)
    token = ledger.reserve(1e6)
    assert token is not None
    ledger.settle(token, 5.0)
    assert (ledger.spent, ledger.capped) == (Decimal(5), False)


def test_a_worst_case_prices_the_input_at_the_dearer_of_its_rates() -> None:
    # claude-sonnet-4-6: $3 per million input, $3.75 per million cache writes, $15 output.
    assert worst_case_usd("anthropic", "claude-sonnet-4-6", 1_000_000, 0) == 3.75
    assert worst_case_usd("anthropic", "claude-sonnet-4-6", 10_000, 10_000) == 0.1875
    # a request caching for one hour may write its whole prompt at $6 per million
    assert worst_case_usd("anthropic", "claude-sonnet-4-6", 1_000_000, 0, long_cache=True) == 6.0
    assert worst_case_usd("openai", "house-model-7", 10, 10) is None
