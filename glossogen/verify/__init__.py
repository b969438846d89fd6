"""Verifying runs' books (``glossogen verify``): every rule a run's event log breaks, named."""

from glossogen.verify._verify import (
    Verification,
    VerifiedRun,
    VerifyError,
    VerifyRequest,
    books_of,
    select_cohort,
    selection_filters,
    verify_run,
    verify_runs,
)

__all__ = [
    "VerifiedRun",
    "Verification",
    "VerifyError",
    "VerifyRequest",
    "books_of",
    "select_cohort",
    "selection_filters",
    "verify_run",
    "verify_runs",
]
