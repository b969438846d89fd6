"""A small cohort for the analysis tests: five scripted veyru runs with reports written by hand.

The runs are played for real (the ``scripted`` provider, two rounds each); their knobs and
reports are chosen so every figure the tests assert can be worked out by hand:

====  ======  =====  ====  =============  ==============  ==============  ==========
run   budget  noise  seed  round_success  chars (score)   chars (rounds)  task_done
====  ======  =====  ====  =============  ==============  ==============  ==========
r1    300     0.0    1     1, 0           10              8, 12           1
r2    300     0.1    2     1, 1           20              20, 20          1
r3    600     0.0    1     0, 0           30              25, 35          0
r4    600     0.2    2     1, 0           (none)          (none)          1
r5    (none)  0.1    3     1, 1           50              40, 60          0
====  ======  =====  ====  =============  ==============  ==============  ==========

``r5`` never recorded ``round_budget_chars`` (removed from its ``config.json``, as a run played
before the knob existed). ``team_split`` is a per-team metric of ``r1`` alone: round 1 team
``a`` 1 and team ``b`` 0 (its round row averages them: 0.5), round 2 team ``a`` 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from tests.fixtures.played_runs import play_run

RUNS: dict[str, dict[str, Any]] = {
    "r1": {"budget": 300, "noise": 0.0, "seed": 1, "success": [1, 0], "chars": (10, [8, 12]),
           "done": 1},
    "r2": {"budget": 300, "noise": 0.1, "seed": 2, "success": [1, 1], "chars": (20, [20, 20]),
           "done": 1},
    "r3": {"budget": 600, "noise": 0.0, "seed": 1, "success": [0, 0], "chars": (30, [25, 35]),
           "done": 0},
    "r4": {"budget": 600, "noise": 0.2, "seed": 2, "success": [1, 0], "chars": None, "done": 1},
    "r5": {"budget": None, "noise": 0.1, "seed": 3, "success": [1, 1], "chars": (50, [40, 60]),
           "done": 0},
}  # fmt: skip


@dataclass
class Cohort:
    """The runs directory and each run's id by its short name."""

    runs_dir: str
    ids: dict[str, str]


def _entry(name: str, score: float, per_round: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "kind": "deterministic", "version": 1, "unit": "u", "status": "ok",
            "score": score, "summary": "", "rounds": 2, "per_round": per_round}  # fmt: skip


def _report(short: str) -> dict[str, Any]:
    spec = RUNS[short]
    success = [{"round_number": n, "value": v} for n, v in enumerate(spec["success"], 1)]
    metrics = {
        "round_success": _entry("round_success", sum(spec["success"]) / 2, success),
        "task_done": _entry("task_done", spec["done"], []),
    }
    if spec["chars"] is not None:
        score, rounds = spec["chars"]
        per_round = [{"round_number": n, "value": v} for n, v in enumerate(rounds, 1)]
        metrics["mean_chars_per_round"] = _entry("mean_chars_per_round", score, per_round)
    if short == "r1":
        metrics["team_split"] = _entry("team_split", 0.75, [
            {"round_number": 1, "value": 1, "team_id": "a"},
            {"round_number": 1, "value": 0, "team_id": "b"},
            {"round_number": 2, "value": 1, "team_id": "a"},
        ])  # fmt: skip
    return {"report_version": 1, "metrics": metrics}


def build(root: Path) -> Cohort:
    """Play the five runs under ``root`` and write their reports; return the cohort."""
    ids = {}
    for i, (short, spec) in enumerate(RUNS.items()):
        overrides = [f"seed={spec['seed']}", f"channel_noise_level={spec['noise']}"]
        if spec["budget"] is not None:
            overrides.append(f"round_budget_chars={spec['budget']}")
        folder = play_run(str(root), rounds=2, overrides=tuple(overrides),
                          now_unix=1_790_000_000 + i)  # fmt: skip
        path = Path(folder.url)
        if spec["budget"] is None:
            config = json.loads((path / "config.json").read_text())
            del config["round_budget_chars"]
            (path / "config.json").write_text(json.dumps(config))
        (path / "veyru_report.json").write_text(json.dumps(_report(short)))
        ids[short] = folder.run_id
    return Cohort(str(root), ids)


SURFACE_FLAGS = ["--grain", "round", "--by", "round_budget_chars", "--measure",
                 "round_success:rate", "--measure", "mean_chars_per_round", "--compare",
                 "round_budget_chars=300,600", "--seed", "7", "--resamples", "10"]  # fmt: skip
"""The query every surface is asked in its own words, answered by ``glossogen analyze``."""

SURFACE_CELLS = [
    ("300", "round_success:rate", 0.75, 4, 0),
    ("300", "mean_chars_per_round:mean", 15.0, 4, 0),
    ("600", "round_success:rate", 0.25, 4, 0),
    ("600", "mean_chars_per_round:mean", 30.0, 2, 2),
    (None, "round_success:rate", 1.0, 2, 0),
    (None, "mean_chars_per_round:mean", 50.0, 2, 0),
]
"""Its cells, worked out by hand from the table above: (budget, measure, value, n, missing)."""


def cells(result: dict[str, Any]) -> list[tuple[str | None, str, float | None, int, int]]:
    """The cells of a JSON result of :data:`SURFACE_FLAGS` as :data:`SURFACE_CELLS` lists them."""
    return [(g["keys"]["round_budget_chars"], c["measure"], c["value"], c["n"], c["missing"])
            for g in result["groups"] for c in g["cells"]]  # fmt: skip


def analyze(*args: str) -> int:
    """Run ``glossogen analyze ARGS`` in this process; return its exit code."""
    try:
        main(["analyze", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def analyze_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    """What ``glossogen analyze ARGS --json`` prints, parsed (the test fails on a refusal)."""
    try:
        main(["analyze", *args, "--json"])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)
