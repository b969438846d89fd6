"""Requests a phase end abandons over real HTTP: finished in the background and priced, or
logged with their cost unknown, so the run's total is never a quiet undercount.

Played on the virtual clock: the stub holds both players' first requests, the test ends the
1 s phase by moving the run's game clock while they are in flight, then answers or not.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from flows.simulate import play_rounds
from glossogen.engine import VirtualClock
from glossogen.eventlog import (
    Event,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestSent,
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
from glossogen.models import build_model
from glossogen.pricing import price_call
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.fixtures.polling import wait_until
from tests.providers.test_wire_formats import pd_turn

MODEL = "claude-sonnet-4-6"
OVERRIDES = [
    "round_count=1",
    "idle_floor_seconds=0.05",
    "postmortem_enabled=false",
    "max_round_duration_seconds=1",
]


def _request(tmp_path: Path, *overrides: str) -> RunRequest:
    return RunRequest(
        scenario="prisoners_dilemma",
        model=MODEL,
        provider="anthropic",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=[*OVERRIDES, *overrides],
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
    # A wait on the run's real HTTP requests reaching the stub (in another thread).
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
    # Each request was logged as sent before it went out, and its abandonment names it.
    sent = [e for e in events if isinstance(e, ModelRequestSent)]
    assert sorted((e.agent_id, e.call, e.round_number, e.provider) for e in sent) == [
        ("player_a", 1, 1, "anthropic"),
        ("player_b", 1, 1, "anthropic"),
    ]
    assert sorted(e.request_id for e in _abandoned(events)) == sorted(e.request_id for e in sent)
    assert max(map(events.index, sent)) < min(map(events.index, _abandoned(events)))


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
    note = (
        "2 model request(s) never answered (abandoned at a phase end, or in flight when a process "
        "was killed): what they cost is unknown; the calls priced sum to 0.000000 USD, a lower bound"
    )
    assert (ended.total_cost_usd, ended.cost_note) == (None, note)
    assert (result.total_cost_usd, result.cost_note) == (None, note)
    # The given-up calls were cancelled: the client left the stub's held connections.
    wait_until(lambda: held_stub.in_flight == 0, "the held requests' clients to leave")


def _seat(req: RecordedRequest) -> str:
    """Which prisoners' dilemma seat sent ``req`` (its instructions name the player)."""
    return "player_a" if "Player A" in json.dumps(req.body.get("system")) else "player_b"


def _priced(events: list[Event]) -> list[LlmResponseReceived | ModelRequestAbandoned]:
    """The events that log an answered request with its cost."""
    return [
        e
        for e in events
        if isinstance(e, LlmResponseReceived)
        or (isinstance(e, ModelRequestAbandoned) and e.answered)
    ]


def _logged_as_served(stub: StubModelServer, events: list[Event]) -> None:
    """Every request the stub received was answered and is in the log once, at its price.

    What is expected comes from the stub's side: the usage it served, priced by genai-prices.
    """
    assert len(stub.requests) == len(stub.served)
    served = stub.served_usd(MODEL, "anthropic")
    priced = _priced(events)
    assert len(priced) == len(served)
    assert sorted(e.cost_usd or 0.0 for e in priced) == [
        pytest.approx(c, abs=1e-12) for c in sorted(served)
    ]
    assert sorted((e.input_tokens, e.output_tokens) for e in priced) == sorted(
        (s.reply.input_tokens, s.reply.output_tokens) for s in stub.served
    )
    assert [e for e in _abandoned(events) if not e.answered] == []
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.cost_note is None
    assert ended.total_cost_usd == pytest.approx(sum(served), abs=1e-9)


