"""A run's status: the one vocabulary, and the rule that reads it from a log's last ending.

The rule (``RunView``'s module docstring, ``_view.py``): an ending stands unless it is one a run
is resumed from and a live writer holds the run; with no ending, ``running`` when live and
``stopped`` when not; ``queued`` a claimed folder whose log holds no event yet.
"""

from __future__ import annotations

from typing import Literal, get_args

Status = Literal["completed", "incomplete", "error", "interrupted", "running", "stopped", "queued"]
"""The one status vocabulary of a run (export ``--status``, the run browser, MCP)."""

STATUSES: tuple[Status, ...] = get_args(Status)
"""Every status, in the vocabulary's order."""

QUEUED: Status = "queued"
"""A claimed run folder whose log holds no event yet (its player has not begun)."""

RESUMABLE: tuple[str, ...] = ("error", "interrupted")
"""``simulation_ended`` statuses a run can be resumed from (a crash, an interrupt, an outage)."""

RESUMABLE_STATUSES: tuple[Status, ...] = ("error", "interrupted", "stopped")
"""Statuses of a run ``glossogen run --resume`` continues."""


def live_status(ended: str | None, live: bool) -> str:
    """A run's status from its log's last ending (None: none) and whether it is live.

    The module docstring's rule, in one place for every reader (:attr:`RunView.status`, the
    export's and the run list's records): an ending stands unless it is one a run is resumed
    from (:data:`RESUMABLE`) and a live writer, or a launched process about to be one, holds
    the run; then, as with no ending, ``running`` when live and ``stopped`` when not.
    """
    if ended is not None and not (live and ended in RESUMABLE):
        return ended
    return "running" if live else "stopped"


__all__ = [
    "QUEUED",
    "RESUMABLE",
    "RESUMABLE_STATUSES",
    "STATUSES",
    "Status",
    "live_status",
]
