"""A GlossoGen 0.5 run folder scores like one of ours, with that platform's metric definitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.evaluation._logs import copy_case


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as done:
        main(["evaluate", *args])
    return int(done.value.code)


def test_glossogen_05_run_matches_its_published_numbers(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = copy_case(tmp_path)
    code = _cli(
        "veyru", "--run-dir", str(run_dir),
        "--metrics", "round_success,mean_chars_per_round,mean_chars_per_message",
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    report = json.loads((run_dir / "veyru_report.json").read_text())
    metrics = report["metrics"]
    # 5 rounds, all stabilized; 18 messages and 456 characters on `link` in phase main
    assert (metrics["round_success"]["score"], metrics["round_success"]["rounds"]) == (1.0, 5)
    assert metrics["round_success"]["summary"] == "5 of 5 rounds won"
    assert (
        metrics["mean_chars_per_round"]["score"],
        metrics["mean_chars_per_round"]["rounds"],
    ) == (
        456 / 5,
        5,
    )
    assert round(metrics["mean_chars_per_round"]["score"], 1) == 91.2
    assert metrics["mean_chars_per_message"]["score"] == 456 / 18
    assert round(metrics["mean_chars_per_message"]["score"], 3) == 25.333
    assert report["run_id"] == "veyru/1795939736"
    out = capsys.readouterr().out
    assert "mean_chars_per_round\t91.2\tcharacters per round" in out


def test_all_on_a_05_run_scores_what_applies(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = copy_case(tmp_path)
    assert _cli("veyru", "--run-dir", str(run_dir), "--metrics", "all") == 0
    err = capsys.readouterr().err
    metrics = json.loads((run_dir / "veyru_report.json").read_text())["metrics"]
    assert set(metrics) == {
        "agent_cycle_failures", "character_entropy_bits", "gzip_compression_ratio",
        "mean_chars_per_message", "mean_chars_per_round", "messages_per_round", "round_success",
        "vocabulary_growth",
    }  # fmt: skip
    # the 0.5 log states no budget, no agent history, and its scripted models have no price
    assert "budget_utilisation left blank: does not apply: run lacks budget" in err
    assert "protocol_probe left blank: does not apply: run lacks agent_history" in err
    assert "cost_per_round_usd left blank: not costed" in err
    assert metrics["messages_per_round"]["score"] == 18 / 5
