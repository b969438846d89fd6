"""Provider faults over real HTTP: retried with backoff, logged by kind, never a quiet run."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.eventlog import (
    AgentRunCycleFailed,
    LlmResponseReceived,
    RoundEnded,
    RoundResultRecorded,
    read_events,
)
from glossogen.launch import RunRequest
from tests.fixtures.model_stubs import StubFault, StubModelServer, StubReply
from tests.providers.test_wire_formats import pd_player
from tests.providers.ungated import play_ungated


def _run(tmp_path: Path, *overrides: str) -> tuple:
    request = RunRequest(
        scenario="prisoners_dilemma",
        model="claude-sonnet-4-6",
        provider="anthropic",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=[
            "round_count=2",
            "idle_floor_seconds=0.05",
            "postmortem_enabled=false",
            *overrides,
        ],
    )
    result = play_ungated(request)
    return result, read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events


@pytest.fixture
def anthropic_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return model_stub


def test_a_provider_failing_every_call_ends_the_run_in_error(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    anthropic_stub.responder = lambda req: StubFault(status=500)
    result, events = _run(tmp_path)
    assert result.status == "error"
    failures = sorted(
        (e.agent_id, e.error_kind, e.attempts) for e in events if isinstance(e, AgentRunCycleFailed)
    )
    assert failures == [
        (agent, "server_error", n) for agent in ("player_a", "player_b") for n in (1, 2, 3)
    ]
    # One attempt per failure: the SDK's own retries are off, so the stub saw exactly six calls.
    assert len(anthropic_stub.requests) == 6
    assert [e.trigger for e in events if isinstance(e, RoundEnded)] == ["agents_failed"]
    (verdict,) = [e for e in events if isinstance(e, RoundResultRecorded)]
    assert (verdict.void, verdict.success) == (True, False)
    assert verdict.reason == (
        "void (agents_failed): player_a defect (missing), player_b defect (missing)"
    )
    ended = events[-1]
    assert (ended.event_type, ended.status, ended.rounds_played) == ("simulation_ended", "error", 1)


def test_a_rate_limit_waits_as_long_as_retry_after_says(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    anthropic_stub.queue(StubFault(status=429, retry_after=1))
    anthropic_stub.responder = pd_player
    result, events = _run(tmp_path)
    assert (result.status, result.rounds_won) == ("completed", 2)
    (failure,) = [e for e in events if isinstance(e, AgentRunCycleFailed)]
    assert (failure.error_kind, failure.retry_after_seconds, failure.retryable) == (
        "rate_limit",
        1.0,
        True,
    )
    # On the virtual clock nothing else moves game time while the seat backs off (the other
    # seat is busy, so no idle floor runs): its next answer comes exactly the wait it chose later.
    retried = next(
        e
        for e in events[events.index(failure) :]
        if isinstance(e, LlmResponseReceived) and e.agent_id == failure.agent_id
    )
    assert (retried.timestamp - failure.timestamp).total_seconds() == 1.0


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (StubFault(kind="garbage"), "api_error"),
        (StubFault(kind="refusal"), "refusal"),
        (StubFault(status=529), "overloaded"),
    ],
)
def test_each_fault_is_logged_by_kind_and_the_run_recovers(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path, fault: StubFault, kind: str
) -> None:
    anthropic_stub.queue(fault)
    anthropic_stub.responder = pd_player
    result, events = _run(tmp_path)
    assert result.status == "completed"
    assert [e.error_kind for e in events if isinstance(e, AgentRunCycleFailed)] == [kind]


def test_a_hung_request_times_out_on_the_agents_timeout(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    # Held 30 s: only the SDK's 3 s timeout (real seconds, httpx's own clock) ends the call. A
    # bound, not a window: every other answer comes at once, far under it on any load.
    anthropic_stub.queue(StubFault(kind="timeout"))
    anthropic_stub.responder = pd_player
    result, events = _run(tmp_path, "agent_model_settings.timeout=3")
    assert (result.status, result.rounds_won) == ("completed", 2)
    (failure,) = [e for e in events if isinstance(e, AgentRunCycleFailed)]
    assert anthropic_stub.ended_holds(1) == ["client_left"]
    # Sent, then given up by the client: a provider may answer (and bill) after the client left,
    # so its cost is unknown, never 0, and the run's total is a lower bound that says why.
    assert (failure.error_kind, failure.cost_usd, len(failure.request_ids)) == ("timeout", None, 1)
    # The stub answers the held request once its hold ends (its default reply), as a provider
    # would after the client left: billed on the provider's side, unknown on ours.
    default = StubReply()
    late = [s for s in anthropic_stub.served
            if (s.reply.input_tokens, s.reply.output_tokens) == (default.input_tokens,
                                                                 default.output_tokens)]  # fmt: skip
    assert len(late) == 1
    served = sum(s.usd("claude-sonnet-4-6", "anthropic") for s in anthropic_stub.served
                 if s not in late)  # fmt: skip
    assert result.total_cost_usd is None
    assert result.cost_note == (
        "1 model request(s) timed out after they were sent: the provider may have answered and "
        "billed them after the client left, so what they cost is unknown; the calls priced sum "
        f"to {served:.6f} USD, a lower bound"
    )


def test_a_wrong_key_is_not_retried(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    anthropic_stub.responder = lambda req: StubFault(status=401)
    result, events = _run(tmp_path)
    assert result.status == "error"
    assert sorted(
        (e.agent_id, e.error_kind, e.attempts, e.retryable)
        for e in events
        if isinstance(e, AgentRunCycleFailed)
    ) == [
        ("player_a", "authentication", 1, False),
        ("player_b", "authentication", 1, False),
    ]


def test_a_failing_judge_voids_the_round_and_no_agent_is_blamed(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model_stub.responder = lambda req: StubFault(status=500)
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
            "judge_model=gpt-5.4",
        ],
    )
    result = play_ungated(request)
    events = read_events(f"{result.run_url}/veyru.jsonl").events
    failures = [(e.agent_id, e.error_kind) for e in events if isinstance(e, AgentRunCycleFailed)]
    assert failures == [("judge", "server_error")] * 3
    (verdict,) = [e for e in events if isinstance(e, RoundResultRecorded)]
    assert (verdict.void, verdict.success) == (True, False)
    assert verdict.reason == (
        "void (judge_failed): wrong treatment at stage 1 of 3 "
        "(judge unavailable (server_error); round void)"
    )
    assert result.status == "error"


def test_a_provider_that_never_answers_takes_the_agent_out_across_phases(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    # Retry-After asks for an hour: each wait is cut by the phase end, but failures keep counting.
    # On the virtual clock, with each round's two requests held until both are in flight: no
    # game time passes while a seat waits for its answer, so neither seat's backoff can end the
    # phase before the other seat's 429 is back and counted.
    anthropic_stub.hold_until_in_flight = 2
    anthropic_stub.responder = lambda req: StubFault(status=429, retry_after=3600)
    result, events = _run(tmp_path, "round_count=3", "max_round_duration_seconds=2")
    assert result.status == "error"
    attempts = [
        (e.round_number, e.agent_id, e.attempts)
        for e in events
        if isinstance(e, AgentRunCycleFailed)
    ]
    assert sorted(attempts) == [(n, a, n) for n in (1, 2, 3) for a in ("player_a", "player_b")]
    assert [e.void for e in events if isinstance(e, RoundResultRecorded)] == [True] * 3
    # Rounds 1 and 2 run out their time; in round 3 both seats' third failure takes them out.
    assert [e.trigger for e in events if isinstance(e, RoundEnded)] == [
        "timeout",
        "timeout",
        "agents_failed",
    ]
    assert len(anthropic_stub.requests) == 6


def test_a_body_of_another_wire_is_the_providers_malformed_response_not_ours(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 200 whose JSON is a chat completion where the Responses API was called: the SDK's
    # parser fails inside pydantic-ai's model code. The provider answered wrongly; not a bug of
    # glossogen (which would be internal, exit 70).
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-shape")
    model_stub.queue(StubFault(kind="wrong_shape"))
    model_stub.responder = pd_player
    result = play_ungated(
        RunRequest(
            scenario="prisoners_dilemma", model="gpt-4.1-mini", provider="openai",
            runs_dir=str(tmp_path / "runs"), config="knobs_default",
            overrides=["round_count=2", "idle_floor_seconds=0.05", "postmortem_enabled=false"],
        )
    )  # fmt: skip
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    assert result.status == "completed"
    assert [(e.error_kind, e.retryable) for e in events if isinstance(e, AgentRunCycleFailed)] == [
        ("malformed_response", True)
    ]
