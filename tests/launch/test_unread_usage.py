"""An answered model call whose usage cannot be read is not free: its cost is logged unknown
(null), the run's total is null with the reason, and the view counts the call so."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic_ai.usage import RequestUsage

from glossogen.eventlog import LlmResponseReceived, RunView, SimulationEnded, read_events
from glossogen.pricing import price_call, price_usage
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.launch.test_issue14_small_cases import USAGE, _pd_player, _request
from tests.providers.ungated import play_ungated


class FirstUsageUnread:
    """Play the prisoners' dilemma; the very first answer carries a usage of no token."""

    def __init__(self) -> None:
        self.answered = 0
        self.lock = threading.Lock()

    def __call__(self, req: RecordedRequest) -> StubReply:
        with self.lock:
            self.answered += 1
            unread = self.answered == 1
        reply = _pd_player(req)
        return replace(reply, input_tokens=0, output_tokens=0) if unread else reply


def test_an_answer_without_readable_usage_is_logged_at_unknown_cost_never_zero(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model_stub.responder = FirstUsageUnread()
    result = play_ungated(_request(tmp_path, "gpt-4.1-mini", "openai"))
    assert result.status == "completed"
    log = f"{result.run_url}/prisoners_dilemma.jsonl"
    events = read_events(log).events
    responses = [e for e in events if isinstance(e, LlmResponseReceived)]
    unit = price_call("openai", "gpt-4.1-mini", **USAGE)
    assert unit == 0.0005848  # genai-prices: $0.40 per million in, $1.60 per million out
    unread = [e for e in responses if e.cost_usd is None]
    assert [(e.input_tokens, e.output_tokens) for e in unread] == [(0, 0)]
    assert {e.cost_usd for e in responses if e not in unread} == {unit}
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.total_cost_usd is None
    assert ended.cost_note == (
        "1 answered model call(s) returned no usage that could be read: what they cost is unknown"
    )
    (cost,) = [c for c in ended.agent_costs if c.agent_id == unread[0].agent_id]
    assert cost.cost_usd is None
    spend = RunView.load(log).spend
    assert spend.usage_unread == 1
    assert spend.agents[unread[0].agent_id].usage_unread == 1
    assert spend.agents[unread[0].agent_id].cost_usd is None
    assert spend.total_cost_usd is None
    others = [s for a, s in spend.agents.items() if a != unread[0].agent_id]
    assert [(s.usage_unread, s.cost_usd is not None) for s in others] == [(0, True)]


def test_no_usage_is_unknown_for_a_billed_model_and_zero_where_nothing_is_billed() -> None:
    none = RequestUsage(input_tokens=0, output_tokens=0)
    assert price_usage("openai", "gpt-4.1-mini", none) is None
    assert price_usage("anthropic", "claude-sonnet-4-6", none) is None
    assert price_usage("self-hosted", "llama-a", none) == 0.0
    assert price_usage("scripted", "scripted", none) == 0.0
    some = RequestUsage(input_tokens=10, output_tokens=5)
    assert price_usage("openai", "gpt-4.1-mini", some) == price_call(
        "openai", "gpt-4.1-mini", input_tokens=10, output_tokens=5
    )
