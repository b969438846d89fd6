"""A fine-tune (``ft:<base>:...``) is its base model for the profile and the price.

Over real HTTP to the stub OpenAI server: what a fine-tune's requests carry is what its base's
carry, and each call is priced at the base's rates. At launch: ``thinking`` is accepted or
refused as for the base, and ``thinking=false`` on a model that cannot think is refused like
any other value (pydantic-ai sends such a model nothing).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from flows.simulate import simulate
from glossogen.cli import main
from glossogen.eventlog import (
    AgentRunCycleFailed,
    LlmResponseReceived,
    ModelRequestAbandoned,
    read_events,
)
from glossogen.launch import RunRequest
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.test_wire_formats import pd_turn

TOKENS = {"input_tokens": 1000, "output_tokens": 50}
ENCRYPTED = "reasoning.encrypted_content"


def dilemma_player(req: RecordedRequest) -> StubReply:
    """Talk once, lock in cooperate, then stop, each round (fixed usage; see ``pd_turn``)."""
    phase, called = pd_turn(req)
    if phase == "postmortem" or "lock_in" in called:
        return StubReply(text="Done.", **TOKENS)
    if "send_message" in called:
        return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})], **TOKENS)
    return StubReply(
        tool_calls=[("send_message", {"channel_id": "table", "text": "with you"})], **TOKENS
    )


@pytest.mark.parametrize(
    ("model", "base", "reasons"),
    [("ft:o4-mini:acme::abc123", "o4-mini", True), ("ft:gpt-4.1:acme::abc123", "gpt-4.1", False)],
)
def test_a_fine_tune_sends_and_costs_what_its_base_does(
    prefect_api: str,
    model_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    base: str,
    reasons: bool,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fine-tune")
    model_stub.responder = dilemma_player
    request = RunRequest(
        scenario="prisoners_dilemma",
        model=model,
        provider="openai",
        runs_dir=str(tmp_path),
        config="knobs_default",
        overrides=["round_count=1", "idle_floor_seconds=0.05"],
    )
    result = asyncio.run(simulate(request))
    assert result.status == "completed"
    asked = [r for r in model_stub.requests if r.wire == "responses"]
    assert {r.model for r in asked} == {model}  # the fine-tune is what is called
    # A reasoning base asks for its encrypted reasoning back; a non-reasoning one does not.
    assert {ENCRYPTED in (r.body.get("include") or []) for r in asked} == {reasons}
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    # Every request the stub answered is in the log once, priced at the base's rates: in its
    # turn, or after the round settled as an abandoned request; none lost to a failure. How
    # many there are (6 to 8) is the event loop's order: the lock-in that settles the round
    # cancels the settling seat's next cycle, whether or not its request was already sent.
    costs, unbilled = [], []
    for e in events:
        if isinstance(e, LlmResponseReceived) or (
            isinstance(e, ModelRequestAbandoned) and e.answered
        ):
            costs.append(e.cost_usd)
        elif isinstance(e, AgentRunCycleFailed | ModelRequestAbandoned):
            unbilled.append(e)
    assert [e.model_dump() for e in unbilled] == []
    assert len(asked) == len(model_stub.served) == len(costs)
    served = model_stub.served_usd(base, "openai")  # the base's price of what the stub served
    unit = float(calc_price(Usage(**TOKENS), model_ref=base, provider_id="openai").total_price)
    assert served == [unit] * len(asked)
    assert costs == [pytest.approx(unit, rel=1e-12)] * len(costs)
    assert result.total_cost_usd == pytest.approx(sum(served), abs=1e-9)


@pytest.mark.parametrize(
    ("model", "thinking", "error"),
    [
        (
            "gpt-4.1",
            "false",
            "agent player_a on openai:gpt-4.1 cannot think (pydantic-ai's profile), so "
            "thinking=false would be dropped",
        ),
        (
            "ft:gpt-4.1:acme::abc123",
            "high",
            "agent player_a on openai:ft:gpt-4.1:acme::abc123 cannot think (pydantic-ai's "
            "profile), so thinking=high would be dropped",
        ),
        (
            "ft:o4-mini:acme::abc123",
            "false",
            "agent player_a on openai:ft:o4-mini:acme::abc123 always thinks, so thinking=false "
            "would be dropped",
        ),
    ],
)
def test_a_thinking_value_the_model_would_drop_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    thinking: str,
    error: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fine-tune")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(_dry_run(tmp_path, model, f"agent_model_settings.thinking={thinking}"))
    assert exited.value.code == 65
    assert capsys.readouterr().err == f"glossogen: error: {error}\n"
    assert not (tmp_path / "runs").exists()


def test_a_reasoning_fine_tune_takes_thinking_and_is_estimated_at_its_bases_rates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fine-tune")
    monkeypatch.chdir(tmp_path)
    model = "ft:o4-mini:acme::abc123"
    with pytest.raises(SystemExit) as exited:
        main(_dry_run(tmp_path, model, "agent_model_settings.thinking=high"))
    out, err = capsys.readouterr()
    assert (exited.value.code, err) == (0, "")
    with pytest.raises(SystemExit) as exited:
        main(_dry_run(tmp_path, "o4-mini", "agent_model_settings.thinking=high"))
    base, _ = capsys.readouterr()
    # The fine-tune's estimate is its base's, line for line, thinking included (o4-mini's $1.10
    # in, $0.275 cached, $4.40 out per million), and it is costed.
    settings = json.dumps({"cache": True, "max_tokens": 16384, "thinking": "high"}, sort_keys=True)
    assert f"agent player_a: openai:{model} settings={settings} ~$" in out
    assert "not costed" not in out
    assert "  assuming reasoning: player_a high (+2048 tokens an answer)" in out
    assert out == base.replace("openai:o4-mini ", f"openai:{model} ")


def _dry_run(tmp_path: Path, model: str, *overrides: str) -> list[str]:
    return [
        "run", "prisoners_dilemma", "--provider", "openai", "--model", model,
        "--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default", "--dry-run", *overrides,
    ]  # fmt: skip
