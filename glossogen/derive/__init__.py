"""Derived runs from the event log: resume in place, fork at a round, swap an agent's seat.

Every name is imported on first use (PEP 562): a plain run reaches the resume point and the
state reader (``_resume.py``, ``_state.py``) through this package and must not pay for the fork
(``_fork.py``) or the survey of stale runs (``_stale.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossogen._lazy import first_use

if TYPE_CHECKING:
    from glossogen.derive._config import config_at_round, knobs_at
    from glossogen.derive._fork import (
        ForkRequest,
        PreparedFork,
        ReplayCheck,
        ReplayedRounds,
        SeatCheck,
        prepare_fork,
    )
    from glossogen.derive._prefix import lineage_of
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
        read_history,
        read_state,
        upcast_history,
    )
    from glossogen.engine._state import RunState

_HOME = {
    "StaleRun": "glossogen.derive._stale",
    "find_stale_runs": "glossogen.derive._stale",
    "survey_unfinished_runs": "glossogen.derive._stale",
    "ForkRequest": "glossogen.derive._fork",
    "PreparedFork": "glossogen.derive._fork",
    "ReplayCheck": "glossogen.derive._fork",
    "ReplayedRounds": "glossogen.derive._fork",
    "SeatCheck": "glossogen.derive._fork",
    "config_at_round": "glossogen.derive._config",
    "knobs_at": "glossogen.derive._config",
    "lineage_of": "glossogen.derive._prefix",
    "prepare_fork": "glossogen.derive._fork",
    "ResumePoint": "glossogen.derive._resume",
    "config_changes": "glossogen.derive._resume",
    "open_resume": "glossogen.derive._resume",
    "read_run_log": "glossogen.derive._resume",
    "recorded_limits": "glossogen.derive._resume",
    "run_folder": "glossogen.derive._resume",
    "DeriveError": "glossogen.derive._state",
    "HistoryUnreadable": "glossogen.derive._state",
    "RunState": "glossogen.engine._state",  # what the engine continues from
    "read_history": "glossogen.derive._state",
    "read_state": "glossogen.derive._state",
    "upcast_history": "glossogen.derive._state",
}
"""Each exported name and the module it lives in."""


__getattr__ = first_use(__name__, _HOME)


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
