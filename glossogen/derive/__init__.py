"""Derived runs from the event log: resume in place, fork at a round, swap an agent's seat."""

from glossogen.derive._fork import (
    ForkRequest,
    PreparedFork,
    ReplayCheck,
    ReplayedRounds,
    SeatCheck,
    config_at_round,
    knobs_at,
    lineage_of,
    prepare_fork,
)
from glossogen.derive._resume import (
    ResumePoint,
    config_changes,
    open_resume,
    read_run_log,
    recorded_limits,
    run_folder,
)
from glossogen.derive._stale import StaleRun, find_stale_runs, survey_unfinished_runs
from glossogen.derive._state import (
    DeriveError,
    HistoryUnreadable,
    RunState,
    read_history,
    read_state,
    upcast_history,
)

__all__ = [
    "StaleRun",
    "find_stale_runs",
    "survey_unfinished_runs",
    "ForkRequest",
    "config_at_round",
    "knobs_at",
    "PreparedFork",
    "ReplayCheck",
    "ReplayedRounds",
    "SeatCheck",
    "lineage_of",
    "prepare_fork",
    "DeriveError",
    "HistoryUnreadable",
    "read_history",
    "upcast_history",
    "ResumePoint",
    "RunState",
    "config_changes",
    "open_resume",
    "read_run_log",
    "recorded_limits",
    "run_folder",
    "read_state",
]
