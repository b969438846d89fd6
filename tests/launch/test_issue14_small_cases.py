"""The small cases of loud failure at launch and on the wire: a self-hosted map value that is
no URL, ``provider:model`` model names, ``content: null`` to OpenAI-compatible servers, the
prisoners' dilemma prompt's strict variables, logged cost rounding, and the credentials a
resume still needs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jinja2
import pytest

from glossogen.cli import main
from glossogen.eventlog import (
    LlmResponseReceived,
    ModelRequestAbandoned,
    SimulationEnded,
    read_events,
)
from glossogen.launch import (
    LaunchError,
    ResumeRequest,
    RunRequest,
    check_credentials,
    claim_run,
    open_session,
    plan_resume,
    plan_run,
    price_spend,
)
from glossogen.pricing import logged_usd, price_call
from glossogen.scenario import render_prompt
from scenarios.prisoners_dilemma.scenario import PrisonersDilemma
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.test_wire_formats import pd_turn
from tests.providers.ungated import play_ungated

USAGE = dict(input_tokens=1234, output_tokens=57, cache_read_tokens=0)


def _pd_player(req: RecordedRequest) -> StubReply:
    """Talk, lock in cooperate, then stop, each round (see ``pd_turn``)."""
    phase, called = pd_turn(req)
    if phase == "postmortem" or "lock_in" in called:
        return StubReply(text="Done.", **USAGE)
    if "send_message" in called:
        return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})], **USAGE)
    return StubReply(
        tool_calls=[("send_message", {"channel_id": "table", "text": "cooperate?"})], **USAGE
    )


def _request(tmp_path: Path, model: str, provider: str) -> RunRequest:
    return RunRequest(
        scenario="prisoners_dilemma",
        model=model,
        provider=provider,
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=1", "idle_floor_seconds=0.05", "postmortem_enabled=false"],
    )


def _refused(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(["run", "prisoners_dilemma", "--config", "knobs_default",
              "--runs-dir", str(tmp_path / "runs"), *args])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 65, err
    assert not (tmp_path / "runs").exists()
    assert len(err.splitlines()) == 1
    return err


def test_a_self_hosted_map_value_that_is_not_a_url_is_refused_at_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELF_HOSTED_BASE_URLS", json.dumps({"m1": "not a url"}))
    monkeypatch.setenv("SELF_HOSTED_API_KEY", "token")
    err = _refused(["--model", "m1", "--provider", "self-hosted"], tmp_path, capsys)
    assert err == (
        "glossogen: error: self-hosted:m1: SELF_HOSTED_BASE_URLS['m1'] is not a URL: "
        "use http(s)://host[:port][/path]"
    )


def test_a_model_naming_another_provider_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(["--model", "openai:gpt-4.1", "--provider", "anthropic"], tmp_path, capsys)
    assert err == (
        "glossogen: error: model 'openai:gpt-4.1' names provider 'openai' but its provider is "
        "'anthropic': give the model name alone and the provider apart"
    )


def test_a_model_prefixed_with_its_own_provider_is_sent_once_and_priced(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.responder = _pd_player
    request = _request(tmp_path, "anthropic:claude-sonnet-4-6", "anthropic")
    assert {s.model for s in plan_run(request).seats} == {"claude-sonnet-4-6"}
    result = play_ungated(request)
    assert (result.status, result.rounds_won) == ("completed", 1)
    assert {r.model for r in model_stub.requests} == {"claude-sonnet-4-6"}
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    responses = [e for e in events if isinstance(e, LlmResponseReceived)]
    unit = price_call("anthropic", "claude-sonnet-4-6", input_tokens=1234, output_tokens=57)
    assert unit is not None
    assert {(e.model, e.cost_usd) for e in responses} == {("claude-sonnet-4-6", unit)}
    # A request the settled round cut off is finished and priced alike. Whether there is one
    # is the event loop's order: the settling lock-in cancels its seat's next request if sent.
    abandoned = [e for e in events if isinstance(e, ModelRequestAbandoned)]
    assert [(e.model, e.answered, e.cost_usd) for e in abandoned] == [
        ("claude-sonnet-4-6", True, unit)
    ] * len(abandoned)
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    # The total is the sum rounded to 10 decimal places, as logged.
    paid = len(responses) + len(abandoned)
    assert ended.total_cost_usd == round(paid * unit, 10)
    assert ended.total_cost_usd == logged_usd(unit * paid)


def test_tool_call_only_turns_reach_a_self_hosted_server_with_empty_content(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELF_HOSTED_BASE_URLS", json.dumps({"m1": model_stub.openai_base_url}))
    monkeypatch.setenv("SELF_HOSTED_API_KEY", "token")
    model_stub.responder = _pd_player
    result = play_ungated(_request(tmp_path, "m1", "self-hosted"))
    assert (result.status, result.rounds_won) == ("completed", 1)
    turns = [
        m
        for r in model_stub.requests
        for m in r.messages
        if m.get("role") == "assistant" and m.get("tool_calls")
    ]
    assert turns, "no tool-call turn was sent back"
    assert {m["content"] for m in turns} == {""}


def test_the_prisoners_dilemma_prompt_refuses_an_undefined_value() -> None:
    with pytest.raises(jinja2.UndefinedError, match="'round_count' is undefined"):
        render_prompt(PrisonersDilemma, "system", display_name="Player A")


def test_logged_costs_keep_ten_decimals_and_never_round_to_zero() -> None:
    assert logged_usd(0.04480000000000003) == 0.0448
    assert logged_usd(3e-12) == 3e-12
    assert logged_usd(0.0) == 0.0


def test_a_resume_needs_only_the_keys_of_providers_still_ahead(
    tmp_path: Path, model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both seats start on anthropic; round 1 swaps both to scripted, round 2 brings player_b
    # to openai. Resumed after round 1, the run calls scripted and openai, never anthropic.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)  # every seat on loopback
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    swaps = [
        {"kind": "swap_agent", "round": 1, "agent_id": a, "model": "s", "provider": "scripted"}
        for a in ("player_a", "player_b")
    ] + [{"kind": "swap_agent", "round": 2, "agent_id": "player_b", "model": "gpt-4.1",
          "provider": "openai"}]  # fmt: skip
    request = RunRequest(
        scenario="prisoners_dilemma",
        model="claude-sonnet-4-6",
        provider="anthropic",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=[
            "round_count=2",
            "postmortem_enabled=false",
            "idle_floor_seconds=0.05",
            f"scheduled_events={json.dumps(swaps)}",
        ],  # fmt: skip
    )
    plan = plan_run(request)
    folder = claim_run(plan, request.runs_dir)

    async def play_round_one() -> None:
        session = open_session(plan, folder)
        await session.play_round(1)
        session.finish(price_spend(folder), "interrupted", "stopped by the test")

    asyncio.run(play_round_one())
    assert not model_stub.requests  # round 1 was played by the scripted seats
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config, _ = plan_resume(ResumeRequest(run_dir=folder.url))
    with pytest.raises(LaunchError) as refused:
        check_credentials(config, cwd=tmp_path)
    assert (str(refused.value), refused.value.exit_code) == (
        "missing credentials: OPENAI_API_KEY (provider openai, a scheduled swap)",
        77,
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert check_credentials(config, cwd=tmp_path) == ["openai", "scripted"]
