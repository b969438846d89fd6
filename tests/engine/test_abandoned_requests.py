"""Requests a phase end abandons over real HTTP: finished in the background and priced, or
logged with their cost unknown, so the run's total is never a quiet undercount.

Played on the virtual clock: the stub holds both players' first requests, the test ends the
1 s phase by moving the run's game clock while they are in flight, then answers or not.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from glossogen.engine import VirtualClock
from glossogen.eventlog import (
    Event,
    LlmResponseReceived,
    ModelRequestAbandoned,
    RoundEnded,
    SimulationEnded,
    read_events,
)
from glossogen.launch import (
    RunRequest,
    RunResult,
    RunSession,
    claim_run,
    open_session,
    plan_run,
    price_spend,
)
from glossogen.pricing import price_call
from tests.fixtures.model_stubs import StubModelServer, StubReply
from tests.fixtures.polling import wait_until

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
def held_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    """The stub holds every request until the test releases it (on the virtual clock)."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.hold_until_in_flight = math.inf
    return model_stub


def _abandoned(events: list[Event]) -> list[ModelRequestAbandoned]:
    return [e for e in events if isinstance(e, ModelRequestAbandoned)]


async def _round_cut_off_in_flight(stub: StubModelServer, session: RunSession) -> None:
    """Play round 1 and end its 1 s phase while both players' first requests are held.

    Game time does not move while a call is in flight, so the test moves it through the run's
    own virtual clock once both requests are at the stub: the phase end then cuts them off.
    """
    clock = session.engine.clock
    assert isinstance(clock, VirtualClock)
    playing = asyncio.create_task(session.play_round(1))
    # A bounded wait on the run's real HTTP requests reaching the stub (in another thread).
    await asyncio.to_thread(stub.wait_in_flight, 2)
    clock.advance(1.0)  # max_round_duration_seconds
    await playing


def test_a_request_answering_after_the_phase_end_is_priced_from_its_usage(
    held_stub: StubModelServer, tmp_path: Path
) -> None:
    held_stub.responder = lambda req: StubReply(
        text="thinking...", input_tokens=1200, output_tokens=80
    )

    async def play() -> tuple[str, RunResult]:
        plan = plan_run(_request(tmp_path))
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        await _round_cut_off_in_flight(held_stub, session)
        held_stub.release()  # both answer now, after the phase that sent them ended
        await session.settle_requests()
        return folder.log_url, session.finish(price_spend(folder), "completed")

    log_url, result = asyncio.run(play())
    events = read_events(log_url).events
    assert [(e.trigger, e.elapsed_seconds) for e in events if isinstance(e, RoundEnded)] == [
        ("timeout", 1.0)
    ]
    assert [e for e in events if isinstance(e, LlmResponseReceived)] == []
    unit = price_call("anthropic", MODEL, input_tokens=1200, output_tokens=80)
    assert unit == 0.0048  # genai-prices: $3 per million in, $15 per million out
    assert sorted(
        (e.agent_id, e.sent_in_round, e.answered, e.input_tokens, e.output_tokens, e.cost_usd)
        for e in _abandoned(events)
    ) == [("player_a", 1, True, 1200, 80, unit), ("player_b", 1, True, 1200, 80, unit)]
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.total_cost_usd == 2 * unit  # $0.0096
    assert [(c.agent_id, c.requests) for c in ended.agent_costs] == [
        ("player_a", 1),
        ("player_b", 1),
    ]
    assert (ended.cost_note, result.total_cost_usd) == (None, 2 * unit)
    assert len(held_stub.requests) == 2


def test_a_request_with_no_answer_by_the_runs_end_makes_the_total_unknown(
    held_stub: StubModelServer, tmp_path: Path
) -> None:
    held_stub.responder = lambda req: StubReply(text="...")

    async def play() -> tuple[str, RunResult]:
        plan = plan_run(_request(tmp_path))
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        await _round_cut_off_in_flight(held_stub, session)
        await session.settle_requests(0.2)  # still held at the stub: never released
        return folder.log_url, session.finish(price_spend(folder), "completed")

    log_url, result = asyncio.run(play())
    events = read_events(log_url).events
    error = "no answer: the run ended and it had not answered 0.2 s later; its cost is unknown"
    assert sorted((e.agent_id, e.answered, e.cost_usd, e.error) for e in _abandoned(events)) == [
        ("player_a", False, None, error),
        ("player_b", False, None, error),
    ]
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    note = "2 model request(s) abandoned at a phase end never answered: what they cost is unknown"
    assert (ended.total_cost_usd, ended.cost_note) == (None, note)
    assert (result.total_cost_usd, result.cost_note) == (None, note)
    # The given-up calls were cancelled: the client left the stub's held connections.
    wait_until(lambda: held_stub.in_flight == 0, "the held requests' clients to leave", 10)
