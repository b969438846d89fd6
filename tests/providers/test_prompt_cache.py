"""Prompt caching over real HTTP: the markers each provider is sent, and cache tokens priced.

Runs play prisoners_dilemma against the stub servers on 127.0.0.1, whose replies report cache
reads and writes (five-minute and one-hour); every figure a test checks is priced with
genai-prices from what the stub served, never from the log's own sums.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from genai_prices import Usage, calc_price

from glossogen.cli import main
from glossogen.engine import RunJudge, worst_case_usd
from glossogen.eventlog import (
    AgentRegistered,
    Event,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestRefused,
    read_events,
)
from glossogen.export import RunIdSelection, select_runs, write_tables
from glossogen.launch import LaunchError, RunRequest, check_model_settings, plan_run
from glossogen.scenario import JudgeDecision
from glossogen.server import create_app
from tests.derive.test_resume_sends import _play_one_round_and_stop
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.test_wire_formats import pd_player
from tests.providers.ungated import play_ungated

SERVED = dict(
    input_tokens=1000,
    output_tokens=50,
    cache_read_tokens=600,
    cache_write_tokens=300,
    cache_write_1h_tokens=100,
)
"""What every stub reply reports (Anthropic's wire alone tells one-hour writes apart)."""


def _served(req: RecordedRequest) -> StubReply:
    return dataclasses.replace(pd_player(req), **SERVED)


def _usd(model: str, provider_id: str, **usage: int) -> float:
    counts = {name: count or None for name, count in usage.items()}
    return float(calc_price(Usage(**counts), model_ref=model, provider_id=provider_id).total_price)


def _run(
    tmp_path: Path, stub: StubModelServer, model: str, provider: str, *overrides: str
) -> tuple[Any, list[Event]]:
    stub.responder = _served
    result = play_ungated(_request(tmp_path, model, provider, *overrides))
    return result, read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events


def _request(tmp_path: Path, model: str, provider: str, *overrides: str, **limits: Any) -> Any:
    """A two-round prisoners_dilemma run, its overrides after the defaults (the last wins)."""
    return RunRequest(
        scenario="prisoners_dilemma",
        model=model,
        provider=provider,
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=2", "idle_floor_seconds=0.05", *overrides],
        **limits,
    )


def _calls(events: list[Event]) -> list[LlmResponseReceived | ModelRequestAbandoned]:
    return [e for e in events if isinstance(e, LlmResponseReceived | ModelRequestAbandoned)]


@pytest.fixture
def anthropic_env(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.fixture
def openai_env(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_anthropic_caches_tools_instructions_and_conversation_priced_per_lifetime(
    prefect_api: str, model_stub: StubModelServer, anthropic_env: None, tmp_path: Path
) -> None:
    result, events = _run(tmp_path, model_stub, "claude-sonnet-4-6", "anthropic")
    assert (result.status, result.rounds_won) == ("completed", 2)
    marker = {"type": "ephemeral", "ttl": "5m"}
    for req in model_stub.requests:
        # the conversation (Anthropic's automatic breakpoint at its end), the instructions
        # and the tool definitions
        assert req.body["cache_control"] == marker
        assert req.body["system"][-1]["cache_control"] == marker
        assert req.body["tools"][-1]["cache_control"] == marker
    registered = [e for e in events if isinstance(e, AgentRegistered)]
    assert [e.model_settings for e in registered] == [{"max_tokens": 16384, "cache": True}] * 2

    unit = _usd("claude-sonnet-4-6", "anthropic", **SERVED)
    # $3 in, $0.30 cache read, $3.75 five-minute write, $6 one-hour write, $15 out per MTok
    assert unit == pytest.approx(
        (100 * 3 + 600 * 0.3 + 200 * 3.75 + 100 * 6 + 50 * 15) / 1e6, rel=1e-12
    )
    calls = _calls(events)
    for e in calls:
        logged = (
            e.input_tokens,
            e.output_tokens,
            e.cache_read_tokens,
            e.cache_write_tokens,
            e.cache_write_1h_tokens,
        )
        assert logged == (1000, 50, 600, 300, 100)
        assert e.cost_usd == pytest.approx(unit, rel=1e-12)
    ended = events[-1]
    for agent in ended.agent_costs:
        n = sum(1 for e in calls if e.agent_id == agent.agent_id)
        counts = (
            agent.requests,
            agent.input_tokens,
            agent.cache_read_tokens,
            agent.cache_write_tokens,
            agent.cache_write_1h_tokens,
            agent.output_tokens,
        )
        assert counts == (n, 1000 * n, 600 * n, 300 * n, 100 * n, 50 * n)
        assert agent.cost_usd == pytest.approx(n * unit, rel=1e-9)
    n = len(calls)
    assert result.total_cost_usd == pytest.approx(n * unit, rel=1e-9)
    shown = (
        f"tokens {1000 * n} in ({600 * n} cache read, {300 * n} cache write, "
        f"{100 * n} of it 1 h), {50 * n} out, 60.0% of input from cache"
    )
    assert result.tokens.summary() == shown  # the closing line's
    runs_dir = str(tmp_path / "runs")
    page = TestClient(create_app(runs_dir)).get(f"/runs/{result.run_id}")
    assert f'<dt>tokens</dt><dd id="tokens">{shown}</dd>' in page.text

    out = tmp_path / "tables"
    records = select_runs(runs_dir, RunIdSelection(run_ids=[result.run_id])).records
    write_tables(records, ["run_level", "agent_level"], str(out))
    with (out / "run_level.csv").open(newline="") as f:
        (run,) = list(csv.DictReader(f))
    columns = ["input", "cache_read", "cache_write", "cache_write_1h", "output"]
    assert [run[f"total_{c}_tokens"] for c in columns] == [
        str(1000 * n),
        str(600 * n),
        str(300 * n),
        str(100 * n),
        str(50 * n),
    ]
    assert run["total_cached_input_share"] == "0.6"
    with (out / "agent_level.csv").open(newline="") as f:
        agents = {row["agent_id"]: row for row in csv.DictReader(f)}
    for agent in ended.agent_costs:
        row = agents[agent.agent_id]
        k = agent.requests
        assert [row[f"{c}_tokens"] for c in columns] == [
            str(1000 * k),
            str(600 * k),
            str(300 * k),
            str(100 * k),
            str(50 * k),
        ]
        assert (row["cached_input_share"], float(row["cost_usd"])) == (
            "0.6",
            pytest.approx(k * unit, rel=1e-9),
        )


def test_anthropic_one_hour_cache_marks_every_breakpoint_one_hour(
    prefect_api: str, model_stub: StubModelServer, anthropic_env: None, tmp_path: Path
) -> None:
    result, events = _run(
        tmp_path, model_stub, "claude-sonnet-4-6", "anthropic", "agent_model_settings.cache=1h"
    )
    assert result.status == "completed"
    marker = {"type": "ephemeral", "ttl": "1h"}
    for req in model_stub.requests:
        assert req.body["cache_control"] == marker
        assert req.body["system"][-1]["cache_control"] == marker
        assert req.body["tools"][-1]["cache_control"] == marker
    registered = [e for e in events if isinstance(e, AgentRegistered)]
    assert [e.model_settings["cache"] for e in registered] == ["1h", "1h"]


def test_cache_false_sends_no_marker_on_anthropic(
    prefect_api: str, model_stub: StubModelServer, anthropic_env: None, tmp_path: Path
) -> None:
    result, events = _run(
        tmp_path, model_stub, "claude-sonnet-4-6", "anthropic", "agent_model_settings.cache=false"
    )
    assert result.status == "completed"
    assert model_stub.requests
    for req in model_stub.requests:
        assert "cache_control" not in json.dumps(req.body)
    registered = [e for e in events if isinstance(e, AgentRegistered)]
    assert [e.model_settings for e in registered] == [{"max_tokens": 16384, "cache": False}] * 2


def test_openai_sends_one_prompt_cache_key_per_run_and_seat(
    prefect_api: str, model_stub: StubModelServer, openai_env: None, tmp_path: Path
) -> None:
    result, events = _run(tmp_path, model_stub, "gpt-5.4", "openai")
    assert result.status == "completed"
    keys = [req.body["prompt_cache_key"] for req in model_stub.requests]
    calls = _calls(events)
    assert sorted(set(keys)) == [f"{result.run_id}:player_a", f"{result.run_id}:player_b"]
    for seat in ("player_a", "player_b"):
        sent = keys.count(f"{result.run_id}:{seat}")
        assert sent == sum(1 for e in calls if e.agent_id == seat)
    for req in model_stub.requests:
        assert "cache_control" not in json.dumps(req.body)  # gpt-5.4 caches by itself
    # OpenAI's wire reports cache writes with no lifetime: all five-minute-priced writes
    unit = _usd(
        "gpt-5.4",
        "openai",
        input_tokens=1000,
        output_tokens=50,
        cache_read_tokens=600,
        cache_write_tokens=300,
    )
    for e in calls:
        assert (e.cache_read_tokens, e.cache_write_tokens, e.cache_write_1h_tokens) == (600, 300, 0)
        assert e.cost_usd == pytest.approx(unit, rel=1e-12)


def test_openai_cache_false_sends_no_prompt_cache_key(
    prefect_api: str, model_stub: StubModelServer, openai_env: None, tmp_path: Path
) -> None:
    result, _ = _run(tmp_path, model_stub, "gpt-5.4", "openai", "agent_model_settings.cache=false")
    assert result.status == "completed"
    assert model_stub.requests
    assert all("prompt_cache_key" not in req.body for req in model_stub.requests)


@pytest.mark.parametrize(
    ("model", "provider", "cache", "refusal"),
    [
        (
            "gpt-5.4",
            "openai",
            "1h",
            "agent player_a on openai:gpt-5.4 has no cache lifetime to choose (pydantic-ai's "
            "profile), so cache=1h would be dropped; use cache=true for the provider's default",
        ),
        (
            "claude-sonnet-4-6",
            "anthropic",
            "30m",
            "agent player_a on anthropic:claude-sonnet-4-6 sells 5m, 1h (pydantic-ai's "
            "profile), so cache=30m would be dropped; use cache=true for the provider's default",
        ),
    ],
)
def test_a_cache_lifetime_the_model_does_not_sell_is_refused_at_launch(
    model_stub: StubModelServer,
    anthropic_env: None,
    openai_env: None,
    tmp_path: Path,
    model: str,
    provider: str,
    cache: str,
    refusal: str,
) -> None:
    request = _request(tmp_path, model, provider, f"agent_model_settings.cache={cache}")
    with pytest.raises(LaunchError) as info:
        check_model_settings(plan_run(request))
    assert (str(info.value), info.value.exit_code) == (refusal, 65)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("model", "provider", "provider_id"),
    [("claude-haiku-4-5", "anthropic", "anthropic"), ("gpt-5.4", "openai", "openai")],
)
def test_the_judge_is_cached_and_logs_its_cache_tokens_priced(
    model_stub: StubModelServer,
    anthropic_env: None,
    openai_env: None,
    model: str,
    provider: str,
    provider_id: str,
) -> None:
    ruling = {"success": True, "reason": "kept"}
    model_stub.queue(StubReply(tool_calls=[("final_result", ruling)], **SERVED))
    logged: list[Event] = []
    judge = RunJudge(model, provider, {"cache": True}, logged.append, cache_key="r/1:judge")
    decision = asyncio.run(
        judge.rule("Was it kept?", "Rule on the promise.", lambda: JudgeDecision(False, "x"))
    )
    assert decision == JudgeDecision(True, "kept")
    (req,) = model_stub.requests
    (event,) = logged
    assert isinstance(event, JudgeCalled)
    one_hour = 100 if provider == "anthropic" else 0  # OpenAI's wire has no one-hour writes
    if provider == "anthropic":
        # a ruling's action is its own: the judge caches its tools, its instructions and the
        # scenario's instructions for the ruling (the same for every vote and attempt on it)
        marker = {"type": "ephemeral", "ttl": "5m"}
        assert "cache_control" not in req.body
        assert req.body["system"][-1]["cache_control"] == marker
        assert req.body["tools"][-1]["cache_control"] == marker
        (asked,) = req.body["messages"]
        assert asked["content"] == [
            {"type": "text", "text": "Rule on the promise.", "cache_control": marker},
            {"type": "text", "text": "Was it kept?"},
        ]
    else:
        assert req.body["prompt_cache_key"] == "r/1:judge"
        (asked,) = req.messages
        texts = [block["text"] for block in asked["content"]]
        assert texts == ["Rule on the promise.", "Was it kept?"]  # no marker on this model
    counts = (
        event.input_tokens,
        event.cache_read_tokens,
        event.cache_write_tokens,
        event.cache_write_1h_tokens,
        event.output_tokens,
    )
    assert counts == (1000, 600, 300, one_hour, 50)
    unit = _usd(model, provider_id, **{**SERVED, "cache_write_1h_tokens": one_hour})
    assert event.cost_usd == pytest.approx(unit, rel=1e-12)


def test_a_one_hour_cache_reserves_the_one_hour_write_rate_under_a_spend_cap(
    prefect_api: str, model_stub: StubModelServer, anthropic_env: None, tmp_path: Path
) -> None:
    model_stub.responder = _served
    request = _request(
        tmp_path,
        "claude-sonnet-4-6",
        "anthropic",
        "round_count=1",
        "agent_model_settings.cache=1h",
        spend_cap_usd=0.01,
    )
    result = play_ungated(request)
    assert result.status == "incomplete"
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    (refused,) = [e for e in events if isinstance(e, ModelRequestRefused)]
    bound = refused.input_tokens_bound
    long = worst_case_usd("anthropic", "claude-sonnet-4-6", bound, 16384, long_cache=True)
    assert refused.worst_case_usd == long
    assert long == pytest.approx((bound * 6 + 16384 * 15) / 1e6, rel=1e-12)
    assert model_stub.requests == []  # refused before it was sent


@pytest.mark.parametrize("recorded_cache", [True, None])
def test_a_resume_sends_what_the_log_recorded_with_the_same_key_per_seat(
    prefect_api: str,
    model_stub: StubModelServer,
    openai_env: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorded_cache: bool | None,
) -> None:
    model_stub.responder = _served
    run = asyncio.run(_play_one_round_and_stop(_request(tmp_path, "gpt-5.4", "openai")))
    run_id = f"prisoners_dilemma/{Path(run).name}"
    keys = {f"{run_id}:player_a", f"{run_id}:player_b"}
    assert {req.body["prompt_cache_key"] for req in model_stub.requests} == keys
    if recorded_cache is None:  # as a log written before caching existed records its seats
        log = Path(run) / "prisoners_dilemma.jsonl"
        events = [json.loads(line) for line in log.read_text().splitlines()]
        for event in events:
            if event["event_type"] == "agent_registered":
                del event["model_settings"]["cache"]
        log.write_text("".join(json.dumps(e) + "\n" for e in events))
    model_stub.requests = []
    with pytest.raises(SystemExit) as exited:
        main(["run", "prisoners_dilemma", "--resume", run])
    assert exited.value.code == 0, capsys.readouterr().err
    assert model_stub.requests  # round 2 was played
    sent = {req.body.get("prompt_cache_key") for req in model_stub.requests}
    assert sent == (keys if recorded_cache else {None})
