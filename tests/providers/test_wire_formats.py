"""Every wire format over real HTTP: runs against stub servers on 127.0.0.1, priced to the cent."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from glossogen.eventlog import LlmResponseReceived, ModelRequestAbandoned, read_events
from glossogen.launch import VIRTUAL_CLOCK_SETTING, RunRequest
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated

SECRET_ANTHROPIC = "sk-ant-test-0123456789abcdefSECRET"
SECRET_OPENAI = "sk-test-0123456789abcdefSECRET"
SECRET_SELF_HOSTED = "self-hosted-token-SECRET"
USAGE = dict(input_tokens=1000, output_tokens=50, cache_read_tokens=200)


def pd_turn(req: RecordedRequest) -> tuple[str, list[str]]:
    """Where a prisoners' dilemma seat stands, from the whole conversation its request sent.

    Returns the phase of its latest briefing (``main`` or ``postmortem``) and the tools it
    called since that briefing, in order. Read from the seat's own history, not from the last
    message: that may be the other seat's notification, or a round's briefing that pydantic-ai
    merged after the previous round's ``lock_in`` result (the settle cut that cycle off before
    its next answer arrived), and which of those comes last depends on which seat's HTTP answer
    the event loop handled first.
    """
    sent = json.dumps(req.messages)
    main, postmortem = sent.rfind("begins. Talk on 'table'"), sent.rfind("Round over.")
    called = re.findall(r'"name": "(send_message|lock_in)"', sent[max(main, postmortem) :])
    return ("postmortem" if postmortem > main else "main"), called


def pd_player(req: RecordedRequest) -> StubReply:
    """Play a prisoners' dilemma seat: talk, lock in cooperate, then stop (each round)."""
    phase, called = pd_turn(req)
    if phase == "postmortem" or "lock_in" in called:
        return StubReply(text="Done.", **USAGE)
    if "send_message" in called:
        return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})], **USAGE)
    return StubReply(
        tool_calls=[("send_message", {"channel_id": "table", "text": "cooperate?"})], **USAGE
    )


def _run(tmp_path: Path, model: str, provider: str, *overrides: str) -> tuple:
    request = RunRequest(
        scenario="prisoners_dilemma",
        model=model,
        provider=provider,
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=2", "idle_floor_seconds=0.05", *overrides],
    )
    result = play_ungated(request)
    return result, read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events


def _assert_no_secret_in(folder: Path, *secrets: str) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for secret in secrets:
                assert secret not in text, f"{secret} leaked into {path}"


def _assert_priced(
    events: list, stub: StubModelServer, model: str, provider_id: str, cache_write: int
) -> None:
    """Every reply the stub served is logged once, at genai-prices' price of its usage."""
    unit = float(
        calc_price(
            Usage(
                input_tokens=1000,
                output_tokens=50,
                cache_read_tokens=200,
                cache_write_tokens=cache_write or None,
            ),
            model_ref=model,
            provider_id=provider_id,
        ).total_price
    )
    answered = [e for e in events if isinstance(e, LlmResponseReceived)]
    # Each seat's send_message and lock_in calls of both rounds at the least (a bound: see below).
    per_seat = Counter(e.agent_id for e in answered)
    assert (sorted(per_seat), min(per_seat.values()) >= 4) == (["player_a", "player_b"], True)
    # A request a phase end abandoned is finished in the background and priced the same way.
    # How many there are is the event loop's order, not game time: the lock-in that settles a
    # round cancels the settling seat's next request if it was already sent (0 to 2 a round).
    abandoned = [e for e in events if isinstance(e, ModelRequestAbandoned)]
    assert [e.answered for e in abandoned] == [True] * len(abandoned)
    responses: list[LlmResponseReceived | ModelRequestAbandoned] = [*answered, *abandoned]
    for e in responses:
        assert (e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens) == (
            1000,
            50,
            200,
            cache_write,
        )
        assert e.cost_usd == pytest.approx(unit, rel=1e-12)
    served = stub.served_usd(model, provider_id)  # what the provider side billed
    assert len(stub.requests) == len(served) == len(responses)
    ended = events[-1]
    for agent in ended.agent_costs:
        n = sum(1 for e in responses if e.agent_id == agent.agent_id)
        assert agent.requests == n
        assert round(agent.cost_usd, 2) == round(n * unit, 2)
        assert agent.cost_usd == pytest.approx(n * unit, rel=1e-9)
    assert ended.total_cost_usd == pytest.approx(sum(served), abs=1e-9)


