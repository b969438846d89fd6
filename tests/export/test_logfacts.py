"""Run facts read from the event log: per-agent usage when ``simulation_ended`` lacks it, and
lines that parse but do not validate skipped and counted, never counted as messages."""

from __future__ import annotations

import asyncio
import csv
import json
import shutil
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import LlmResponseReceived, RunView
from glossogen.export import RunIdSelection, select_runs, write_tables
from glossogen.launch import ResumeRequest, open_session, plan_resume
from glossogen.storage import RunFolder
from tests.export.conftest import CUT, OLD, A, Cohort
from tests.fixtures.played_runs import play_run

INVALID_MESSAGE = '{"event_type":"message_sent","round_number":1}\n'
"""Well-formed JSON, but a ``message_sent`` with no channel, sender or text (the QA's line)."""


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _usage_by_hand(log: Path) -> dict[str, tuple[int, int, int]]:
    """Sum each agent's complete ``llm_response_received`` lines, independently of the export."""
    sums: dict[str, list[int]] = {}
    for line in log.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            continue  # the torn tail
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event_type") == "llm_response_received":
            s = sums.setdefault(event["agent_id"], [0, 0, 0])
            usage = event.get("usage") or event  # 0.5 nests usage
            s[0] += usage["input_tokens"]
            s[1] += usage["output_tokens"]
            s[2] += 1
    return {agent: (s[0], s[1], s[2]) for agent, s in sums.items()}


def _agents(out: Path) -> dict[str, tuple[str, str, str, str]]:
    return {
        r["agent_id"]: (r["input_tokens"], r["output_tokens"], r["requests"], r["cost_usd"])
        for r in _rows(out / "agent_level.csv")
    }


def test_the_0_5_run_gets_its_tokens_and_requests_from_its_responses(
    cohort: Cohort, tmp_path: Path
) -> None:
    records = select_runs(str(cohort.runs_dir), RunIdSelection(run_ids=[OLD])).records
    write_tables(records, ["agent_level"], str(tmp_path))
    # Summed by hand from veyru.jsonl's usage blocks; 0.5 recorded no cost: blank, not 0.
    assert _agents(tmp_path) == {
        "field_observer": ("11150", "449", "12", ""),
        "stabilization_engineer": ("13800", "496", "222", ""),
    }
    assert _usage_by_hand(cohort.folder(OLD) / "veyru.jsonl") == {
        "field_observer": (11150, 449, 12),
        "stabilization_engineer": (13800, 496, 222),
    }


def test_a_crashed_run_gets_usage_and_cost_from_its_responses(
    cohort: Cohort, tmp_path: Path
) -> None:
    records = select_runs(str(cohort.runs_dir), RunIdSelection(run_ids=[CUT])).records
    assert records[0].status == "stopped"  # no simulation_ended, no live writer
    write_tables(records, ["agent_level"], str(tmp_path))
    got = _agents(tmp_path)
    by_hand = _usage_by_hand(cohort.folder(CUT) / "veyru.jsonl")
    assert set(got) == {"field_observer", "stabilization_engineer"}
    for agent, (tokens_in, tokens_out, requests) in by_hand.items():
        assert got[agent] == (str(tokens_in), str(tokens_out), str(requests), "0.0")
    assert by_hand == {
        "field_observer": (10874, 103, 12),
        "stabilization_engineer": (15013, 92, 10),
    }


def _with_invalid_message(cohort: Cohort, runs: Path, run_id: str, new_id: str) -> int:
    """Copy ``run_id`` to ``new_id`` with the invalid line after its first message; return
    the invalid line's 1-based number."""
    scenario = run_id.split("/")[0]
    target = runs / new_id
    shutil.copytree(cohort.folder(run_id), target)
    log = target / f"{scenario}.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if '"message_sent"' in line)
    lines.insert(first + 1, INVALID_MESSAGE)
    log.write_text("".join(lines))
    return first + 2


def _line_numbers(log: Path, *needles: str) -> list[int]:
    lines = log.read_text().splitlines()
    return [i + 1 for i, line in enumerate(lines) if any(line.startswith(n) for n in needles)]


