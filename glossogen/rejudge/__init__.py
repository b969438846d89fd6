"""Judges from a cache, and re-judging a cohort's rulings (``glossogen rejudge``).

:class:`JudgeCache` keeps a judge's answers by what was asked (``--judge-cache``): asked again,
the same question is answered from it at $0. :func:`rejudge_runs` asks every logged in-run
ruling of the selected runs again of another judge (model, provider, settings or system
prompt), through the cache, and writes each run's flip report (``judge_flips.json``: which
rulings changed, by round) and a cohort summary (``rejudge_summary.json``).

The cache is imported by every run's judge; the rest (which reads runs through ``export``, and
so polars) only when asked for, so a run's import path stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from glossogen.rejudge._cache import JudgeCache, cache_key
from glossogen.rejudge._flips import FLIPS, flips_of

if TYPE_CHECKING:
    from glossogen.rejudge._rejudge import (
        SUMMARY,
        CohortFlips,
        Flip,
        Rejudged,
        RejudgeError,
        RejudgeRequest,
        RunFlips,
        flip_lines,
        read_flips,
        rejudge_runs,
    )

_LAZY = frozenset(
    {"SUMMARY", "CohortFlips", "Flip", "Rejudged", "RejudgeError", "RejudgeRequest",
     "RunFlips", "flip_lines", "read_flips", "rejudge_runs"}
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from glossogen.rejudge import _rejudge

        return getattr(_rejudge, name)
    raise AttributeError(f"module 'glossogen.rejudge' has no attribute {name!r}")


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