def test_anthropic_messages_wire(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_ANTHROPIC)
    model_stub.responder = lambda req: _with_cache_write(pd_player(req))
    result, events = _run(tmp_path, "claude-sonnet-4-6", "anthropic")
    assert (result.status, result.rounds_won) == ("completed", 2)
    _assert_priced(events, model_stub, "claude-sonnet-4-6", "anthropic", cache_write=100)
    sent = model_stub.requests
    assert {r.wire for r in sent} == {"anthropic"}
    assert {r.model for r in sent} == {"claude-sonnet-4-6"}
    assert {r.api_key for r in sent} == {SECRET_ANTHROPIC}
    assert {r.body["max_tokens"] for r in sent} == {16384}
    assert set(sent[0].tool_names) == {
        "wait_for_notifications",
        "read_channel",
        "send_message",
        "lock_in",
    }
    _assert_no_secret_in(Path(result.run_url), SECRET_ANTHROPIC)


def _with_cache_write(reply: StubReply) -> StubReply:
    reply.cache_write_tokens = 100
    return reply


def test_openai_responses_wire(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_OPENAI)
    model_stub.responder = pd_player
    result, events = _run(tmp_path, "gpt-5.4", "openai", "agent_model_settings.temperature=0.25")
    assert (result.status, result.rounds_won) == ("completed", 2)
    _assert_priced(events, model_stub, "gpt-5.4", "openai", cache_write=0)
    sent = model_stub.requests
    assert {r.wire for r in sent} == {"responses"}
    assert {r.model for r in sent} == {"gpt-5.4"}
    assert {r.body.get("temperature") for r in sent} == {0.25}
    registered = [e for e in events if e.event_type == "agent_registered"]
    assert [e.model_settings for e in registered] == [
        {"cache": True, "max_tokens": 16384, "temperature": 0.25}
    ] * 2
    _assert_no_secret_in(Path(result.run_url), SECRET_OPENAI)


def test_chat_completions_wire_self_hosted_is_priced_at_zero(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "SELF_HOSTED_BASE_URLS", json.dumps({"my-llama": model_stub.openai_base_url})
    )
    monkeypatch.setenv("SELF_HOSTED_API_KEY", SECRET_SELF_HOSTED)
    model_stub.responder = pd_player
    result, events = _run(tmp_path, "my-llama", "self-hosted", "postmortem_enabled=false")
    assert (result.status, result.rounds_won, result.total_cost_usd) == ("completed", 2, 0.0)
    assert {r.wire for r in model_stub.requests} == {"chat"}
    assert {r.api_key for r in model_stub.requests} == {SECRET_SELF_HOSTED}
    costs = [e.cost_usd for e in events if isinstance(e, LlmResponseReceived)]
    assert costs == [0.0] * len(costs)  # how many: the event loop's order (see _assert_priced)
    _assert_no_secret_in(Path(result.run_url), SECRET_SELF_HOSTED)


def test_a_mixed_run_sends_each_agent_its_own_settings(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with StubModelServer() as anthropic_stub, StubModelServer() as openai_stub:
        # Two stubs of its own (not the model_stub fixture): on the virtual clock all the same,
        # so no phase of the run ends on the machine's load.
        monkeypatch.setenv(VIRTUAL_CLOCK_SETTING, "1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_stub.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_ANTHROPIC)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_stub.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET_OPENAI)
        anthropic_stub.responder = pd_player
        openai_stub.responder = pd_player
        result, events = _run(
            tmp_path,
            "claude-sonnet-4-6",
            "anthropic",
            "postmortem_enabled=false",
            "agents.player_a.model=claude-sonnet-4-6",
            "agents.player_a.model_settings.temperature=0.5",
            "agents.player_b.model=gpt-5.4",
            "agents.player_b.provider=openai",
            "agents.player_b.model_settings.max_tokens=999",
        )
    assert result.status == "completed"
    registered = {
        e.agent_id: (e.provider, e.model, e.model_settings)
        for e in events
        if e.event_type == "agent_registered"
    }
    assert registered == {
        "player_a": (
            "anthropic",
            "claude-sonnet-4-6",
            {"cache": True, "max_tokens": 16384, "temperature": 0.5},
        ),
        "player_b": ("openai", "gpt-5.4", {"cache": True, "max_tokens": 999}),
    }
    assert {(r.body["max_tokens"], r.body.get("temperature")) for r in anthropic_stub.requests} == {
        (16384, 0.5)
    }
    assert {
        (r.body["max_output_tokens"], r.body.get("temperature")) for r in openai_stub.requests
    } == {(999, None)}
    _assert_no_secret_in(Path(result.run_url), SECRET_ANTHROPIC, SECRET_OPENAI)