def test_an_invalid_message_is_skipped_counted_and_named(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    cut_line = _with_invalid_message(cohort, runs, CUT, "veyru/1795000010")
    old_line = _with_invalid_message(cohort, runs, OLD, "veyru/1795000011")
    broken = _line_numbers(runs / "veyru/1795000010/veyru.jsonl", '{"event_type": "message_sent"')
    assert len(broken) == 1  # the cut log's own damaged line
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as done:
        main(["export", "--runs-dir", str(runs), "--out", str(out),
              "--frames", "run_level,message_level", "--no-repeat-run-columns"])  # fmt: skip
    assert done.value.code == 0
    cut_lines = sorted([cut_line, *broken])
    cut_log = runs / "veyru/1795000010/veyru.jsonl"
    # The cut log ends in a message_sent line cut off mid-write: message_level names it too.
    torn = cut_log.read_text().count("\n") + 1
    assert cut_log.read_text().rsplit("\n", 1)[1].startswith('{"event_id":"x","event_type":"m')
    old_log = runs / "veyru/1795000011/veyru.jsonl"
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: note: veyru/1795000010: 3 damaged log lines skipped (lines "
        f"{cut_lines[0]}, {cut_lines[1]}, {torn} truncated) in {cut_log}",
        f"glossogen: note: veyru/1795000011: 1 damaged log line skipped (line {old_line}) "
        f"in {old_log}",
        f"glossogen: note: veyru/1795000010: message_level: 3 damaged log lines skipped (lines "
        f"{cut_lines[0]}, {cut_lines[1]}, {torn} truncated) in {cut_log}",
        f"glossogen: note: veyru/1795000011: message_level: 1 damaged log line skipped "
        f"(line {old_line}) in {old_log}",
    ]
    runs_rows = {r["run_id"]: r for r in _rows(out / "run_level.csv")}
    assert runs_rows["veyru/1795000010"]["message_count"] == "7"  # as without the line
    assert runs_rows["veyru/1795000011"]["message_count"] == "28"
    assert runs_rows["veyru/1795000011"]["total_chars"] == "810"
    messages = _rows(out / "message_level.csv")
    per_run = {r: sum(1 for m in messages if m["run_id"] == r) for r in runs_rows}
    assert per_run == {"veyru/1795000010": 7, "veyru/1795000011": 28}
    assert all(m["channel_id"] and m["sender_agent_id"] for m in messages)  # no blank row


@pytest.mark.parametrize(
    "line",
    [
        '{"event_type":"message_sent","round_number":1,"chars":5}\n',  # no channel or sender
        '{"event_type":"message_sent","schema_version":1,"channel_id":"link","sender_id":"x",'
        '"text":"hi","delivered_text":"hi","chars":"two"}\n',  # chars not a number
        '{"event_type":"message_sent","schema_version":1,"channel_id":"link","sender_id":"x",'
        '"text":null,"delivered_text":"","chars":3}\n',  # no text
    ],
)
def test_every_invalid_message_shape_is_left_out_of_the_counts(
    cohort: Cohort, tmp_path: Path, line: str
) -> None:
    runs = tmp_path / "runs"
    target = runs / "veyru" / "1795000012"
    shutil.copytree(cohort.folder(CUT), target)
    log = target / "veyru.jsonl"
    text = log.read_text()
    cut = text.index('{"event_type": "message_sent", "broken')
    log.write_text(text[:cut] + line + text[cut:])
    (record,) = select_runs(str(runs), {"kind": "filters"}).records
    assert record.facts.total_messages == 7
    assert record.facts.bad_lines == 2


async def _derived_stopped_in_round_2(runs: Path, source_url: str) -> str:
    """A fork of a 2-round scripted veyru run after round 1, stopped once round 2 was played."""
    prepared = prepare_fork(ForkRequest("veyru", source_url, 1, str(runs), 1))
    plan, point = plan_resume(ResumeRequest(run_dir=prepared.folder.url))
    session = open_session(plan, prepared.folder, resume=point)
    await session.play_round(2)
    session.writer.close()  # the process stops here: no simulation_ended
    assert session.lock is not None
    session.lock.release()
    return prepared.folder.run_id


def test_an_unended_derived_run_counts_only_its_own_requests(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    source = play_run(str(tmp_path / "source"), "veyru", rounds=2)
    run_id = asyncio.run(_derived_stopped_in_round_2(runs, source.url))
    records = select_runs(str(runs), RunIdSelection(run_ids=[run_id])).records
    assert records[0].status == "stopped"
    write_tables(records, ["agent_level"], str(tmp_path / "out"))
    got = {agent: int(row[2]) for agent, row in _agents(tmp_path / "out").items()}
    view = RunView.load(f"{runs / run_id}/veyru.jsonl")
    responses = [e for e in view.counted if isinstance(e, LlmResponseReceived)]
    own = {a: sum(1 for e in responses if e.agent_id == a and e.event_id not in view.inherited)
           for a in got}  # fmt: skip
    copied = {a: sum(1 for e in responses if e.agent_id == a and e.event_id in view.inherited)
              for a in got}  # fmt: skip
    assert got == own == {a: s.requests for a, s in view.spend.agents.items()}
    assert (own, copied) == (
        {"field_observer": 10, "stabilization_engineer": 10},
        {"field_observer": 14, "stabilization_engineer": 13},
    )


def _damaged_copies(cohort: Cohort, runs: Path) -> tuple[Path, Path]:
    """Two copies of the completed run A: one whose ``simulation_ended`` (its last line) is cut
    in half, one with a garbage line naming no event type inserted as line 21."""
    torn, garbage = runs / "veyru/1795000013", runs / "veyru/1795000014"
    for target in (torn, garbage):
        shutil.copytree(cohort.folder(A), target)
    log = torn / "veyru.jsonl"
    text = log.read_bytes()
    last = text.rstrip(b"\n").rsplit(b"\n", 1)[1]
    assert last.startswith(b'{"event_id":') and b'"simulation_ended"' in last
    log.write_bytes(text[: len(text) - len(last) - 1] + last[: len(last) // 2])
    log = garbage / "veyru.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines.insert(20, "not an event at all\n")
    log.write_text("".join(lines))
    return torn, garbage


@pytest.mark.parametrize(
    ("frames", "table_notes"),
    [("run_level,round_level,agent_level", 0), ("message_level,round_context", 1)],
)
def test_a_cut_ending_and_a_line_naming_no_event_are_named_by_file_and_line(
    cohort: Cohort,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    frames: str,
    table_notes: int,
) -> None:
    runs = tmp_path / "runs"
    torn, garbage = _damaged_copies(cohort, runs)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as done:
        main(["export", "--runs-dir", str(runs), "--out", str(out), "--frames", frames])
    assert done.value.code == 0
    # The cut ending was the log's 199th line; the garbage line is the 21st of 200.
    assert len((cohort.folder(A) / "veyru.jsonl").read_text().splitlines()) == 199
    notes = [
        "glossogen: note: veyru/1795000013: 1 damaged log line skipped (line 199 truncated) "
        f"in {torn / 'veyru.jsonl'}",
    ]
    # The default tables read the log's head and tail only: the garbage line in its body costs
    # them nothing and is not read. The event-log tables walk every line and name it: it may
    # have been a message.
    table = (
        f"glossogen: note: veyru/1795000014: message_level, round_context: 1 damaged log line "
        f"skipped (line 21) in {garbage / 'veyru.jsonl'}"
    )
    assert capsys.readouterr().err.splitlines() == notes + [table] * table_notes
    (cut,) = select_runs(str(runs), RunIdSelection(run_ids=["veyru/1795000013"])).records
    (typeless,) = select_runs(str(runs), RunIdSelection(run_ids=["veyru/1795000014"])).records
    assert (cut.status, cut.facts.bad_lines, cut.facts.torn_line) == ("stopped", 0, 199)
    assert (typeless.status, typeless.facts.bad_line_numbers) == ("completed", [])
    assert RunView.load(str(garbage / "veyru.jsonl")).damaged_lines == 1  # as the view counts


def test_a_live_runs_last_line_being_written_is_not_named(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    torn, _ = _damaged_copies(cohort, runs)
    shutil.rmtree(runs / "veyru/1795000014")
    held = RunFolder.at(str(torn)).lock()  # a live writer, mid-way through its last line
    try:
        with pytest.raises(SystemExit) as done:
            main(["export", "--runs-dir", str(runs), "--out", str(tmp_path / "out")])
    finally:
        held.release()
    assert done.value.code == 0
    assert capsys.readouterr().err == ""
    assert [r["status"] for r in _rows(tmp_path / "out" / "run_level.csv")] == ["running"]
