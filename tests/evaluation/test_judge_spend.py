"""Judge spend over real HTTP: every answered judge call is paid, usable or not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from glossogen.evaluation import plan_evaluation, score_all, write_outcomes
from glossogen.eventlog import (
    AgentRunCycleFailed,
    JudgeCalled,
    RoundResultRecorded,
    SimulationEnded,
    read_events,
)
from glossogen.launch import RunRequest
from glossogen.pricing import price_call
from tests.evaluation._logs import RunLog
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated

FO, SE = "field_observer", "stabilization_engineer"
JUDGE_MODEL = "gpt-4o-mini"


def _unit() -> float:
    unit = price_call("openai", JUDGE_MODEL, input_tokens=1000, output_tokens=100)
    assert unit == 0.00021  # genai-prices: $0.15 per million in, $0.60 per million out
    return unit


def _unusable(req: RecordedRequest) -> StubReply:
    """Call the output tool with arguments its schema rejects; 1,000 in and 100 out, billed."""
    bad = {"messages": "banana", "codes": 7, "success": "perhaps", "reason": ["x"]}
    return StubReply(tool_calls=[(req.tool_names[0], bad)], input_tokens=1000, output_tokens=100)


@pytest.fixture
def openai_judge(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")
    return model_stub


def test_evaluation_judge_answers_failing_validation_are_still_counted(
    openai_judge: StubModelServer, tmp_path: Path
) -> None:
    openai_judge.responder = _unusable
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "aab aab").say(1, SE, "brace jade").verdict(1, True)
    log.round(2).say(2, FO, "L4 L4").verdict(2, True)
    run_dir = log.end().write()
    plan = plan_evaluation(str(run_dir), "language_repetition", JUDGE_MODEL, "openai", [],
                           judge_replicas=2)  # fmt: skip
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    entry = report.metrics["language_repetition"]
    assert entry.status == "failed"
    # 2 rounds x 2 replicas, each asked twice (one output retry): 8 answered, billed calls.
    assert len(openai_judge.requests) == 8
    assert entry.cost_usd == 8 * _unit()  # $0.00168
    assert report.evaluation_cost.judge_usd == 8 * _unit()
    assert report.evaluation_cost.total_usd == 8 * _unit()


def test_in_run_judge_answers_failing_validation_are_counted_in_the_runs_spend(
    prefect_api: str, openai_judge: StubModelServer, tmp_path: Path
) -> None:
    openai_judge.responder = _unusable
    request = RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(tmp_path),
        config="knobs_default",
        overrides=[
            "round_count=1",
            "postmortem_enabled=false",
            "postmortem_after_swap=false",
            "judge_provider=openai",
            f"judge_model={JUDGE_MODEL}",
        ],
    )
    result = play_ungated(request)
    events = read_events(f"{result.run_url}/veyru.jsonl").events
    failed = [e for e in events if isinstance(e, AgentRunCycleFailed)]
    assert [(e.agent_id, e.attempts) for e in failed] == [("judge", 1), ("judge", 2), ("judge", 3)]
    # Each attempt asked twice (one output retry), both answers billed: 2,000 in, 200 out.
    assert [(e.input_tokens, e.output_tokens) for e in failed] == [(2000, 200)] * 3
    for e in failed:
        assert e.cost_usd == 2 * _unit()  # $0.00042
    assert len(openai_judge.requests) == 6
    assert not [e for e in events if isinstance(e, JudgeCalled)]
    (verdict,) = [e for e in events if isinstance(e, RoundResultRecorded)]
    assert (verdict.void, verdict.reason) == (
        True,
        "void (judge_failed): wrong treatment at stage 1 of 3 "
        "(judge unavailable (invalid_tool_arguments); round void)",
    )
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.judge_cost_usd == 6 * _unit()  # $0.00126
    assert result.status == "error"


def _empty_answer(req: RecordedRequest) -> StubReply:
    """A well-formed answer that rates nothing (``messages: []``), finds no code; billed."""
    empty = {"messages": [], "codes": []}
    return StubReply(tool_calls=[(req.tool_names[0], empty)], input_tokens=1000, output_tokens=100)


def test_a_judge_answer_the_metric_cannot_use_is_not_cached_and_is_still_paid(
    prefect_api: str,
    openai_judge: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from glossogen.cli import main

    openai_judge.responder = _empty_answer
    log = RunLog(tmp_path / "runs")
    log.round(1).say(1, FO, "aab aab").say(1, SE, "brace jade").verdict(1, True)
    log.round(2).say(2, FO, "L4 L4").verdict(2, True)
    run_dir = log.end().write()
    cache = tmp_path / "jc"

    def evaluate(metrics: str) -> tuple[int, list[str], list[str]]:
        with pytest.raises(SystemExit) as done:
            main(["evaluate", "veyru", "--run-dir", str(run_dir), "--metrics", metrics,
                  "--model", JUDGE_MODEL, "--provider", "openai", "--judge-cache", str(cache)])  # fmt: skip
        out, err = capsys.readouterr()
        return int(done.value.code), out.splitlines(), err.splitlines()

    def report_cost() -> float:
        report = json.loads((run_dir / "veyru_report.json").read_text())
        return float(report["metrics"]["language_repetition"]["cost_usd"])

    failed = [
        "glossogen: error: metrics failed: language_repetition (every judge call failed (first: "
        "unusable answer: rates none of messages 1-2 (indexes [])))"
    ]
    both = "language_repetition,shorthand_codes"
    code, out, err = evaluate(both)
    # 2 rounds x 2 metrics, each asked once: the 2 empty ratings cannot be used, the 2 empty
    # code lists can (no code found); all 4 were answered and are paid
    served = openai_judge.served_usd(JUDGE_MODEL, "openai")
    assert served == [_unit()] * 4
    assert code == 1
    assert out[1:] == [
        "shorthand_codes\t0\tshorthand codes per round\t0.00 shorthand codes per round over "
        "2 rounds",
        f"report: {run_dir}/veyru_report.json · evaluation cost $0.000840",  # 4 x $0.00021
    ]
    assert err == [
        "glossogen: note: judge cache: 0 answered from the cache ($0), 4 asked of the judge "
        "(2 answers kept; a failed or unusable answer is not cached)",
        *failed,
    ]
    assert report_cost() == served[0] + served[1]  # the failed metric's 2 answered calls
    assert len(list(cache.rglob("*.json"))) == 2  # shorthand's 2 answers; no unusable one

    # The same again: shorthand is kept, the unusable answers are asked again (not served from
    # the cache as the same failure) and paid again; this evaluation cost what it asked.
    code, out, err = evaluate(both)
    served = openai_judge.served_usd(JUDGE_MODEL, "openai")
    assert served == [_unit()] * 6
    assert code == 1
    assert out[-1] == f"report: {run_dir}/veyru_report.json · evaluation cost $0.000420"
    assert err == [
        "glossogen: note: judge cache: 0 answered from the cache ($0), 2 asked of the judge "
        "(0 answers kept; a failed or unusable answer is not cached)",
        *failed,
    ]
    assert report_cost() == served[4] + served[5]
    assert len(list(cache.rglob("*.json"))) == 2

    # An evaluation that asks nothing (its entry kept up to date) costs $0 now.
    code, out, err = evaluate("shorthand_codes")
    assert len(openai_judge.requests) == 6
    assert code == 0
    assert out[-1] == f"report: {run_dir}/veyru_report.json · evaluation cost $0.000000"
