"""Every deterministic metric on a small hand-built log, expected values worked out by hand."""

from __future__ import annotations

import asyncio
import gzip
import json
import math
from pathlib import Path

import pytest

from glossogen.evaluation import (
    Report,
    character_entropy_bits,
    plan_evaluation,
    score_all,
    write_outcomes,
)
from tests.evaluation._logs import RunLog

FO, SE = "field_observer", "stabilization_engineer"
TEXTS = ["aab", "abcd", "aaaa", "abab"]  # rounds 1 and 3; round 2 is silent


def _base(tmp_path: Path) -> RunLog:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "aab", budget_chars=150).say(1, SE, "abcd", budget_chars=150)
    log.llm(1, FO, 0.01).llm(1, SE, 0.02).verdict(1, True)
    log.say(1, FO, "we talk a lot here, free of charge", channel="postmortem", phase="postmortem")
    log.complete(1)
    log.round(2).verdict(2, False, "budget exceeded").failure(2, FO).llm(2, FO, 0.005, "postmortem")
    log.complete(2)
    log.round(3).say(3, FO, "aaaa", budget_chars=150)
    log.say(3, SE, "abab", delivered="ab#b", budget_chars=150)  # noise: the composed text counts
    log.failure(3, SE).failure(3, SE).failure(3, "judge").judged(3, 0.003).verdict(3, True)
    log.complete(3)
    return log.end()


def _evaluate(run_dir: Path, metrics: str = "all") -> Report:
    plan = plan_evaluation(str(run_dir), metrics)
    return write_outcomes(plan, asyncio.run(score_all(plan)))


@pytest.fixture
def report(tmp_path: Path) -> Report:
    return _evaluate(_base(tmp_path).write())


def _per_round(report: Report, name: str) -> list[tuple[int, float]]:
    return [(o.round_number, round(o.value, 6)) for o in report.metrics[name].per_round]


def _per_agent(report: Report, name: str) -> dict[str, float]:
    return {o.agent_id: round(o.value, 6) for o in report.metrics[name].per_agent}


def test_entropy_of_aab_is_0_9183_bits() -> None:
    # p(a) = 2/3, p(b) = 1/3: -(2/3 log2 2/3 + 1/3 log2 1/3)
    assert round(character_entropy_bits("aab"), 4) == 0.9183
    assert character_entropy_bits("abcd") == 2.0
    assert character_entropy_bits("aaaa") == 0.0
    assert character_entropy_bits("abab") == 1.0


def test_round_success_counts_judged_rounds(report: Report) -> None:
    entry = report.metrics["round_success"]
    assert (entry.score, entry.rounds, entry.summary) == (2 / 3, 3, "2 of 3 rounds won")
    assert [(o.round_number, o.value, o.team_id, o.note) for o in entry.per_round] == [
        (1, 1.0, "team", "won: stabilized"),
        (2, 0.0, "team", "lost: budget exceeded"),
        (3, 1.0, "team", "won: stabilized"),
    ]


def test_mean_chars_per_round_skips_silent_rounds(report: Report) -> None:
    entry = report.metrics["mean_chars_per_round"]
    # round 1: 3 + 4 = 7; round 3: 4 + 4 = 8; round 2 had no message and is left out
    assert (entry.score, entry.rounds) == (7.5, 2)
    assert _per_round(report, "mean_chars_per_round") == [(1, 7.0), (3, 8.0)]
    assert _per_agent(report, "mean_chars_per_round") == {FO: 3.5, SE: 4.0}


def test_mean_chars_per_message_is_flattened(report: Report) -> None:
    entry = report.metrics["mean_chars_per_message"]
    assert (entry.score, entry.rounds) == (15 / 4, 2)  # the postmortem message is not counted
    assert _per_round(report, "mean_chars_per_message") == [(1, 3.5), (3, 4.0)]


def test_messages_per_round_counts_silence(report: Report) -> None:
    entry = report.metrics["messages_per_round"]
    assert (round(entry.score, 6), entry.rounds) == (round(4 / 3, 6), 3)
    assert _per_round(report, "messages_per_round") == [(1, 2.0), (2, 0.0), (3, 2.0)]


def test_character_entropy_is_the_mean_of_per_message_entropies(report: Report) -> None:
    aab = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    expected = (aab + 2.0 + 0.0 + 1.0) / 4
    entry = report.metrics["character_entropy_bits"]
    assert entry.score == pytest.approx(expected, abs=1e-12)
    assert round(entry.score, 4) == 0.9796
    pooled = character_entropy_bits("".join(TEXTS))
    assert round(pooled, 4) != round(entry.score, 4)  # not the entropy of all text pooled
    assert _per_round(report, "character_entropy_bits") == [
        (1, round((aab + 2.0) / 2, 6)),
        (3, 0.5),
    ]


def test_gzip_ratio_is_the_mean_of_per_message_ratios(report: Report) -> None:
    def ratio(t: str) -> float:
        return len(gzip.compress(t.encode(), compresslevel=9, mtime=0)) / len(t.encode())

    entry = report.metrics["gzip_compression_ratio"]
    assert entry.score == sum(ratio(t) for t in TEXTS) / 4
    assert entry.score == 6.416666666666667  # 3-4 byte messages: gzip's 18-byte frame dominates
    assert entry.score != pytest.approx(ratio("".join(TEXTS)))


