"""The event-log tables' one-scan fast path reads the same events as :class:`RunView`.

On every log of the export cohort the fast path takes (ours played under varied knobs, a cut
log with a damaged line and a torn tail, the GlossoGen 0.5 run), the events behind
``message_level`` and ``round_context`` equal those of the typed view, field for field; and
one export of both tables gives the same CSVs as exporting each table alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.export import FilterSelection, select_runs, write_tables
from glossogen.export._logtables import _TABLE_EVENTS, _counted_events, _events
from tests.export.conftest import CUT, OLD, A, B, C, Cohort

FIELDS = ("event_type", "round_number", "phase", "channel_id", "message_id", "timestamp",
          "sender_id", "text", "delivered_text", "agent_id", "model", "provider")  # fmt: skip


def _fields(events: list[dict]) -> list[tuple]:
    """The rows' events (a fixed roster is read from the head, so its events are not needed)."""
    rows = ("message_sent", "injection_delivered")
    return [tuple(e.get(f) for f in FIELDS) for e in events if e["event_type"] in rows]


@pytest.mark.parametrize(("run_id", "rows"), [(A, 22), (B, 26), (C, 16), (CUT, 13), (OLD, 48)])
def test_the_fast_path_reads_the_events_the_view_counts(
    cohort: Cohort, run_id: str, rows: int
) -> None:
    selected = select_runs(str(cohort.runs_dir), {"kind": "run_ids", "run_ids": [run_id]})
    (record,) = selected.records
    fast = list(_events(record, "t"))
    typed = list(_counted_events(record, _TABLE_EVENTS, "t"))
    assert len(_fields(fast)) == rows
    assert _fields(fast) == _fields(typed)


def test_both_tables_at_once_equal_each_table_alone(cohort: Cohort, tmp_path: Path) -> None:
    records = select_runs(str(cohort.runs_dir), FilterSelection()).records
    together, alone = tmp_path / "together", tmp_path / "alone"
    counts = write_tables(records, ["message_level", "round_context"], str(together))
    for name in ("message_level", "round_context"):
        assert write_tables(records, [name], str(alone / name)) == {name: counts[name]}
        assert (together / f"{name}.csv").read_bytes() == (
            alone / name / f"{name}.csv"
        ).read_bytes()
    assert counts == {"message_level": 85, "round_context": 16}
