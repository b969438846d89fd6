"""Process exit codes shared by every command, as constants (docs/architecture.md).

Never 2 (click's usage code is mapped to :data:`USAGE`). Sweeps also write the code they exit
with into ``run_summary.json``.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "BY_RUN_STATUS",
    "CANNOT_WRITE",
    "CREDENTIALS",
    "EVALUATIONS_FAILED",
    "ExitCode",
    "INTERNAL",
    "INTERRUPTED",
    "NOT_MEASURED",
    "OK",
    "REFUSED",
    "TRANSPORT",
    "TRY_AGAIN",
    "UNREADABLE",
    "USAGE",
    "of_run_status",
]


class ExitCode(IntEnum):
    """Every exit code a glossogen command can return."""

    OK = 0
    """Everything asked for was done."""
    EVALUATIONS_FAILED = 1
    """Completed, but some evaluations failed or a cohort's run was not evaluated (or a run
    ended ``incomplete``, a verified run's books do not balance, or a rejudged ruling got no
    answer from the judge)."""
    NOT_MEASURED = 20
    """Not measured: e.g. a sweep stopped by its spend cap, the rest marked ``incomplete``."""
    USAGE = 64
    """Bad command line."""
    REFUSED = 65
    """Refused: invalid config, a gate (a finished run to resume, an incomplete run to score)."""
    UNREADABLE = 66
    """An input file or folder could not be read."""
    TRANSPORT = 69
    """A provider or the storage was unreachable."""
    INTERNAL = 70
    """An internal fault (a bug)."""
    CANNOT_WRITE = 73
    """An output file or folder could not be written (sysexits' EX_CANTCREAT)."""
    TRY_AGAIN = 75
    """Try again later (e.g. another live process holds the run)."""
    CREDENTIALS = 77
    """A required credential is missing."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C); what each run had written is kept."""


OK = ExitCode.OK
EVALUATIONS_FAILED = ExitCode.EVALUATIONS_FAILED
NOT_MEASURED = ExitCode.NOT_MEASURED
USAGE = ExitCode.USAGE
REFUSED = ExitCode.REFUSED
UNREADABLE = ExitCode.UNREADABLE
TRANSPORT = ExitCode.TRANSPORT
INTERNAL = ExitCode.INTERNAL
CANNOT_WRITE = ExitCode.CANNOT_WRITE
TRY_AGAIN = ExitCode.TRY_AGAIN
CREDENTIALS = ExitCode.CREDENTIALS
INTERRUPTED = ExitCode.INTERRUPTED

BY_RUN_STATUS = {
    "completed": OK,
    "incomplete": EVALUATIONS_FAILED,
    "error": TRANSPORT,
    "interrupted": INTERRUPTED,
}
"""The code a command that played one run exits with, per the run's final status (1: it ended
short of its rounds)."""


def of_run_status(status: str) -> int:
    """The exit code for a run that ended ``status`` (:data:`INTERNAL` for one not listed)."""
    return int(BY_RUN_STATUS.get(status, INTERNAL))
