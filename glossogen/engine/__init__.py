"""The engine: game clock, channels, budget, noise, agent runners and the round loop."""

from glossogen.engine._channels import WARNING_THRESHOLDS, BudgetMeter, apply_noise
from glossogen.engine._clock import Clock, ClockKind, SystemClock, VirtualClock
from glossogen.engine._engine import RunEngine
from glossogen.engine._faults import INTERNAL as INTERNAL_FAULT
from glossogen.engine._judge import RunJudge
from glossogen.engine._requests import SETTLE_SECONDS, STOP_SETTLE_SECONDS, RequestLedger
from glossogen.engine._roster import (
    JudgeSeat,
    RosterError,
    Seat,
    future_providers,
    model_name,
    resolve_judge,
    resolve_seats,
)
from glossogen.engine._rounds import RoundSummary
from glossogen.engine._runner import SEAT
from glossogen.engine._setup import RunSetup
from glossogen.engine._spend import (
    FRAMING_TOKENS,
    LONG_CACHE,
    SpendReservations,
    worst_case_usd,
)
from glossogen.engine._state import RunState

__all__ = [
    "FRAMING_TOKENS",
    "LONG_CACHE",
    "INTERNAL_FAULT",
    "SETTLE_SECONDS",
    "SEAT",
    "STOP_SETTLE_SECONDS",
    "WARNING_THRESHOLDS",
    "BudgetMeter",
    "Clock",
    "ClockKind",
    "JudgeSeat",
    "RosterError",
    "RequestLedger",
    "RoundSummary",
    "RunEngine",
    "RunJudge",
    "RunSetup",
    "RunState",
    "Seat",
    "SpendReservations",
    "SystemClock",
    "VirtualClock",
    "apply_noise",
    "future_providers",
    "model_name",
    "resolve_judge",
    "resolve_seats",
    "worst_case_usd",
]
