"""Resume and fork read agent histories as tolerantly as the other readers: a part missing
``part_kind`` and a legacy ``retry-prompt`` whose errors lack ``input`` are upcast; a history
no upcast can read is refused in one line naming the log line and the event, exit 65, before
anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai.messages import ToolReturnPart

from glossogen.cli import main
from glossogen.derive import read_run_log, read_state, upcast_history
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import play_run


@pytest.fixture
def stopped(tmp_path: Path) -> Path:
    """A 3-round scripted run whose process died before it logged ``simulation_ended``."""
    run = Path(play_run(str(tmp_path / "runs"), rounds=3).url)
    log = run / "veyru.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))
    return run


def _history_lines(log: Path) -> list[tuple[int, dict]]:
    out = []
    for number, line in enumerate(log.read_text().splitlines(), 1):
        event = json.loads(line)
        if event["event_type"] == "agent_history_appended":
            out.append((number, event))
    return out


def _rewrite(log: Path, number: int, event: dict) -> None:
    lines = log.read_text().splitlines(keepends=True)
    lines[number - 1] = json.dumps(event) + "\n"
    log.write_text("".join(lines))


def _parts(event: dict, kind: str) -> list[dict]:
    return [p for m in event["messages"] for p in m["parts"] if p.get("part_kind") == kind]


def test_parts_without_part_kind_read_back_as_they_were(stopped: Path) -> None:
    folder = RunFolder.at(str(stopped))
    whole = read_state(read_run_log(folder)[0]).histories
    log = stopped / "veyru.jsonl"
    stripped = {"user-prompt": 0, "tool-call": 0, "tool-return": 0, "text": 0}
    for number, event in _history_lines(log):
        for message in event["messages"]:
            for part in message["parts"]:
                if part.get("part_kind") in stripped:
                    stripped[part.pop("part_kind")] += 1
        _rewrite(log, number, event)
    assert stripped == {"user-prompt": 17, "tool-call": 56, "tool-return": 61, "text": 11}
    damaged = read_state(read_run_log(folder)[0]).histories
    assert damaged == whole


def test_a_legacy_retry_prompt_without_input_is_read(stopped: Path) -> None:
    log = stopped / "veyru.jsonl"
    number, event = next((n, e) for n, e in _history_lines(log) if _parts(e, "tool-return"))
    part = _parts(event, "tool-return")[0]
    call_id, tool = part["tool_call_id"], part["tool_name"]
    part.clear()  # the shape an older pydantic-ai wrote: errors without "input", no part_kind
    part.update({"content": [{"type": "literal_error", "loc": ["move"], "msg": "bad move"}],
                 "tool_name": tool, "tool_call_id": call_id,
                 "timestamp": "2026-11-29T12:00:01Z"})  # fmt: skip
    _rewrite(log, number, event)
    events, _ = read_run_log(RunFolder.at(str(stopped)))
    histories = read_state(events).histories
    # pydantic-ai reads a retry-prompt answering a tool call as a "retried" tool return
    retries = [p for h in histories.values() for m in h for p in m.parts
               if isinstance(p, ToolReturnPart) and p.tool_call_id == call_id]  # fmt: skip
    assert len(retries) == 1
    assert (retries[0].tool_name, retries[0].outcome) == (tool, "retried")
    assert retries[0].content == [
        {"type": "literal_error", "loc": ["move"], "msg": "bad move", "input": None}
    ]


def test_upcast_infers_each_part_kind_from_its_fields() -> None:
    request = {"parts": [
        {"content": "go", "timestamp": "2026-11-29T12:00:00Z"},
        {"tool_name": "send", "content": "sent", "tool_call_id": "c1"},
        {"tool_name": "lock_in", "content": [{"type": "t", "loc": [], "msg": "m"}],
         "tool_call_id": "c2"},
        {"content": "be brief", "dynamic_ref": None},
    ]}  # fmt: skip
    response = {"model_name": "scripted", "parts": [
        {"tool_name": "send", "args": {"text": "hi"}, "tool_call_id": "c3"},
        {"content": "hm", "signature": "sig"},
        {"content": "ok"},
    ]}  # fmt: skip
    upcast = upcast_history([request, response])
    assert [upcast[0]["kind"], upcast[1]["kind"]] == ["request", "response"]
    assert [p["part_kind"] for p in upcast[0]["parts"]] == [
        "user-prompt", "tool-return", "retry-prompt", "system-prompt"]  # fmt: skip
    assert [p["part_kind"] for p in upcast[1]["parts"]] == ["tool-call", "thinking", "text"]
    assert "part_kind" not in request["parts"][0]  # the input is not changed


def _unreadable(stopped: Path) -> tuple[int, dict]:
    log = stopped / "veyru.jsonl"
    number, event = _history_lines(log)[3]
    event["messages"][0]["parts"][0] = {"unknown_field": 1}
    _rewrite(log, number, event)
    return number, event


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    "command",
    [
        ["run", "veyru", "--resume", "STOPPED"],
        ["fork-at-round", "veyru", "--source-run-dir", "STOPPED", "--after-round", "1",
         "--runs-dir", "OUT"],
    ],
    ids=["resume", "fork-at-round"],
)  # fmt: skip
def test_an_unreadable_history_is_refused_in_one_line_before_anything_is_written(
    command: list[str], stopped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    number, event = _unreadable(stopped)
    before = _snapshot(stopped)
    out = tmp_path / "forks"
    with pytest.raises(SystemExit) as exited:
        main([{"STOPPED": str(stopped), "OUT": str(out)}.get(arg, arg) for arg in command])
    assert exited.value.code == 65
    assert capsys.readouterr().err == (
        f"glossogen: error: {stopped}/veyru.jsonl line {number}: agent_history_appended "
        f"{event['event_id']} (agent {event['agent_id']}) holds a history that cannot be read: "
        "message 0 part 0 has no part_kind and its fields (unknown_field) do not tell one\n"
    )
    assert _snapshot(stopped) == before
    assert not out.exists()
