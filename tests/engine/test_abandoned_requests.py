"""Requests a phase end abandons over real HTTP: finished in the background and priced, or
logged with their cost unknown, so the run's total is never a quiet undercount."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.eventlog import (
    Event,
    LlmResponseReceived,
    ModelRequestAbandoned,
    RoundEnded,
    SimulationEnded,
    read_events,
)
from glossogen.launch import (
    VIRTUAL_CLOCK_SETTING,
    RunRequest,
    RunResult,
    claim_run,
    open_session,
    plan_run,
    price_spend,
)
from glossogen.pricing import price_call
from tests.fixtures.model_stubs import StubModelServer, StubReply
from tests.providers.ungated import play_ungated

MODEL = "claude-sonnet-4-6"
OVERRIDES = [
    "round_count=1",
    "idle_floor_seconds=0.05",
    "postmortem_enabled=false",
    "max_round_duration_seconds=1",
]


def _request(tmp_path: Path) -> RunRequest:
    return RunRequest(
        scenario="prisoners_dilemma",
        model=MODEL,
        provider="anthropic",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=OVERRIDES,
    )


@pytest.fixture
def slow_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    # On the real clock: what is tested is a request still in flight when the phase's real
    # seconds run out (the game clock would wait for the answer, so nothing would be cut off).
    monkeypatch.delenv(VIRTUAL_CLOCK_SETTING)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return model_stub


def _abandoned(events: list[Event]) -> list[ModelRequestAbandoned]:
    return [e for e in events if isinstance(e, ModelRequestAbandoned)]


def test_a_request_answering_after_the_phase_end_is_priced_from_its_usage(
    prefect_api: str, slow_stub: StubModelServer, tmp_path: Path
) -> None:
    # Each answer takes 3 s; the phase lasts 1 s: both first requests are cut off.
    slow_stub.responder = lambda req: StubReply(
        text="thinking...", input_tokens=1200, output_tokens=80, latency=3.0
    )
    result = play_ungated(_request(tmp_path))
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    assert [e.trigger for e in events if isinstance(e, RoundEnded)] == ["timeout"]
    assert not [e for e in events if isinstance(e, LlmResponseReceived)]
    unit = price_call("anthropic", MODEL, input_tokens=1200, output_tokens=80)
    assert unit == 0.0048  # genai-prices: $3 per million in, $15 per million out
    assert sorted(
        (e.agent_id, e.sent_in_round, e.answered, e.input_tokens, e.output_tokens)
        for e in _abandoned(events)
    ) == [("player_a", 1, True, 1200, 80), ("player_b", 1, True, 1200, 80)]
    assert [e.cost_usd for e in _abandoned(events)] == [unit] * 2
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.total_cost_usd == 2 * unit  # $0.0096
    assert [(c.agent_id, c.requests) for c in ended.agent_costs] == [
        ("player_a", 1),
        ("player_b", 1),
    ]
    assert ended.cost_note is None
    assert len(slow_stub.requests) == 2


def test_a_request_with_no_answer_by_the_runs_end_makes_the_total_unknown(
    slow_stub: StubModelServer, tmp_path: Path
) -> None:
    slow_stub.responder = lambda req: StubReply(text="...", latency=20.0)

    async def play() -> tuple[str, RunResult]:
        plan = plan_run(_request(tmp_path))
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        await session.play_round(1)
        await session.settle_requests(0.2)  # far shorter than the answer takes
        spend = price_spend(folder)
        return folder.log_url, session.finish(spend, "completed")

    log_url, result = asyncio.run(play())
    events = read_events(log_url).events
    assert sorted((e.agent_id, e.answered, e.cost_usd) for e in _abandoned(events)) == [
        ("player_a", False, None),
        ("player_b", False, None),
    ]
    assert {e.error for e in _abandoned(events)} == {
        "no answer: the run ended and it had not answered 0.2 s later; its cost is unknown"
    }
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    note = "2 model request(s) abandoned at a phase end never answered: what they cost is unknown"
    assert (ended.total_cost_usd, ended.cost_note) == (None, note)
    assert (result.total_cost_usd, result.cost_note) == (None, note)
