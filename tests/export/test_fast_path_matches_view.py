"""The export's byte-level fast path and the typed :class:`RunView` give the same facts.

Twenty logs: scripted runs of both scenarios under varied knobs, priced ones, runs cut mid-round
(stopped) and after their last round, resumed ones, forks and the GlossoGen 0.5 run folder.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from glossogen.eventlog import RunView
from glossogen.export import FilterSelection, select_runs
from glossogen.export._logtables import _TABLE_EVENTS, _counted_events, _events
from glossogen.export._runlog import RUNNING, read_log_facts
from tests.export.conftest import CASE_05, fork, play
from tests.export.test_run_view_cases import _cut_in_round_2, _price, _resume


def _facts(log: Path) -> dict[str, object]:
    facts = read_log_facts(str(log))
    return {
        "status": "stopped" if facts.status == RUNNING else facts.status,
        "rounds_played": facts.rounds_played,
        "rounds_won": facts.rounds_won,
        "total_messages": facts.total_messages,
        "total_chars": facts.total_chars,
        "total_cost_usd": facts.total_cost_usd,
        "duration_seconds": facts.duration_seconds,
        "agents": {
            a.agent_id: (a.input_tokens, a.output_tokens, a.requests, a.cost_usd)
            for a in facts.agents.values()
        },
        "cache": {
            a.agent_id: (a.cache_read_tokens, a.cache_write_tokens, a.cache_write_1h_tokens)
            for a in facts.agents.values()
        },
        "judge_tokens": facts.judge_tokens,
        "bad_lines": facts.bad_lines,
    }


TABLE_FIELDS = ("event_type", "round_number", "phase", "channel_id", "message_id", "timestamp",
                "sender_id", "text", "delivered_text", "agent_id", "model", "provider")  # fmt: skip


def _table_rows(events: Iterable[dict[str, object]]) -> list[tuple[object, ...]]:
    """The rows' events (a fixed roster is read from the head, so its events are not needed)."""
    rows = ("message_sent", "injection_delivered")
    return [tuple(e.get(f) for f in TABLE_FIELDS) for e in events if e["event_type"] in rows]


def _view(log: Path) -> dict[str, object]:
    view = RunView.load(str(log))
    spend = view.spend
    return {
        "status": view.status,
        "rounds_played": view.rounds_played,
        "rounds_won": view.rounds_won,
        "total_messages": len(view.messages),
        "total_chars": view.total_chars,
        "total_cost_usd": spend.total_cost_usd,
        "duration_seconds": view.duration_seconds,
        "agents": {
            a: (s.input_tokens, s.output_tokens, s.requests, s.cost_usd)
            for a, s in spend.agents.items()
        },
        "cache": {
            a: (s.cache_read_tokens, s.cache_write_tokens, s.cache_write_1h_tokens)
            for a, s in spend.agents.items()
        },
        "judge_tokens": spend.judge_tokens,
        "bad_lines": view.damaged_lines,
    }


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    runs = tmp_path_factory.mktemp("twenty")
    folders: list[Path] = []
    ts = 1795200000
    for scenario, overrides in [
        ("veyru", ("round_count=2",)),
        ("veyru", ("round_count=3", "seed=7")),
        ("veyru", ("round_count=2", "round_budget_chars=60")),
        ("veyru", ("round_count=2", "postmortem_enabled=false", "postmortem_after_swap=false")),
        ("prisoners_dilemma", ("round_count=3",)),
        ("prisoners_dilemma", ("round_count=5", "seed=3")),
        ("prisoners_dilemma", ("round_count=1",)),
    ]:
        ts += 1
        folders.append(Path(play(runs, scenario, ts, *overrides)))
    for _ in range(3):  # priced: the ending is logged again by a resume, as priced
        ts += 1
        run = Path(play(runs, "veyru", ts, "round_count=2"))
        _price(run / "veyru.jsonl")
        log = run / "veyru.jsonl"
        log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
        asyncio.run(_resume(run))
        folders.append(run)
    for _ in range(2):  # cut in round 2: stopped
        ts += 1
        run = Path(play(runs, "veyru", ts, "round_count=3"))
        _cut_in_round_2(run)
        folders.append(run)
    for _ in range(3):  # cut in round 2, then resumed to the end
        ts += 1
        run = Path(play(runs, "veyru", ts, "round_count=3"))
        _cut_in_round_2(run)
        asyncio.run(_resume(run))
        folders.append(run)
    ts += 1  # priced, cut in round 2, resumed: the cut-off attempt's calls were paid too
    run = Path(play(runs, "veyru", ts, "round_count=3"))
    _price(run / "veyru.jsonl")
    _cut_in_round_2(run)
    asyncio.run(_resume(run))
    folders.append(run)
    for after in (1, 1):  # forks of a priced source
        ts += 1
        folders.append(Path(fork(runs, str(folders[7]), after, ts)))
    ts += 1
    cut_end = Path(play(runs, "prisoners_dilemma", ts, "round_count=2"))
    log = cut_end / "prisoners_dilemma.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    folders.append(cut_end)
    old = runs / "veyru" / CASE_05.name
    shutil.copytree(CASE_05, old)
    folders.append(old)
    assert len(folders) == 20
    return [f / f"{f.parent.name}.jsonl" for f in folders]


def test_twenty_logs_give_the_same_facts_both_ways(logs: list[Path]) -> None:
    *ours, old = logs
    for log in ours:
        assert _facts(log) == _view(log), log
    # The GlossoGen 0.5 ending recorded no cache counts: unknown on the fast path, never read
    # from the whole log (the head-and-tail rule).
    fast, typed = _facts(old), _view(old)
    assert (fast.pop("cache"), fast.pop("judge_tokens")) == (
        {"field_observer": (None, None, None), "stabilization_engineer": (None, None, None)},
        None,
    )
    assert fast == {k: v for k, v in typed.items() if k not in ("cache", "judge_tokens")}


def test_the_twenty_logs_cover_every_kind(logs: list[Path]) -> None:
    statuses = sorted({_view(log)["status"] for log in logs})
    assert statuses == ["completed", "stopped"]
    resumed = [log for log in logs if '"run_resumed"' in log.read_text()]
    derived = [log for log in logs if RunView.load(str(log)).derived]
    assert (len(resumed), len(derived)) == (9, 2)
    assert json.loads(logs[-1].read_text().splitlines()[0]).get("schema_version") is None


def test_twenty_logs_give_the_same_table_events_both_ways(logs: list[Path]) -> None:
    """The event-log tables' one walk reads the events the view counts, on all twenty logs."""
    runs = logs[0].parents[2]
    records = select_runs(str(runs), FilterSelection()).records
    assert len(records) == 20
    fast_path = rows = 0
    for record in records:
        fast = _table_rows(_events(record, "t"))
        assert fast == _table_rows(_counted_events(record, _TABLE_EVENTS, "t")), record.run_id
        rows += len(fast)
        fast_path += '"run_resumed"' not in Path(record.log_url).read_text()
    assert (fast_path, rows) == (11, 478)  # the nine resumed or derived logs: through the view
