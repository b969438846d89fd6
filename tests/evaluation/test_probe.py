"""protocol_probe against a hosted model: each agent's recorded history replayed over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from glossogen.evaluation import EvaluationError, plan_evaluation, score_all, write_outcomes
from glossogen.evaluation.metrics.probe import QUESTIONS
from tests.evaluation._logs import RunLog
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer, StubReply

FO, SE = "field_observer", "stabilization_engineer"
TOKENS = dict(input_tokens=2000, output_tokens=40)


def _history(agent: str, said: str) -> list[dict]:
    messages = [
        ModelRequest(
            parts=[UserPromptPart(f"Round 1 briefing for {agent}")],
            instructions=f"You are {agent}.",
        ),  # fmt: skip
        ModelResponse(
            parts=[
                ToolCallPart(
                    "send_message", {"channel_id": "link", "text": said}, tool_call_id=f"{agent}-1"
                )
            ]
        ),  # fmt: skip
        ModelRequest(
            parts=[ToolReturnPart("send_message", {"status": "sent"}, tool_call_id=f"{agent}-1")]
        ),  # fmt: skip
        ModelResponse(parts=[TextPart("Done for now.")]),
    ]
    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


def _run(tmp_path: Path, model: str = "gpt-4o-mini", provider: str = "openai") -> Path:
    log = RunLog(tmp_path, model=model, provider=provider)
    log.round(1).say(1, FO, "hot shell L4").say(1, SE, "brace L4").verdict(1, True)
    log.history(1, FO, _history(FO, "hot shell L4")).history(1, SE, _history(SE, "brace L4"))
    return log.complete(1).end().write()


ANSWERS = {FO: "L4 means level four", SE: "L4 means level 4 brace"}


def _answer(req: RecordedRequest) -> StubReply:
    sent = json.dumps(req.messages)
    agent = FO if "hot shell L4" in sent else SE
    return StubReply(text=ANSWERS[agent], **TOKENS)


def _probe(
    stub: StubModelServer, patch: pytest.MonkeyPatch, tmp_path: Path, model: str, replicas: int = 1
) -> tuple[Path, Any]:
    """Probe a run whose seats played ``model`` (on the stub, named by the SDK's variables)."""
    if model.startswith("claude"):
        patch.setenv("ANTHROPIC_BASE_URL", stub.anthropic_base_url)
        patch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-probe")
    patch.setenv("OPENAI_BASE_URL", stub.openai_base_url)
    patch.setenv("OPENAI_API_KEY", "sk-test-probe")
    stub.responder = _answer
    run_dir = _run(tmp_path, model, "anthropic" if model.startswith("claude") else "openai")
    plan = plan_evaluation(str(run_dir), "protocol_probe", probe_replicas=replicas)
    return run_dir, write_outcomes(plan, asyncio.run(score_all(plan)))


def test_probe_replays_each_history_to_its_recorded_model(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, report = _probe(model_stub, monkeypatch, tmp_path, "gpt-4o-mini")
    entry = report.metrics["protocol_probe"]
    # words {l4, means, level, four} vs {l4, means, level, 4, brace}: 3 shared of 6
    assert entry.score == 0.5
    assert {o.agent_id: o.value for o in entry.per_agent} == {FO: 0.5, SE: 0.5}
    assert (entry.replicas, entry.agreement, entry.rounds) == (1, None, 0)
    unit = float(
        calc_price(Usage(**TOKENS), model_ref="gpt-4o-mini", provider_id="openai").total_price
    )
    assert entry.cost_usd == pytest.approx(8 * unit, rel=1e-12)
    assert report.evaluation_cost.probe_usd == pytest.approx(8 * unit, rel=1e-12)
    assert report.evaluation_cost.judge_usd == 0.0
    sent = model_stub.requests
    assert len(sent) == 8  # 2 agents x 4 questions
    assert {r.model for r in sent} == {"gpt-4o-mini"}
    first = [r for r in sent if "hot shell L4" in json.dumps(r.messages)][0]
    # the whole history, then one question of the bank, under the agent's own instructions
    assert first.body["instructions"] == f"You are {FO}."
    kinds = [m.get("type") or m["role"] for m in first.messages]
    assert kinds == ["user", "function_call", "function_call_output", "assistant", "user"]
    assert first.messages[1]["arguments"] == '{"channel_id":"link","text":"hot shell L4"}'
    (asked,) = first.messages[-1]["content"]
    assert asked["text"] in QUESTIONS.values()
    run_id = "veyru/1700000000"  # RunLog's
    keys = {r.body["prompt_cache_key"] for r in sent}
    assert keys == {f"{run_id}:{FO}:probe", f"{run_id}:{SE}:probe"}  # one cache per seat
    lines = [json.loads(x) for x in (run_dir / "protocol_probe.jsonl").read_text().splitlines()]
    assert {x["answer"] for x in lines} == set(ANSWERS.values())


def test_probe_caches_each_history_once_for_all_its_questions_on_anthropic(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, report = _probe(model_stub, monkeypatch, tmp_path, "claude-sonnet-4-6", replicas=2)
    entry = report.metrics["protocol_probe"]
    assert (entry.status, entry.replicas) == ("ok", 2)
    sent = model_stub.requests
    assert len(sent) == 16  # 2 agents x 4 questions x 2 replicas
    marker = {"type": "ephemeral", "ttl": "5m"}
    answered = dict(model_stub.spans)  # arrival -> answer
    for agent in (FO, SE):
        mine = [r for r in sent if r.body["system"][0]["text"] == f"You are {agent}."]
        assert len(mine) == 8
        for req in mine:
            *history, question = req.messages
            # the history (every question's shared context) is cached up to its last block,
            # with the instructions; the question is not, nor anything after it
            assert "cache_control" not in req.body
            assert req.body["system"][-1]["cache_control"] == marker
            assert history[-1]["content"][-1]["cache_control"] == marker
            assert "cache_control" not in json.dumps(history[:-1])
            assert question["role"] == "user" and "cache_control" not in json.dumps(question)
            assert question["content"][-1]["text"] in QUESTIONS.values()
        # the first question is answered before the others are asked: they read its cache
        first, *rest = sorted(r.at for r in mine)
        assert all(answered[first] <= at for at in rest)


def test_probe_fails_when_every_call_fails(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe")
    model_stub.responder = lambda req: StubFault(status=400)
    run_dir = _run(tmp_path)
    plan = plan_evaluation(str(run_dir), "protocol_probe")
    entry = write_outcomes(plan, asyncio.run(score_all(plan))).metrics["protocol_probe"]
    assert (entry.status, entry.score, entry.error) == ("failed", None, "every probe call failed")
    # each request sent, then settled failed, unbilled
    settled = [e for e in _ledger(run_dir) if e["event_type"] == "probe_request_settled"]
    assert len(settled) == len(model_stub.requests) == 8
    assert {(e["outcome"], e["cost_usd"], e["error"].split(":")[0]) for e in settled} == {
        ("failed", 0.0, "ModelRequestRejectedError")}  # fmt: skip


def test_probe_without_the_agents_key_is_refused_before_any_call(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(EvaluationError) as refused:
        plan_evaluation(str(_run(tmp_path)), "protocol_probe")
    assert refused.value.exit_code == 77
    assert str(refused.value) == (
        "missing credentials: OPENAI_API_KEY (probe of agent field_observer, provider openai); "
        "OPENAI_API_KEY (probe of agent stabilization_engineer, provider openai)"
    )
    assert model_stub.requests == []


@pytest.mark.parametrize("scenario", ["orbital_anomaly", "drive_module_repair"])
def test_a_scenario_with_a_bank_of_its_own_is_asked_its_questions(
    prefect_api: str, tmp_path: Path, scenario: str
) -> None:
    from flows.simulate import simulate
    from glossogen.evaluation.metrics.probe import question_bank
    from glossogen.launch import RunRequest
    from glossogen.scenario import load_scenario

    bank = load_scenario(scenario).probe_questions
    assert len(bank) == 4 and set(bank.values()).isdisjoint(QUESTIONS.values())
    assert question_bank(scenario) == bank and question_bank("veyru") == QUESTIONS
    played = asyncio.run(
        simulate(
            RunRequest(
                scenario=scenario, model="scripted", provider="scripted",
                runs_dir=str(tmp_path), config="knobs_default", overrides=["round_count=1"],
            )
        )
    )  # fmt: skip
    plan = plan_evaluation(played.run_url, "protocol_probe")
    entry = write_outcomes(plan, asyncio.run(score_all(plan))).metrics["protocol_probe"]
    assert entry.rounds == 0 and entry.cost_usd == 0.0
    lines = [json.loads(x) for x in (Path(played.run_url) / "protocol_probe.jsonl").open()]
    asked = sorted((x["agent_id"], x["question_id"]) for x in lines)
    seats = sorted({x["agent_id"] for x in lines})
    assert len(seats) == 3
    assert asked == sorted((seat, qid) for seat in seats for qid in bank)


def _ledger(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "protocol_probe_requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_probe_request_is_logged_as_sent_then_settled_once_and_verified(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from glossogen.storage import RunFolder
    from glossogen.verify import verify_run

    run_dir, report = _probe(model_stub, monkeypatch, tmp_path, "gpt-4o-mini")
    unit = float(
        calc_price(Usage(**TOKENS), model_ref="gpt-4o-mini", provider_id="openai").total_price
    )
    ledger = _ledger(run_dir)
    sent = [e for e in ledger if e["event_type"] == "model_request_sent"]
    settled = [e for e in ledger if e["event_type"] == "probe_request_settled"]
    assert len(sent) == len(model_stub.requests) == 8
    assert sorted(e["request_id"] for e in settled) == sorted(e["request_id"] for e in sent)
    assert {(e["outcome"], e["input_tokens"], e["output_tokens"], e["error"]) for e in settled} == {
        ("answered", 2000, 40, None)}  # fmt: skip
    assert sum(e["cost_usd"] for e in settled) == pytest.approx(8 * unit, rel=1e-12)
    assert report.metrics["protocol_probe"].cost_usd == pytest.approx(8 * unit, rel=1e-12)
    by_id = {e["request_id"]: n for n, e in enumerate(ledger) if e in sent}
    assert all(by_id[e["request_id"]] < n for n, e in enumerate(ledger) if e in settled)
    folder = RunFolder.at(str(run_dir))
    assert verify_run(folder).broken == []

    # An evaluate killed with a request in flight: its sent line has no settling one.
    dropped = settled[0]
    kept = [e for e in ledger if e is not dropped]
    (run_dir / "protocol_probe_requests.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in kept)
    )
    line = next(n for n, e in enumerate(kept, start=1) if e.get("request_id") == dropped[
        "request_id"])  # fmt: skip
    assert [r.text for r in verify_run(folder).broken] == [
        f"{folder.run_id}: requests: protocol_probe_requests.jsonl line {line} (agent "
        f"{dropped['agent_id']}): request {dropped['request_id']} was sent and no event settles "
        "it: the evaluate that sent it was killed (the next probe logs it abandoned)"
    ]
    # The next probe (two replicas: not the cached one) settles it first: abandoned, cost
    # unknown; then its own 16 requests, each sent then settled.
    plan = plan_evaluation(str(run_dir), "protocol_probe", probe_replicas=2)
    write_outcomes(plan, asyncio.run(score_all(plan)))
    again = _ledger(run_dir)
    assert again[len(kept)] == {**again[len(kept)], "event_type": "probe_request_settled",
                                "request_id": dropped["request_id"], "outcome": "abandoned",
                                "cost_usd": None, "error": "no answer: the evaluate that sent it "
                                "was killed before it answered; its cost is unknown"}  # fmt: skip
    assert len(again) == len(kept) + 1 + 2 * 16
    assert verify_run(folder).broken == []


def test_verify_prices_the_last_probe_to_the_reports_cost(
    model_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from glossogen.cli import main

    def verify() -> tuple[int, list[str]]:
        with pytest.raises(SystemExit) as exited:
            main(["verify", str(run_dir)])
        return int(exited.value.code), capsys.readouterr().out.splitlines()

    # Two probes: two replicas (16 requests), then one (the report's entry is for two, so it
    # asks again: 8). The ledger keeps both; the report holds the last one's cost.
    run_dir, _ = _probe(model_stub, monkeypatch, tmp_path, "gpt-4o-mini", replicas=2)
    plan = plan_evaluation(str(run_dir), "protocol_probe", probe_replicas=1)
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    assert len(model_stub.requests) == 24 and len(_ledger(run_dir)) == 48
    # gpt-4o-mini: 2000 in at $0.15/M and 40 out at $0.60/M, $0.000324 a request; 8 of them
    assert report.metrics["protocol_probe"].cost_usd == pytest.approx(0.002592, abs=1e-12)
    assert verify() == (0, ["verified 1 run: 0 failed"])

    where = "veyru/1700000000: spend: protocol_probe_requests.jsonl lines 33-48 (the last probe, 8 requests)"  # noqa: E501
    report_path = run_dir / "veyru_report.json"
    kept = report_path.read_text()
    edited = json.loads(kept)
    edited["metrics"]["protocol_probe"]["cost_usd"] = 0.5
    report_path.write_text(json.dumps(edited))
    assert verify() == (1, [
        f"{where}: veyru_report.json says protocol_probe cost 0.5 but its requests are priced at "
        "0.002592", "verified 1 run: 1 failed"])  # fmt: skip

    # The report as written, a settled request's cost edited in the ledger: 7 requests priced.
    report_path.write_text(kept)
    ledger = _ledger(run_dir)
    first = next(e for e in ledger[32:] if e["event_type"] == "probe_request_settled")
    first["cost_usd"] = 0.0
    (run_dir / "protocol_probe_requests.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in ledger)
    )
    assert verify() == (1, [
        f"{where}: veyru_report.json says protocol_probe cost 0.002592 but its requests are "
        "priced at 0.002268", "verified 1 run: 1 failed"])  # fmt: skip
