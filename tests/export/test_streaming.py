"""Streaming: the tables written in batches of runs are, byte for byte, the tables written whole.

The default tables are built ``batch_runs`` runs at a time under a header fixed by a first
pass over the records (columns and cell types). The selection here mixes two scenarios, a
fork (``lineage.`` columns), a GlossoGen 0.5 folder (no ``config.json``) and reports whose
metrics differ per run, so with two runs a batch, columns that only later runs fill, and a
metric whose cells are floats in one batch and integers in another, all cross a batch
boundary.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from glossogen.export import FRAMES, FilterSelection, RunRecord, select_runs, write_tables
from tests.export.conftest import CUT, FORK, OLD, A, B, C, Cohort, metric, write_report


@pytest.fixture(scope="module")
def records(cohort: Cohort, tmp_path_factory: pytest.TempPathFactory) -> list[RunRecord]:
    """The whole cohort, with a report on the cut run that only the last batch holds."""
    runs = tmp_path_factory.mktemp("streamed") / "runs"
    shutil.copytree(cohort.runs_dir, runs)
    write_report(
        runs / CUT,
        "veyru",
        {
            "mean_chars_per_message": metric(
                "mean_chars_per_message", 7, 1,
                per_agent=[{"agent_id": "field_observer", "value": 7, "note": "short"}],
            ),
            "late_metric": metric(
                "late_metric", 2, 1,
                per_round=[{"round_number": 1, "value": 1, "team_id": "team", "note": None}],
            ),
        },
    )  # fmt: skip
    return select_runs(str(runs), FilterSelection()).records


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("summaries", [False, True])
def test_batches_of_two_runs_write_the_bytes_of_one_batch(
    records: list[RunRecord], tmp_path: Path, summaries: bool
) -> None:
    assert [r.run_id for r in records] == [C, A, B, FORK, CUT, OLD]
    whole, batched = tmp_path / "whole", tmp_path / "batched"
    counts = write_tables(records, FRAMES, str(whole), include_metric_summaries=summaries,
                          batch_runs=len(records))  # fmt: skip
    assert write_tables(records, FRAMES, str(batched), include_metric_summaries=summaries,
                        batch_runs=2) == counts  # fmt: skip
    assert _files(batched) == _files(whole)
    assert counts["run_level"] == 6
    # the header holds columns only the second and third batches fill
    run_level = {r["run_id"]: r for r in _rows(batched / "run_level.csv")}
    assert [run_level[r]["metric.late_metric"] for r in (C, A, B, FORK, CUT, OLD)] == (
        ["", "", "", "", "2", ""]
    )
    assert [run_level[r]["lineage.derivation_type"] for r in (C, A, B, FORK, CUT, OLD)] == (
        ["", "", "", "fork_at_round", "", ""]
    )
    # a metric holding floats (A, first batch) and integers (CUT, last) is a float column
    agents = [r for r in _rows(batched / "agent_level.csv") if r["agent_id"] == "field_observer"]
    assert [(r["run_id"], r["metric.mean_chars_per_message"]) for r in agents] == [
        (A, "12.0"), (B, ""), (FORK, ""), (CUT, "7.0"), (OLD, ""),
    ]  # fmt: skip
    rounds = [(r["run_id"], r["round_number"], r["metric.late_metric"])
              for r in _rows(batched / "round_level.csv")]  # fmt: skip
    assert rounds == [(A, "1", ""), (A, "2", ""), (CUT, "1", "1.0")]  # a mean is a float
    legend = {(r["table"], r["column"]): r["runs_filled"] for r in _rows(batched / "columns.csv")}
    assert legend[("run_level", "metric.mean_chars_per_message")] == "2"
    assert legend[("agent_level", "metric.mean_chars_per_message")] == "2"
    assert legend[("round_level", "metric.late_metric")] == "1"


def test_a_batch_holds_at_least_one_run(records: list[RunRecord], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="^batch_runs must be at least 1, got 0$"):
        write_tables(records, ["run_level"], str(tmp_path), batch_runs=0)