def test_the_requests_sent_as_the_round_settles_are_logged_exactly_once(
    held_stub: StubModelServer, tmp_path: Path
) -> None:
    # Player A locks in at once; its next request (the lock-in's result) is held at the stub.
    # Only then is player B's lock-in let through: it settles the round while A's request is in
    # flight, and B's own next request is sent as the phase ends. Both are answered only once
    # the round is over: the settling moment, reproduced step by step.
    held_stub.hold_until_in_flight = None

    def player(req: RecordedRequest) -> StubReply:
        seat = _seat(req)
        if "lock_in" in pd_turn(req)[1]:
            return StubReply(text="Done.", input_tokens=700, output_tokens=20, held="settling")
        lock_in = [("lock_in", {"move": "cooperate"})]
        held = "" if seat == "player_a" else "b_locks_in"
        return StubReply(tool_calls=lock_in, input_tokens=1200, output_tokens=80, held=held)

    held_stub.responder = player

    async def play() -> str:
        plan = plan_run(_request(tmp_path, "max_round_duration_seconds=600"))
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        playing = asyncio.create_task(session.play_round(1))
        # Bounded waits on the run's real HTTP requests reaching the stub (another thread):
        # B's lock-in call and A's call after its lock-in, both held.
        await asyncio.to_thread(held_stub.wait_in_flight, 2)
        held_stub.release("b_locks_in")
        await playing  # the round settled and ended with A's request (and maybe B's) unanswered
        assert held_stub.in_flight >= 1
        held_stub.release("settling")
        await session.settle_requests()
        session.finish(price_spend(folder), "completed")
        return folder.log_url

    events = read_events(asyncio.run(play())).events
    assert [e.trigger for e in events if isinstance(e, RoundEnded)] == ["settled"]
    late = [(e.agent_id, e.sent_in_round, e.input_tokens, e.output_tokens) for e in events if
            isinstance(e, ModelRequestAbandoned)]  # fmt: skip
    assert ("player_a", 1, 700, 20) in late
    _logged_as_served(held_stub, events)


class _AnswerAtThePhaseEnd(WrapperModel):
    """The seat's real model, whose first answer ends the phase ``turns`` loop turns before it
    is handed back: the answer lands at each moment of the phase end in turn."""

    def __init__(self, wrapped: Model, turns: int) -> None:
        super().__init__(wrapped)
        self.turns = turns
        self.clock: VirtualClock | None = None
        self.ended = False

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        if not self.ended and self.clock is not None:
            self.ended = True
            self.clock.advance(1.0)  # max_round_duration_seconds: the phase ends now
            for _ in range(self.turns):
                await asyncio.sleep(0)
        return response


@pytest.mark.parametrize("turns", range(8))
def test_an_answer_landing_as_the_phase_ends_is_logged_exactly_once(
    model_stub: StubModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    turns: int,
) -> None:
    # pydantic-ai runs a request in its graph's own task: an answer that lands in the loop
    # turns around the phase end (the cycle already cancelled, that task not yet) was once
    # answered by the stub and in no event at all.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.responder = lambda req: StubReply(
        text="thinking...", input_tokens=1200, output_tokens=80
    )

    async def play() -> str:
        plan = plan_run(_request(tmp_path))
        folder = claim_run(plan, str(tmp_path / "runs"))
        racing = _AnswerAtThePhaseEnd(build_model("anthropic", MODEL), turns)
        session = open_session(plan, folder, agent_models={"player_a": racing})
        assert isinstance(session.engine.clock, VirtualClock)
        racing.clock = session.engine.clock
        await session.play_round(1)
        await session.settle_requests()
        session.finish(price_spend(folder), "completed")
        return folder.log_url

    events = read_events(asyncio.run(play())).events
    assert [e.trigger for e in events if isinstance(e, RoundEnded)] == ["timeout"]
    assert len(model_stub.served) >= 1  # player A's request at least
    _logged_as_served(model_stub, events)


