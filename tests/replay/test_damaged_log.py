"""A run whose log lost an event (a damaged line) is neither replayed nor copied into a fork.

The refusal is the damage ``glossogen verify`` names under its ``log`` rule, in one line naming
the log and the line, with a non-zero exit and nothing written: a replay would blame itself
for the lost event, and a copied fork would carry the loss on where no check can see it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.cli.replay import replay as replay_command
from tests.fixtures.played_runs import play_run
from tests.mcp.conftest import in_process_session, refusal

LOST = "1 damaged line(s): an event may be lost"


def _cli(argv: list[str]) -> int:
    """``glossogen ARGV``'s exit code."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


def _damaged(runs: Path, line: int | None) -> tuple[str, Path]:
    """A scripted 2-round veyru run whose ``line`` has a \\xff byte in its middle (None: a
    non-UTF-8 line appended after ``simulation_ended``); its id and its log."""
    run_id = play_run(str(runs), "veyru", rounds=2, now_unix=1796000000).run_id
    log = runs / run_id / "veyru.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    if line is None:
        lines.append(b"\xff\xfe not a line of this run\n")
    else:
        half = len(lines[line - 1]) // 2
        lines[line - 1] = lines[line - 1][:half] + b"\xff" + lines[line - 1][half:]
    log.write_bytes(b"".join(lines))
    return run_id, log


