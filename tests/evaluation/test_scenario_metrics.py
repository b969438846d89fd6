"""A metric meant for one scenario (``topographic_similarity``, signal_game's plug-in) is no part
of another scenario's evaluation: ``--metrics all`` leaves it out with no note, no report entry
and no export column; named, it is blank with a reason that says which scenario it is for."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

from glossogen.evaluation import plan_evaluation, score_all, write_outcomes
from glossogen.export import RunIdSelection, select_runs, write_tables
from tests.fixtures.played_runs import play_run

TOPO = "topographic_similarity"


def test_all_metrics_of_a_veyru_run_leave_signal_games_metric_out(tmp_path: Path) -> None:
    run = play_run(str(tmp_path), "veyru", rounds=2, now_unix=1_700_000_101)
    plan = plan_evaluation(run.url)
    assert TOPO not in [m.name for m in plan.metrics]
    assert [name for name, _ in plan.blank] == ["language_repetition", "shorthand_codes"]
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    assert TOPO not in report.metrics and TOPO not in report.left_blank
    records = select_runs(str(tmp_path), RunIdSelection(run_ids=[run.run_id])).records
    write_tables(records, ["run_level"], str(tmp_path / "out"))
    with (tmp_path / "out" / "run_level.csv").open(newline="") as f:
        header = next(csv.reader(f))
    assert [c for c in header if TOPO in c] == []
    named = plan_evaluation(run.url, metrics=[TOPO, "round_success"])
    assert [m.name for m in named.metrics] == ["round_success"]
    assert named.blank == [(TOPO, "does not apply: a metric of signal_game runs only")]


def test_a_signal_game_run_is_still_scored_by_it(tmp_path: Path) -> None:
    run = play_run(str(tmp_path), "signal_game", rounds=2, now_unix=1_700_000_102)
    plan = plan_evaluation(run.url, metrics=[TOPO])
    assert [m.name for m in plan.metrics] == [TOPO] and plan.blank == []
    assert TOPO in [m.name for m in plan_evaluation(run.url).metrics]
