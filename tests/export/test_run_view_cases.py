"""The cases the one reading of a log fixed: a fork's own spend, a resumed run's messages and
duration, and folders whose log is not a run log (each skipped with one note)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from glossogen.eventlog import (
    LlmResponseReceived,
    MessageSent,
    RoundCompleted,
    RunResumed,
    RunView,
    read_events,
)
from glossogen.launch import ResumeRequest, open_session, plan_resume, price_spend
from glossogen.storage import RunFolder
from tests.export.conftest import fork, play
from tests.export.test_cli import _export, _rows

PRICE = 0.00125
"""USD written onto every response of the priced source (scripted calls cost nothing)."""


def _price(log: Path) -> int:
    """Give every response of ``log`` the cost :data:`PRICE`; return how many there are."""
    lines = log.read_text().splitlines(keepends=True)
    out, priced = [], 0
    for line in lines:
        obj = json.loads(line)
        if obj["event_type"] == "llm_response_received":
            obj["cost_usd"], priced = PRICE, priced + 1
            line = json.dumps(obj) + "\n"
        out.append(line)
    log.write_text("".join(out))
    return priced


def test_a_fork_counts_only_the_rounds_it_played(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    source = Path(play(runs, "veyru", 1795100001, "round_count=8"))
    _price(source / "veyru.jsonl")
    copied = [
        e
        for e in read_events(str(source / "veyru.jsonl")).events
        if isinstance(e, LlmResponseReceived) and e.round_number <= 6
    ]
    child = Path(fork(runs, str(source), 6, 1795100002))
    view = RunView.load(str(child / "veyru.jsonl"))
    own_calls = view.spend.requests
    assert (own_calls, len(copied)) == (28, 110)  # the fork played rounds 7 and 8 itself
    ended = view.ended
    assert ended is not None
    assert (ended.total_cost_usd, ended.inherited_cost_usd) == (
        0.0,
        0.1375,  # PRICE * len(copied), summed and rounded to the log's USD places
    )
    assert sum(a.requests for a in ended.agent_costs) == own_calls
    assert view.inherited_spend.requests == len(copied)
    out = tmp_path / "out"
    assert (
        _export("--runs-dir", str(runs), "--out", str(out), "--run-id", f"veyru/{child.name}") == 0
    )
    (row,) = _rows(out / "run_level.csv")
    assert float(row["total_cost_usd"]) == 0.0
    assert sum(int(r["requests"]) for r in _rows(out / "agent_level.csv")) == own_calls


def _cut_in_round_2(run: Path) -> None:
    """Cut the log after the third message of round 2's main phase (a killed process)."""
    lines = (run / "veyru.jsonl").read_text().splitlines(keepends=True)
    seen = 0
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if obj["event_type"] == "message_sent" and obj["round_number"] == 2:
            seen += 1
            if seen == 3:
                (run / "veyru.jsonl").write_text("".join(lines[: i + 1]))
                return
    raise AssertionError("round 2 has fewer than 3 messages")


async def _resume(run: Path) -> None:
    config, point = plan_resume(ResumeRequest(run_dir=str(run)))
    session = open_session(config, point.folder, resume=point)
    for n in range(session.first_round, config.knobs.round_count + 1):
        await session.play_round(n)
    session.finish(price_spend(point.folder), "completed")