@pytest.mark.parametrize("where", [None, 41])
def test_replay_refuses_a_log_with_a_damaged_line(
    where: int | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    run_id, log = _damaged(runs, where)
    line = where or len(log.read_bytes().splitlines())
    assert replay_command(str(runs / run_id), str(tmp_path / "r")) == 65
    assert capsys.readouterr() == (
        "",
        f"glossogen: error: {log} line {line}: {LOST}; a run whose log lost an event is not "
        "replayed\n",
    )
    assert not (tmp_path / "r").exists()
    assert _cli(["verify", str(runs / run_id)]) == 1  # the same damage, as verify names it
    assert f"log: line {line}: {LOST}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "copied"),
    [
        (["fork-at-round"], "copied"),
        (["fork-at-round", "--replay"], "replayed"),
        (["replace-agent", "--replaced-agent-id", "field_observer", "--model", "other-script",
          "--provider", "scripted"], "copied"),
    ],
)  # fmt: skip
def test_a_fork_refuses_a_source_with_a_damaged_line_and_writes_nothing(
    command: list[str], copied: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    run_id, log = _damaged(runs, 41)
    before = sorted(p.name for p in (runs / "veyru").iterdir())
    code = _cli([command[0], "veyru", "--source-run-dir", str(runs / run_id), "--after-round",
                 "1", "--runs-dir", str(runs), *command[1:]])  # fmt: skip
    assert code == 65
    assert capsys.readouterr().err == (
        f"glossogen: error: {log} line 41: {LOST}; a run whose log lost an event is not {copied}\n"
    )
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before


def test_a_donor_with_a_damaged_line_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    donor_id, donor_log = _damaged(runs, 41)
    source = play_run(str(runs), "veyru", rounds=2, now_unix=1796000001).run_id
    code = _cli(["cross-run-replace-agent", "veyru", "--source-run-dir", str(runs / source),
                 "--after-round", "1", "--runs-dir", str(runs), "--replaced-agent-id",
                 "field_observer", "--donor-run-dir", str(runs / donor_id), "--donor-agent-id",
                 "field_observer", "--model", "other-script", "--provider", "scripted"])  # fmt: skip
    assert code == 65
    assert capsys.readouterr().err == (
        f"glossogen: error: {donor_log} line 41: {LOST}; a run whose log lost an event is not "
        "copied\n"
    )
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == ["1796000000", "1796000001"]


def test_mcp_fork_run_refuses_a_source_with_a_damaged_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_id, log = _damaged(runs, 41)

    async def go() -> str:
        async with in_process_session(runs, tmp_path) as session:
            return await refusal(session, "fork_run", source_run_id=run_id, after_round=1)

    # Named inside the server's runs directory, never by the server's path (issue 32).
    assert asyncio.run(go()) == (
        f"{run_id}/veyru.jsonl line 41: {LOST}; a run whose log lost an event is not copied"
    )
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == ["1796000000"]


def _twice(runs: Path, line: int) -> tuple[str, Path, dict[str, str]]:
    """A scripted 2-round veyru run whose ``line`` is written again right after it (one valid
    event, its ``event_id`` twice); its id, its log and that event."""
    run_id = play_run(str(runs), "veyru", rounds=2, now_unix=1796000000).run_id
    log = runs / run_id / "veyru.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines.insert(line, lines[line - 1])
    log.write_bytes(b"".join(lines))
    return run_id, log, json.loads(lines[line - 1])


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        (["replay", "RUN", "--runs-dir", "OUT"], "replayed"),
        (["fork-at-round", "veyru", "--source-run-dir", "RUN", "--after-round", "1",
          "--runs-dir", "OUT"], "copied"),
    ],
)  # fmt: skip
def test_a_log_that_holds_an_event_twice_is_refused_naming_the_line_and_nothing_is_written(
    command: list[str], refused: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Line 20 written again as line 21 (was: ``replay`` of such a run on the real clock ran at
    full CPU without end, its replay folder half written)."""
    runs = tmp_path / "runs"
    run_id, log, event = _twice(runs, 20)
    out = tmp_path / "out"
    argv = [str(runs / run_id) if a == "RUN" else str(out) if a == "OUT" else a for a in command]
    assert _cli(argv) == 65
    assert capsys.readouterr() == (
        "",
        f"glossogen: error: {log} line 21: event {event['event_id']} ({event['event_type']}) is "
        f"in the log twice (lines 20, 21); a run whose log holds an event twice is not "
        f"{refused}\n",
    )
    assert not out.exists()
    assert _cli(["verify", str(runs / run_id)]) == 1  # the same line, as verify names it
    assert (
        f"log: line 21 (round 1): event {event['event_id']} ({event['event_type']}) is in the "
        "log twice (lines 20, 21)" in capsys.readouterr().out
    )


def test_a_run_whose_ending_was_cut_off_mid_write_is_refused_naming_the_torn_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its ``simulation_ended`` is the torn last line (was: ``run ... has not ended``, no line)."""
    runs = tmp_path / "runs"
    run_id = play_run(str(runs), "veyru", rounds=2, now_unix=1796000000).run_id
    log = runs / run_id / "veyru.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["event_type"] == "simulation_ended"
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    log.write_bytes(b"".join(lines))
    assert _cli(["replay", str(runs / run_id), "--runs-dir", str(tmp_path / "r")]) == 65
    assert capsys.readouterr() == (
        "",
        f"glossogen: error: {log} line {len(lines)}: the last line is torn (cut off mid-write): "
        "an event may be lost; a run whose log lost an event is not replayed\n",
    )
    assert not (tmp_path / "r").exists()


def _cut(runs: Path, whole: bool) -> tuple[str, Path, int]:
    """A scripted 2-round veyru run whose ``simulation_ended`` is cut off mid-write (``whole``:
    removed, the run has not ended); its id, its log and that line's number."""
    run_id = play_run(str(runs), "veyru", rounds=2, now_unix=1796000000).run_id
    log = runs / run_id / "veyru.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["event_type"] == "simulation_ended"
    lines[-1] = b"" if whole else lines[-1][: len(lines[-1]) // 2]
    log.write_bytes(b"".join(lines))
    return run_id, log, len(lines)


@pytest.mark.parametrize(
    ("command", "copied"),
    [(["fork-at-round"], "copied"), (["fork-at-round", "--replay", "--wait"], "replayed")],
)
def test_a_fork_refuses_a_source_whose_ending_is_torn_and_writes_nothing(
    command: list[str], copied: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the copied fork dropped the torn line and played (0); ``--replay`` crashed (1,
    ``RuntimeError: no running event loop`` then a ``FileNotFoundError`` of its scratch log)."""
    runs = tmp_path / "runs"
    run_id, log, line = _cut(runs, whole=False)
    code = _cli([command[0], "veyru", "--source-run-dir", str(runs / run_id), "--after-round",
                 "1", "--rounds-after", "1", "--runs-dir", str(tmp_path / "out"),
                 *command[1:]])  # fmt: skip
    assert (code, capsys.readouterr()) == (65, (
        "",
        f"glossogen: error: {log} line {line}: the last line is torn (cut off mid-write): an "
        f"event may be lost; a run whose log lost an event is not {copied}\n",
    ))  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_a_replayed_fork_refuses_a_source_that_has_not_ended_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ``replay`` refuses it (was: a traceback, exit 1)."""
    runs = tmp_path / "runs"
    run_id, log, _ = _cut(runs, whole=True)
    recorded = json.loads(log.read_bytes().splitlines()[0])["run_id"]
    code = _cli(["fork-at-round", "veyru", "--source-run-dir", str(runs / run_id),
                 "--after-round", "1", "--rounds-after", "1", "--runs-dir",
                 str(tmp_path / "out"), "--replay", "--wait"])  # fmt: skip
    assert (code, capsys.readouterr()) == (65, (
        "",
        f"glossogen: error: run {recorded} has not ended: only an ended run is replayed\n",
    ))  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_verify_names_a_scripted_ruling_written_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``judge_called`` that settles no request ($0, no ``request_ids``) written again: no
    rule of its own names it, the ``log`` rule does (was: ``verified 1 run: 0 failed``, 0).
    Rejudge refuses such a log by the same check (``tests/rejudge/test_rejudge.py``)."""
    runs = tmp_path / "runs"
    run_id = play_run(str(runs), "veyru", rounds=2, now_unix=1796000000).run_id
    log = runs / run_id / "veyru.jsonl"
    line = next(n for n, text in enumerate(log.read_text().splitlines(), 1)
                if '"judge_called"' in text)  # fmt: skip
    ruling = json.loads(log.read_text().splitlines()[line - 1])
    assert ruling["request_ids"] == []
    lines = log.read_bytes().splitlines(keepends=True)
    lines.insert(line, lines[line - 1])
    log.write_bytes(b"".join(lines))
    named = (f"event {ruling['event_id']} (judge_called) is in the log twice (lines {line}, "
             f"{line + 1})")  # fmt: skip
    assert _cli(["verify", str(runs / run_id)]) == 1
    assert capsys.readouterr() == (
        f"{run_id}: log: line {line + 1} (round {ruling['round_number']}): {named}\n"
        "verified 1 run: 1 failed\n",
        "",
    )
