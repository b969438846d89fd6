"""A config written before ``agent_model_settings`` existed spells the cap ``agent_max_tokens``.

It is read as ``agent_model_settings.max_tokens`` wherever the export reads a run's config: in
``config.json``, and in the log's ``simulation_started`` for a folder without one. So the knob
column and the ``--knob`` filter treat old and new runs alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.export import build_frames, select_runs
from tests.fixtures.played_runs import play_run

SCENARIO = "prisoners_dilemma"


def _legacy(config: dict) -> dict:
    config = {k: v for k, v in config.items() if k != "agent_model_settings"}
    return {**config, "agent_max_tokens": 2048}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Three runs: legacy ``config.json``, legacy log config (no ``config.json``), current."""
    root = tmp_path_factory.mktemp("runs")
    in_file, in_log, current = (Path(play_run(str(root), SCENARIO, rounds=1).url) for _ in range(3))
    config = in_file / "config.json"
    config.write_text(json.dumps(_legacy(json.loads(config.read_text()))))
    (in_log / "config.json").unlink()
    log = in_log / f"{SCENARIO}.jsonl"
    first, *rest = log.read_text().splitlines(keepends=True)
    started = json.loads(first)
    started["scenario_config"] = _legacy(started["scenario_config"])
    log.write_text(json.dumps(started) + "\n" + "".join(rest))
    names = {"in_file": in_file.name, "in_log": in_log.name, "current": current.name}
    return root, {key: f"{SCENARIO}/{name}" for key, name in names.items()}


def test_the_legacy_cap_exports_as_agent_model_settings_max_tokens(
    runs: tuple[Path, dict[str, str]],
) -> None:
    root, ids = runs
    records = select_runs(str(root), {"kind": "filters"}).records
    table = build_frames(records, ["run_level"])["run_level"]
    assert "knob.agent_max_tokens" not in table.columns
    caps = dict(zip(table["run_id"], table["knob.agent_model_settings.max_tokens"], strict=True))
    assert caps == {ids["in_file"]: 2048, ids["in_log"]: 2048, ids["current"]: 16384}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("agent_model_settings.max_tokens=2048", {"in_file", "in_log"}),
        ("agent_model_settings.max_tokens=16384", {"current"}),
        ("agent_model_settings.max_tokens<4096", {"in_file", "in_log"}),
    ],
)
def test_the_knob_filter_reads_the_legacy_cap_as_max_tokens(
    runs: tuple[Path, dict[str, str]], condition: str, expected: set[str]
) -> None:
    root, ids = runs
    selected = select_runs(str(root), {"kind": "filters", "knob": [condition]}).records
    assert {r.run_id for r in selected} == {ids[key] for key in expected}
