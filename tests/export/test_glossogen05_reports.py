"""A GlossoGen 0.5 run folder keeps its evaluations: export reads its ``veyru_report.json``
(``measurements``, ``metric_name``, ``per_round``); ``evaluate`` keeps that file's bytes as
``veyru_report.glossogen-0.5.json`` before writing its own and says so; export then reads both,
ours filling a metric both hold, and the legend names each metric column's source."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.evaluation._logs import copy_case

REPORT_05 = Path(__file__).parents[1] / "cases" / "glossogen-0.5-reports" / "veyru_report.json"
RUN_ID = "veyru/1795939736"


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    return int(done.value.code or 0)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    """The GlossoGen 0.5 run folder with the report that platform's ``evaluate`` wrote."""
    run_dir = copy_case(tmp_path / "runs")
    shutil.copyfile(REPORT_05, run_dir / "veyru_report.json")
    return run_dir


def _export(runs: Path, out: Path) -> tuple[dict, list[dict], dict]:
    assert _cli("export", "--runs-dir", str(runs), "--out", str(out)) == 0
    (run,) = _rows(out / "run_level.csv")
    legend = {(r["table"], r["column"]): r for r in _rows(out / "columns.csv")}
    return run, _rows(out / "round_level.csv"), legend


def test_export_reads_a_glossogen_05_report(migrated: Path, tmp_path: Path) -> None:
    run, rounds, legend = _export(tmp_path / "runs", tmp_path / "out")
    assert run["run_id"] == RUN_ID
    assert run["has_evaluation"] == "true"
    assert (run["metric.mean_chars_per_round"], run["metric_rounds.mean_chars_per_round"]) == (
        "91.2", "5")  # fmt: skip
    assert run["metric.message_entropy"] == "3.539256853133973"
    assert run["metric.round_ended_idle"] == "0.0"
    assert [(r["round_number"], r["metric.mean_chars_per_round"]) for r in rounds] == [
        ("1", "103.0"), ("2", "90.0"), ("3", "92.0"), ("4", "88.0"), ("5", "83.0")]  # fmt: skip
    entropy = legend[("run_level", "metric.message_entropy")]
    assert (entropy["unit"], entropy["source"], entropy["runs_filled"]) == (
        "bits/char", "glossogen-0.5", "1")  # fmt: skip
    assert legend[("run_level", "run_id")]["source"] == ""


def test_evaluate_keeps_the_foreign_report_then_export_reads_both(
    prefect_api: str, migrated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = REPORT_05.read_bytes()
    argv = ["evaluate", "veyru", "--run-dir", str(migrated),
            "--metrics", "mean_chars_per_message,messages_per_round"]  # fmt: skip
    assert _cli(*argv) == 0
    kept = migrated / "veyru_report.glossogen-0.5.json"
    assert (
        f"glossogen: note: {migrated}/veyru_report.json was not written by glossogen evaluate: "
        f"kept byte for byte as {kept}\n"
    ) in capsys.readouterr().err
    assert kept.read_bytes() == original
    assert b'"report_version": 1' in (migrated / "veyru_report.json").read_bytes()

    assert _cli(*argv) == 0  # again: ours is there now, nothing more to keep
    assert "kept byte for byte" not in capsys.readouterr().err
    assert sorted(p.name for p in migrated.glob("veyru_report*")) == [
        "veyru_report.glossogen-0.5.json", "veyru_report.json"]  # fmt: skip
    assert kept.read_bytes() == original

    run, rounds, legend = _export(tmp_path / "runs", tmp_path / "out")
    # ours: 456 characters in 18 messages; theirs kept for what we did not score
    assert run["metric.mean_chars_per_message"] == str(456 / 18)
    assert run["metric.messages_per_round"] == "3.6"
    assert run["metric.mean_chars_per_round"] == "91.2"
    assert run["metric.message_entropy"] == "3.539256853133973"
    sources = {col: legend[("run_level", col)]["source"] for col in (
        "metric.mean_chars_per_message", "metric.messages_per_round",
        "metric.mean_chars_per_round", "metric.message_entropy")}  # fmt: skip
    assert sources == {
        "metric.mean_chars_per_message": "glossogen",
        "metric.messages_per_round": "glossogen",
        "metric.mean_chars_per_round": "glossogen-0.5",
        "metric.message_entropy": "glossogen-0.5",
    }
    assert len(rounds) == 5
