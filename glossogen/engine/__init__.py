"""The engine: game clock, channels, budget, noise, agent runners and the round loop."""

from glossogen.engine._channels import WARNING_THRESHOLDS, BudgetMeter, apply_noise
from glossogen.engine._clock import Clock, SystemClock, VirtualClock
from glossogen.engine._engine import RoundSummary, RunEngine, RunSetup
from glossogen.engine._judge import RunJudge
from glossogen.engine._roster import (
    JudgeModel,
    RosterError,
    SeatModel,
    future_providers,
    resolve_judge,
    resolve_seats,
)

__all__ = [
    "WARNING_THRESHOLDS",
    "BudgetMeter",
    "Clock",
    "JudgeModel",
    "RosterError",
    "RoundSummary",
    "RunEngine",
    "RunJudge",
    "RunSetup",
    "SeatModel",
    "SystemClock",
    "VirtualClock",
    "apply_noise",
    "future_providers",
    "resolve_judge",
    "resolve_seats",
]
