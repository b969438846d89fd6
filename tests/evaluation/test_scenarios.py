"""A scripted run of each shipped scenario, scored; the probe replays histories offline."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from glossogen.evaluation import Report, plan_evaluation, score_all, write_outcomes
from glossogen.eventlog import iter_event_dicts
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend

PRIMARY = {"veyru": "link", "prisoners_dilemma": "table"}


async def _play(scenario: str, runs: Path, rounds: int) -> Path:
    plan = plan_run(
        RunRequest(scenario=scenario, model="scripted", provider="scripted", runs_dir=str(runs),
                   config="knobs_default", overrides=[f"round_count={rounds}"])
    )  # fmt: skip
    claimed = claim_run(plan, str(runs))
    session = open_session(plan, claimed)
    for n in range(1, rounds + 1):
        await session.play_round(n)
    session.finish(price_spend(claimed), "completed")
    return Path(claimed.url)


@pytest.fixture(scope="module", params=["veyru", "prisoners_dilemma"])
def scored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    scenario = request.param
    run_dir = asyncio.run(_play(scenario, tmp_path_factory.mktemp("runs"), 3))
    plan = plan_evaluation(str(run_dir), "all", probe_replicas=2)
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    events = list(iter_event_dicts(str(run_dir / f"{scenario}.jsonl")))
    return scenario, run_dir, report, events


def test_language_metrics_match_the_log(scored: tuple) -> None:
    scenario, _, report, events = scored
    sent = [e for e in events if e["event_type"] == "message_sent" and e["phase"] == "main"
            and e["channel_id"] == PRIMARY[scenario]]  # fmt: skip
    per_round: dict[int, int] = defaultdict(int)
    for e in sent:
        per_round[e["round_number"]] += len(e["text"])
    assert sent, "the scripted run sent nothing"
    m = report.metrics
    assert m["mean_chars_per_round"].score == pytest.approx(
        sum(per_round.values()) / len(per_round)
    )
    assert m["mean_chars_per_message"].score == pytest.approx(
        sum(len(e["text"]) for e in sent) / len(sent)
    )
    assert m["messages_per_round"].score == pytest.approx(len(sent) / 3)
    verdicts = [e for e in events if e["event_type"] == "round_result_recorded"]
    won = sum(e["success"] for e in verdicts)
    assert (m["round_success"].score, m["round_success"].rounds) == (won / 3, 3)
    assert m["round_success"].summary == f"{won} of 3 rounds won"
    assert m["agent_cycle_failures"].score == 0.0
    assert m["cost_per_round_usd"].score == 0.0  # scripted calls are priced at zero
    assert ("budget_utilisation" in m) is (scenario == "veyru")
    if scenario == "veyru":
        budget = 150  # knobs_default round_budget_chars
        assert m["budget_utilisation"].score == pytest.approx(sum(per_round.values()) / budget / 3)


def _top_words(texts: list[str]) -> set[str]:
    import re

    counts = Counter(w for t in texts for w in re.findall(r"\w+", t.lower()))
    return set(sorted(counts, key=lambda w: (-counts[w], w))[:8])


def test_protocol_probe_replays_histories_offline(scored: tuple) -> None:
    scenario, run_dir, report, events = scored
    agents = [e["agent_id"] for e in events if e["event_type"] == "agent_registered"]
    said = {
        a: [e["args"]["text"] for e in events if e["event_type"] == "tool_call_invoked"
            and e["tool_name"] == "send_message" and e["agent_id"] == a]
        for a in agents
    }  # fmt: skip
    answers = {a: {"we", "use"} | _top_words(said[a]) for a in agents}
    pairs = [len(x & y) / len(x | y) for x, y in itertools.combinations(answers.values(), 2)]
    entry = report.metrics["protocol_probe"]
    assert (entry.status, entry.kind, entry.rounds, entry.replicas) == ("ok", "model", 0, 2)
    assert entry.score == pytest.approx(sum(pairs) / len(pairs))
    assert entry.agreement == 1.0  # the scripted answerer is deterministic
    assert entry.cost_usd == 0.0
    assert report.evaluation_cost.probe_usd == 0.0
    lines = [json.loads(x) for x in (run_dir / "protocol_probe.jsonl").read_text().splitlines()]
    assert len(lines) == len(agents) * 4 * 2
    assert {(x["agent_id"], x["question_id"]) for x in lines} == {
        (a, q) for a in agents for q in ("codes", "message_shape", "signals", "agreements")
    }
    assert all(x["answer"].startswith("We use: ") for x in lines)


def test_report_reads_back(scored: tuple) -> None:
    scenario, run_dir, report, _ = scored
    again = Report.model_validate_json((run_dir / f"{scenario}_report.json").read_text())
    assert again == report


def test_judged_metrics_on_a_scripted_run(
    scored: tuple, model_stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from tests.fixtures.model_stubs import StubReply

    scenario, run_dir, _, events = scored
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def respond(req):  # every message rated 1.0, one code per round
        prompt = json.dumps(req.messages)
        if "repetition_factor" in json.dumps(req.body.get("tools", [])):
            count = len(re.findall(r"\\n(\d+)\. \[", prompt)) + (
                "Messages of one round, in order:\\n1. [" in prompt
            )
            rows = [{"index": i, "repetition_factor": 1.0} for i in range(1, count + 1)]
            return StubReply(tool_calls=[(req.tool_names[0], {"messages": rows})])
        return StubReply(
            tool_calls=[(req.tool_names[0], {"codes": [{"code": "x", "meaning": "y"}]})]
        )

    model_stub.responder = respond
    plan = plan_evaluation(
        str(run_dir), "language_repetition,shorthand_codes", "gpt-4o-mini", "openai"
    )
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    sent = [e for e in events if e["event_type"] == "message_sent" and e["phase"] == "main"
            and e["channel_id"] == PRIMARY[scenario]]  # fmt: skip
    rounds = sorted({e["round_number"] for e in sent})
    assert report.metrics["language_repetition"].score == 1.0
    assert report.metrics["shorthand_codes"].score == 1.0
    assert report.metrics["shorthand_codes"].rounds == len(rounds)
    lines = (run_dir / "language_repetition.jsonl").read_text().splitlines()
    assert [json.loads(x)["message_id"] for x in lines] == [e["message_id"] for e in sent]
    assert {json.loads(x)["repetition_factor"] for x in lines} == {1.0}  # every message rated
    assert len(model_stub.requests) == 2 * len(rounds)  # one call per round per metric
