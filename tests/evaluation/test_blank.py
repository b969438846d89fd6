"""Blank stays blank: a metric that does not apply, or has nothing to measure, writes nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from glossogen.evaluation import plan_evaluation, score_all, write_outcomes
from tests.evaluation._logs import RunLog


def _report(run_dir: Path, metrics: str = "all") -> dict:
    plan = plan_evaluation(str(run_dir), metrics)
    write_outcomes(plan, asyncio.run(score_all(plan)))
    return json.loads((run_dir / f"{run_dir.parent.name}_report.json").read_text())


def test_budget_utilisation_is_blank_without_a_budget(tmp_path: Path) -> None:
    log = RunLog(
        tmp_path, scenario="prisoners_dilemma", agents=(("player_a", "team"), ("player_b", "team"))
    )
    log.round(1).say(1, "player_a", "cooperate?", channel="table").verdict(1, True).end()
    run_dir = log.write()
    plan = plan_evaluation(str(run_dir), "budget_utilisation,mean_chars_per_round")
    assert [m.name for m in plan.metrics] == ["mean_chars_per_round"]
    assert plan.blank == [("budget_utilisation", "does not apply: run lacks budget")]
    data = _report(run_dir, "budget_utilisation,mean_chars_per_round")
    assert "budget_utilisation" not in data["metrics"]
    assert data["metrics"]["mean_chars_per_round"]["score"] == 10.0


def test_a_silent_run_leaves_length_metrics_blank_but_counts_zero_failures(tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.round(1).verdict(1, False, "timeout").round(2).verdict(2, False, "timeout").end()
    data = _report(log.write())
    for name in (
        "mean_chars_per_round",
        "mean_chars_per_message",
        "character_entropy_bits",
        "gzip_compression_ratio",
        "vocabulary_growth",
    ):
        assert name not in data["metrics"], name
    assert data["metrics"]["agent_cycle_failures"]["score"] == 0.0  # a real zero
    assert data["metrics"]["messages_per_round"]["score"] == 0.0  # silence counted, as 0
    assert data["metrics"]["budget_utilisation"]["score"] == 0.0
    assert data["metrics"]["round_success"]["score"] == 0.0


def test_an_uncosted_call_leaves_cost_blank_never_zero(tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, "field_observer", "hi").llm(1, "field_observer", None).verdict(1, True)
    data = _report(log.end().write(), "cost_per_round_usd,round_success")
    assert "cost_per_round_usd" not in data["metrics"]
    assert data["metrics"]["round_success"]["score"] == 1.0


def test_a_metric_blank_now_loses_its_old_entry(tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, "field_observer", "hi").llm(1, "field_observer", None).verdict(1, True)
    run_dir = log.end().write()
    first = _report(run_dir, "round_success")
    stale = dict(first["metrics"]["round_success"], name="cost_per_round_usd", score=0.0)
    first["metrics"]["cost_per_round_usd"] = stale  # a 0 that does not describe this log
    (run_dir / "veyru_report.json").write_text(json.dumps(first))
    again = _report(run_dir, "cost_per_round_usd")
    assert set(again["metrics"]) == {"round_success"}


def test_judged_and_probe_metrics_stay_blank_with_nothing_to_judge(
    tmp_path: Path, model_stub, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    log = RunLog(tmp_path)
    log.round(1).verdict(1, False, "timeout").end()  # nothing said, no agent history logged
    run_dir = log.write()
    plan = plan_evaluation(
        str(run_dir), "language_repetition,shorthand_codes,protocol_probe", "gpt-4o-mini", "openai"
    )
    assert plan.blank == [("protocol_probe", "does not apply: run lacks agent_history")]
    write_outcomes(plan, asyncio.run(score_all(plan)))
    data = json.loads((run_dir / "veyru_report.json").read_text())
    assert data["metrics"] == {}
    assert data["evaluation_cost"]["judge_usd"] == 0.0
    assert model_stub.requests == []  # nothing was sent to the judge


def test_probe_is_blank_when_no_team_has_two_agents(tmp_path: Path) -> None:
    log = RunLog(tmp_path, agents=(("field_observer", "red"), ("stabilization_engineer", "blue")))
    log.round(1).say(1, "field_observer", "hi").verdict(1, True, team="red")
    log.history(1, "field_observer", []).end()
    plan = plan_evaluation(str(log.write()), "protocol_probe")
    outcomes = asyncio.run(score_all(plan))
    assert [(o.name, o.blank) for o in outcomes] == [
        ("protocol_probe", "no team has two agents to compare")
    ]