def test_a_stop_waits_for_the_answers_already_coming_and_prices_them(
    prefect_api: str, held_stub: StubModelServer, tmp_path: Path
) -> None:
    held_stub.responder = lambda req: StubReply(
        text="thinking...", input_tokens=1200, output_tokens=80
    )

    async def play() -> str:
        plan = plan_run(_request(tmp_path))
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        playing = asyncio.create_task(play_rounds(plan, folder, session))
        await asyncio.to_thread(held_stub.wait_in_flight, 2)
        playing.cancel()  # a Stop: Ctrl-C's signal (glossogen stop, the browser) cancels the run
        async with asyncio.timeout(30):  # a bound, not a pace: the stop starts waiting at once
            while not session.engine.requests.settling:
                await asyncio.sleep(0)
        held_stub.release()  # the provider answers while the stopped run waits
        with pytest.raises(asyncio.CancelledError):
            await playing
        return folder.log_url

    events = read_events(asyncio.run(play())).events
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert (ended.status, ended.error) == ("interrupted", "interrupted")
    assert sorted((e.agent_id, e.answered) for e in _abandoned(events)) == [
        ("player_a", True),
        ("player_b", True),
    ]
    _logged_as_served(held_stub, events)  # priced: the total is known, not null


def test_a_judge_request_the_phase_end_cuts_off_is_logged_with_what_it_cost(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # veyru's field observer and its judge on gpt-4o-mini over the stub (the engineer scripted).
    # The observer's treatment is put to the judge; the judge's answer is held until the phase
    # that asked for it has ended: it is the run ledger's, and logged with its usage.
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")

    def answer(req: RecordedRequest) -> StubReply:
        if "final_result" in req.tool_names:  # the judge
            ruling = {"success": True, "reason": "the action follows the procedure"}
            return StubReply(tool_calls=[("final_result", ruling)], held="judge")
        if req.tool_results:
            return StubReply(text="Done.", input_tokens=900, output_tokens=30)
        treat = ("apply_treatment", {"action": "cool the core slowly"})
        return StubReply(tool_calls=[treat], input_tokens=2000, output_tokens=60)

    model_stub.responder = answer
    overrides = ["round_count=1", "postmortem_enabled=false", "postmortem_after_swap=false",
                 "agents.field_observer.model=gpt-4o-mini",
                 "agents.field_observer.provider=openai", "judge_provider=openai",
                 "judge_model=gpt-4o-mini"]  # fmt: skip

    async def play() -> str:
        plan = plan_run(
            RunRequest(
                scenario="veyru",
                model="scripted",
                provider="scripted",
                runs_dir=str(tmp_path / "runs"),
                config="knobs_default",
                overrides=overrides,
            )  # fmt: skip
        )
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        clock = session.engine.clock
        assert isinstance(clock, VirtualClock)
        playing = asyncio.create_task(session.play_round(1))
        # A wait on the judge's real HTTP request reaching the stub (another thread), where it
        # is held: the observer sends nothing while its tool waits for the ruling.
        await asyncio.to_thread(
            wait_until,
            lambda: any("final_result" in r.tool_names for r in model_stub.requests),
            "the judge's request at the stub",
        )
        clock.advance(300.0)  # max_round_duration_seconds: the phase ends, the ruling unanswered
        await playing
        model_stub.release("judge")
        await session.settle_requests()
        session.finish(price_spend(folder), "completed")
        return folder.log_url

    events = read_events(asyncio.run(play())).events
    assert [e.trigger for e in events if isinstance(e, RoundEnded)] == ["timeout"]
    judged = [(e.agent_id, e.answered) for e in _abandoned(events) if e.agent_id == "judge"]
    assert judged == [("judge", True)]
    served = model_stub.served_usd("gpt-4o-mini", "openai")
    priced = [e.cost_usd or 0.0 for e in _priced(events) if e.cost_usd]
    assert len(model_stub.requests) == len(served) == len(priced)
    assert sorted(priced) == [pytest.approx(c, abs=1e-12) for c in sorted(served)]
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert (ended.total_cost_usd, ended.cost_note) == (pytest.approx(sum(served), abs=1e-9), None)
