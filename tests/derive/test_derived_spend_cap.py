"""``--spend-cap-usd`` on the derived-run commands: recorded in the derived run's
``simulation_started``; refused (65, one line) when the dry-run estimate of the rounds it would
play passes it, the derived folder removed again."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import SimulationStarted, read_events
from tests.fixtures.played_runs import play_run


def _exit(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


def test_a_fork_records_its_cap(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = play_run(str(tmp_path / "runs"), rounds=3)
    out = tmp_path / "forks"
    argv = ["fork-at-round", "veyru", "--source-run-dir", source.url, "--after-round", "1",
            "--runs-dir", str(out), "--spend-cap-usd", "3", "--wait"]  # fmt: skip
    assert _exit(argv) == 0, capsys.readouterr().err
    (log,) = out.glob("veyru/*/veyru.jsonl")
    started = [e for e in read_events(str(log)).events if isinstance(e, SimulationStarted)]
    assert [s.spend_cap_usd for s in started] == [3.0]


def test_a_replace_agent_whose_estimate_passes_the_cap_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The key is present (credentials are checked first), so the cap is what refuses the run;
    # nothing is sent with it.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-never-sent")
    source = play_run(str(tmp_path / "runs"), rounds=3)
    out = tmp_path / "forks"
    out.mkdir()
    argv = ["replace-agent", "veyru", "--source-run-dir", source.url, "--after-round", "1",
            "--replaced-agent-id", "field_observer", "--model", "claude-sonnet-4-6",
            "--provider", "anthropic", "--runs-dir", str(out), "--spend-cap-usd", "0.01"]  # fmt: skip
    assert _exit(argv) == 65
    lines = capsys.readouterr()
    assert lines.err.count("\n") == 1
    # The launch estimate (glossogen.launch.estimate_cost) of the 2 rounds after round 1: the
    # one claude-sonnet-4-6 seat about $0.028477 (its history of round 1 read, not billed), the
    # in-run judge, no longer scripted, 2 calls a round on claude-haiku-4-5 $0.002696, the
    # scripted engineer $0.
    assert lines.err.startswith(
        "glossogen: error: --spend-cap-usd 0.01: the dry-run estimate of the 2 rounds to play is "
        "$0.031173 ($0.015587 per round), above the cap (the derived folder "
    )
    assert list(out.iterdir()) == []