def test_a_resumed_run_exports_only_the_messages_that_count(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = Path(play(runs, "veyru", 1795100003, "round_count=3"))
    _cut_in_round_2(run)
    asyncio.run(_resume(run))
    view = RunView.load(str(run / "veyru.jsonl"))
    all_sent = sum(1 for e in view.events if isinstance(e, MessageSent))
    assert all_sent == len(view.messages) + 3  # the cut-off attempt's three are superseded
    out = tmp_path / "out"
    code = _export(
        "--runs-dir", str(runs), "--out", str(out), "--frames", "run_level,message_level"
    )  # fmt: skip
    assert code == 0
    (run_row,) = _rows(out / "run_level.csv")
    messages = _rows(out / "message_level.csv")
    assert len(messages) == int(run_row["message_count"]) == len(view.messages)
    keys = Counter(
        (m["round_number"], m["channel_id"], m["message_index_in_round"]) for m in messages
    )
    assert max(keys.values()) == 1
    assert [m["message_id"] for m in messages] == [m.message_id for m in view.messages]


def test_a_run_resumed_three_times_lasts_every_process_summed(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = Path(play(runs, "veyru", 1795100004, "round_count=3"))
    log = run / "veyru.jsonl"
    earlier = []
    for attempt in range(3):
        if attempt == 0:
            _cut_in_round_2(run)  # killed in round 2
        else:  # killed after its last round, before it logged simulation_ended
            log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
        earlier.append(RunView.load(str(log)).duration_seconds)
        asyncio.run(_resume(run))
    view = RunView.load(str(log))
    ended = view.ended
    assert ended is not None and ended.process_seconds is not None
    assert sum(1 for e in view.events if isinstance(e, RunResumed)) == 3
    # Each process's seconds are wall-clock (time.monotonic in the session), so they are read
    # from the log, not guessed: a killed process counts up to its last round_completed.
    boundaries = [e.process_seconds for e in view.events if isinstance(e, RoundCompleted)]
    assert len(boundaries) == 3  # round 1 by the first process, rounds 2 and 3 by the second
    first, second = boundaries[0], boundaries[2]
    assert first is not None and second is not None
    # The third process played no round, so it added none.
    assert earlier == [first, round(first + second, 3), round(first + second, 3)]
    assert ended.duration_seconds == round(earlier[-1] + ended.process_seconds, 3)
    assert ended.duration_seconds == view.duration_seconds


NOT_RUN_LOGS = {
    "1795100011": b"",
    "1795100012": bytes(range(256)) * 4,
    "1795100013": b"garbage",
}


def test_folders_whose_log_is_not_a_run_log_are_skipped_with_one_note_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    good = play(runs, "veyru", 1795100010, "round_count=1")
    for name, content in NOT_RUN_LOGS.items():
        (runs / "veyru" / name).mkdir()
        (runs / "veyru" / name / "veyru.jsonl").write_bytes(content)
    (runs / "veyru" / "1795100014" / "veyru.jsonl").mkdir(parents=True)  # a folder, not a log
    broken = Path(play(runs, "veyru", 1795100015, "round_count=1"))
    (broken / "labels.json").write_text("{not json")
    escaped = Path(play(runs, "veyru", 1795100016, "round_count=1"))
    (escaped / "labels.json").write_text('{"bad": "a\\udcffb"}')  # valid JSON, not UTF-8 text
    configured = Path(play(runs, "veyru", 1795100017, "round_count=1"))
    (configured / "config.json").write_text('{"round_count": "\\udcff"}')
    capsys.readouterr()
    out = tmp_path / "out"
    assert _export("--runs-dir", str(runs), "--out", str(out)) == 0
    assert [r["run_id"] for r in _rows(out / "run_level.csv")] == [f"veyru/{Path(good).name}"]
    notes = [line for line in capsys.readouterr().err.splitlines() if "skipped" in line]
    # each file named within the runs dir, as REST, MCP and README name it (was its abs path)
    assert notes == [
        "glossogen: note: skipped veyru/1795100011: veyru/1795100011/veyru.jsonl is not a run "
        "log (empty)",
        "glossogen: note: skipped veyru/1795100012: veyru/1795100012/veyru.jsonl is not a run "
        "log (no simulation_started event)",
        "glossogen: note: skipped veyru/1795100013: veyru/1795100013/veyru.jsonl is not a run "
        "log (no simulation_started event)",
        "glossogen: note: skipped veyru/1795100014: veyru/1795100014/veyru.jsonl is a folder, "
        "not an event log",
        "glossogen: note: skipped veyru/1795100015: veyru/1795100015/labels.json is not valid JSON "
        "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        "glossogen: note: skipped veyru/1795100016: veyru/1795100016/labels.json is not UTF-8 text "
        "(it escapes the lone surrogate \\udcff)",
        "glossogen: note: skipped veyru/1795100017: veyru/1795100017/config.json is not UTF-8 text "
        "(it escapes the lone surrogate \\udcff)",
    ]


def test_a_stopped_run_is_stopped_and_a_locked_one_running(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = Path(play(runs, "veyru", 1795100020, "round_count=2"))
    log = run / "veyru.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    out = tmp_path / "out"
    assert _export("--runs-dir", str(runs), "--out", str(out), "--status", "stopped") == 0
    assert [r["status"] for r in _rows(out / "run_level.csv")] == ["stopped"]
    held = RunFolder.at(str(run)).lock()
    try:
        assert RunView.load(str(log), live=True).status == "running"
        out = tmp_path / "out2"
        assert _export("--runs-dir", str(runs), "--out", str(out), "--status", "running") == 0
        assert [r["status"] for r in _rows(out / "run_level.csv")] == ["running"]
    finally:
        held.release()
