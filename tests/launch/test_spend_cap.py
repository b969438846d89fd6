"""``--spend-cap-usd``: refused at launch when the dry-run estimate passes it or a model has no
price; enforced while playing over real HTTP (no new model call once the logged spend reached
the cap; the run ends ``incomplete`` with the reason, exit 20, its log sealed); recorded with
the run's limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import (
    JudgeCalled,
    LlmResponseReceived,
    RoundResultRecorded,
    SimulationEnded,
    SimulationStarted,
    read_events,
)
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply

# claude-sonnet-4-6 costs $3 per million input and $15 per million output tokens, so one call
# of 1,000,000 input and 1,000 output tokens costs $3.015; the dry run assumes 20 requests of
# 4,000 + 200 tokens per agent and round: $0.30 per agent, $0.60 per round of two players.
CALL = StubReply(text="Thinking it over.", input_tokens=1_000_000, output_tokens=1_000)
RUN = ["run", "prisoners_dilemma", "--model", "claude-sonnet-4-6", "--provider", "anthropic",
       "--config", "knobs_default", "round_count=2", "idle_floor_seconds=0.05",
       "postmortem_enabled=false"]  # fmt: skip


@pytest.fixture
def anthropic_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return model_stub


def _exit(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


def test_the_cap_stops_new_calls_and_ends_the_run_incomplete_with_20(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    def answer(req: RecordedRequest) -> StubReply:
        return CALL

    anthropic_stub.responder = answer
    anthropic_stub.hold_until_in_flight = 2  # neither answers before both players have asked
    runs = tmp_path / "runs"
    assert _exit([*RUN, "--runs-dir", str(runs), "--spend-cap-usd", "2"]) == 20
    (log,) = runs.glob("prisoners_dilemma/*/prisoners_dilemma.jsonl")
    events = read_events(str(log)).events
    # Both players' first requests were in flight together; the first answer reached the cap,
    # so neither player sent another: two requests, two priced answers, $6.03.
    assert len(anthropic_stub.requests) == 2
    costs = [e.cost_usd for e in events if isinstance(e, LlmResponseReceived)]
    assert costs == [3.015, 3.015]
    (started,) = [e for e in events if isinstance(e, SimulationStarted)]
    assert started.spend_cap_usd == 2.0
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    reason = "spend cap reached: $6.030000 logged of --spend-cap-usd 2 after round 1 of 2"
    assert (ended.status, ended.error, ended.rounds_played) == ("incomplete", reason, 1)
    assert ended.total_cost_usd == pytest.approx(6.03, abs=1e-9)
    assert capsys.readouterr().err.endswith(f"glossogen: error: run incomplete: {reason}\n")


def test_a_cap_below_the_dry_run_estimate_is_refused_before_anything_is_written(
    anthropic_stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert _exit([*RUN, "--runs-dir", str(runs), "--spend-cap-usd", "1.1"]) == 65
    assert capsys.readouterr().err == (
        "glossogen: error: --spend-cap-usd 1.1: the dry-run estimate of the 2 rounds to play "
        "is $1.200000 ($0.600000 per round), above the cap\n"
    )
    assert not runs.exists()
    assert anthropic_stub.requests == []


def test_a_cap_with_a_model_the_price_catalogue_lacks_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "house-model-7", "--provider", "openai",
            "--config", "knobs_default", "--runs-dir", str(runs), "--spend-cap-usd", "5"]  # fmt: skip
    assert _exit(argv) == 65
    assert capsys.readouterr().err == (
        "glossogen: error: --spend-cap-usd 5: openai:house-model-7 is not in the price "
        "catalogue, so its spend cannot be counted against the cap\n"
    )
    assert not runs.exists()


@pytest.mark.parametrize("raw", ["0", "-2", "inf", "nan"])
def test_a_cap_that_is_not_a_positive_amount_is_a_usage_error(
    raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert _exit([*RUN, "--runs-dir", str(runs), f"--spend-cap-usd={raw}"]) == 64
    shown = f"{float(raw):g}"
    assert capsys.readouterr().err == (
        f"glossogen: error: --spend-cap-usd must be a number of USD above 0, got {shown}\n"
    )
    assert not runs.exists()


def test_the_dry_run_estimate_and_the_cap_of_a_scripted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Scripted seats cost nothing: any cap passes the launch check, and is recorded.
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--config", "knobs_default", "--runs-dir", str(runs), "--spend-cap-usd", "0.01",
            "--dry-run"]  # fmt: skip
    assert _exit(argv) == 0
    assert not runs.exists()


def test_the_cap_refuses_the_in_run_judges_calls_as_it_does_the_agents(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # veyru's field observer on gpt-4o-mini over the stub (the engineer scripted, free), the
    # judge on gpt-4o-mini too. The observer's first answer, 1,000,000 input and 1,000 output
    # tokens ($0.1506), calls apply_treatment and passes the $0.10 cap: the treatment's ruling
    # is a judge call past the cap, refused like the agents' next calls. The dry run estimates
    # $0.01656 per round (20 observer requests and 3 rulings of 4,000 + 200 tokens): under it.
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")

    def answer(req: RecordedRequest) -> StubReply:
        if "final_result" in req.tool_names:  # the judge
            ruling = {"success": True, "reason": "the action follows the procedure"}
            return StubReply(tool_calls=[("final_result", ruling)])
        treat = ("apply_treatment", {"action": "cool the core slowly"})
        return StubReply(tool_calls=[treat], input_tokens=1_000_000, output_tokens=1_000)

    model_stub.responder = answer
    runs = tmp_path / "runs"
    argv = ["run", "veyru", "--model", "scripted", "--provider", "scripted", "--config",
            "knobs_default", "round_count=2", "postmortem_enabled=false",
            "postmortem_after_swap=false", "agents.field_observer.model=gpt-4o-mini",
            "agents.field_observer.provider=openai", "judge_provider=openai",
            "judge_model=gpt-4o-mini", "--runs-dir", str(runs), "--spend-cap-usd", "0.1"]  # fmt: skip
    assert _exit(argv) == 20
    (log,) = runs.glob("veyru/*/veyru.jsonl")
    events = read_events(str(log)).events
    # One request, the observer's; the treatment it called was never put to the judge.
    assert [r.tool_names[:1] != ["final_result"] for r in model_stub.requests] == [True]
    priced = [(e.agent_id, e.cost_usd) for e in events if isinstance(e, LlmResponseReceived)]
    assert [(a, c) for a, c in priced if c] == [("field_observer", 0.1506)]
    assert [e for e in events if isinstance(e, JudgeCalled)] == []
    (verdict,) = [e for e in events if isinstance(e, RoundResultRecorded)]
    assert (verdict.round_number, verdict.void, verdict.success) == (1, True, False)
    assert verdict.reason == (
        "void (spend_cap): wrong treatment at stage 1 of 3 "
        "(no ruling: the run's spend cap was reached)"
    )
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    reason = "spend cap reached: $0.150600 logged of --spend-cap-usd 0.1 after round 1 of 2"
    assert (ended.status, ended.error, ended.rounds_played) == ("incomplete", reason, 1)
    assert ended.total_cost_usd == pytest.approx(0.1506, abs=1e-12)
    assert capsys.readouterr().err.endswith(f"glossogen: error: run incomplete: {reason}\n")
