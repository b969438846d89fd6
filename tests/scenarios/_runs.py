"""Reading the event log of a scenario run made by the CLI or a flow."""

from __future__ import annotations

from pathlib import Path

from glossogen.eventlog import RoundResultRecorded, read_events


def verdicts(log: Path) -> list[tuple[int, str, bool, str]]:
    """Each logged round result: (round, team, success, reason)."""
    return [
        (e.round_number, e.team_id, e.success, e.reason)
        for e in read_events(str(log)).events
        if isinstance(e, RoundResultRecorded)
    ]