def test_budget_utilisation_per_round(report: Report) -> None:
    entry = report.metrics["budget_utilisation"]
    assert entry.score == pytest.approx((7 / 150 + 0 + 8 / 150) / 3, abs=1e-12)
    assert entry.rounds == 3
    assert _per_round(report, "budget_utilisation") == [
        (1, round(7 / 150, 6)),
        (2, 0.0),
        (3, round(8 / 150, 6)),
    ]
    assert entry.per_round[0].note == "7 of 150 characters"


def test_vocabulary_growth_counts_first_uses(report: Report) -> None:
    entry = report.metrics["vocabulary_growth"]
    assert (entry.score, entry.rounds) == (4 / 3, 3)
    assert _per_round(report, "vocabulary_growth") == [(1, 2.0), (2, 0.0), (3, 2.0)]
    assert _per_agent(report, "vocabulary_growth") == {FO: 2.0, SE: 2.0}


def test_cost_per_round_sums_agents_and_in_run_judge(report: Report) -> None:
    entry = report.metrics["cost_per_round_usd"]
    assert entry.score == pytest.approx((0.03 + 0.005 + 0.003) / 3, abs=1e-15)
    assert _per_round(report, "cost_per_round_usd") == [(1, 0.03), (2, 0.005), (3, 0.003)]
    assert _per_agent(report, "cost_per_round_usd") == {
        FO: round(0.015 / 3, 6),
        SE: round(0.02 / 3, 6),
    }


def test_agent_cycle_failures_leave_the_judge_out(report: Report) -> None:
    entry = report.metrics["agent_cycle_failures"]
    assert (entry.score, entry.rounds, entry.summary) == (
        3.0,
        3,
        "3 failed agent cycles over 3 rounds",
    )
    assert _per_round(report, "agent_cycle_failures") == [(1, 0.0), (2, 1.0), (3, 2.0)]
    assert _per_agent(report, "agent_cycle_failures") == {FO: 1.0, SE: 2.0}


def test_report_file_follows_the_contract(report: Report, tmp_path: Path) -> None:
    path = tmp_path / "veyru" / "1700000000" / "veyru_report.json"
    data = json.loads(path.read_text())
    assert data["report_version"] == 1
    assert data["run_id"] == "veyru/1700000000"
    assert data["scenario"] == "veyru"
    assert len(data["log_sha256"]) == 64
    assert data["evaluation_cost"] == {
        "judge_usd": 0.0, "probe_usd": 0.0, "total_usd": 0.0, "estimated_cost_usd": 0.0,
    }  # fmt: skip
    entry = data["metrics"]["round_success"]
    assert set(entry) == {
        "name", "kind", "version", "unit", "status", "score", "summary", "rounds", "per_round",
        "per_agent", "replicas", "agreement", "judge", "cost_usd", "sidecar", "error",
    }  # fmt: skip
    assert (entry["kind"], entry["status"], entry["judge"], entry["cost_usd"]) == (
        "deterministic",
        "ok",
        None,
        0.0,
    )
    # without a judge, --metrics all leaves the judged metrics out; the probe needs histories
    assert not {"language_repetition", "shorthand_codes", "protocol_probe"} & set(data["metrics"])


def test_two_teams_win_a_round_only_together(tmp_path: Path) -> None:
    log = RunLog(tmp_path, agents=(("a1", "red"), ("a2", "red"), ("b1", "blue")))
    log.round(1).verdict(1, True, team="red").verdict(1, True, team="blue")
    log.round(2).verdict(2, True, team="red").verdict(2, False, team="blue")
    log.round(3).verdict(3, False, "nobody could play", void=True)
    report = _evaluate(log.end().write(), "round_success")
    entry = report.metrics["round_success"]
    assert (entry.score, entry.rounds) == (0.5, 2)
    assert entry.summary == "1 of 2 rounds won (1 void round left out)"
    assert [(o.round_number, o.team_id, o.value) for o in entry.per_round] == [
        (1, "red", 1.0), (1, "blue", 1.0), (2, "red", 1.0), (2, "blue", 0.0),
    ]  # fmt: skip


def test_deterministic_metrics_are_scored_without_giving_the_event_loop_away(
    tmp_path: Path,
) -> None:
    """A cohort's concurrent batches cannot interleave a run's deterministic scoring.

    ``score_all`` over deterministic metrics alone completes on its first step (driven by hand,
    no event loop), with every outcome in plan order: another batch's run cannot start while
    this run's events are live and the collector is paused (``_cohort.evaluate_batch``).
    """
    log = RunLog(tmp_path)
    log.round(1).say(1, "field_observer", "frost at edges").verdict(1, True).end()
    plan = plan_evaluation(str(log.write()), "mean_chars_per_message,messages_per_round")
    step = score_all(plan)
    with pytest.raises(StopIteration) as done:
        step.send(None)
    outcomes = done.value.value
    assert [o.name for o in outcomes] == ["mean_chars_per_message", "messages_per_round"]
    assert [o.result.score for o in outcomes] == [14.0, 1.0]
