"""Judges from a cache, and re-judging a cohort's rulings (``glossogen rejudge``).

:class:`JudgeCache` keeps a judge's answers by what was asked (``--judge-cache``): asked again,
the same question is answered from it at $0. :func:`rejudge_runs` asks every logged in-run
ruling of the selected runs again of another judge (model, provider, settings or system
prompt), through the cache, and writes each run's flip report (``judge_flips.json``: which
rulings changed, by round) and a cohort summary (``rejudge_summary.json``).
"""

from glossogen.rejudge._cache import JudgeCache, cache_key
from glossogen.rejudge._rejudge import (
    FLIPS,
    SUMMARY,
    CohortFlips,
    Flip,
    Rejudged,
    RejudgeError,
    RejudgeRequest,
    RunFlips,
    flip_lines,
    flips_of,
    read_flips,
    rejudge_runs,
)

__all__ = [
    "FLIPS",
    "SUMMARY",
    "CohortFlips",
    "Flip",
    "JudgeCache",
    "RejudgeError",
    "RejudgeRequest",
    "Rejudged",
    "RunFlips",
    "cache_key",
    "flip_lines",
    "flips_of",
    "read_flips",
    "rejudge_runs",
]
