"""A scripted run of each shipped scenario, scored; the probe replays histories offline."""

from __future__ import annotations

import asyncio
import json
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


# What the seeded scripted run of 3 rounds logs on its primary channel, counted once by hand:
# veyru 13 messages of 466 characters (budget 150 a round), prisoners_dilemma 6 of 186; both
# lose round 1 and win rounds 2 and 3.
LANGUAGE = {
    "veyru": {
        "mean_chars_per_round": 466 / 3,
        "mean_chars_per_message": 466 / 13,
        "messages_per_round": 13 / 3,
        "budget_utilisation": 466 / 150 / 3,
    },
    "prisoners_dilemma": {
        "mean_chars_per_round": 62.0,
        "mean_chars_per_message": 31.0,
        "messages_per_round": 2.0,
    },
}
# The scripted probe answers "We use: " and the agent's 8 most used words: the two teammates'
# answers share 3 of 17 words in veyru, 7 of 13 in prisoners_dilemma (Jaccard).
PROBE = {"veyru": 3 / 17, "prisoners_dilemma": 7 / 13}


def test_language_metrics_match_the_log(scored: tuple) -> None:
    scenario, _, report, _ = scored
    m = report.metrics
    assert {name: m[name].score for name in LANGUAGE[scenario]} == LANGUAGE[scenario]
    assert (m["round_success"].score, m["round_success"].rounds) == (2 / 3, 3)
    assert m["round_success"].summary == "2 of 3 rounds won"
    assert m["agent_cycle_failures"].score == 0.0
    assert m["cost_per_round_usd"].score == 0.0  # scripted calls are priced at zero
    assert ("budget_utilisation" in m) is (scenario == "veyru")


def test_protocol_probe_replays_histories_offline(scored: tuple) -> None:
    scenario, run_dir, report, events = scored
    agents = [e["agent_id"] for e in events if e["event_type"] == "agent_registered"]
    assert (
        agents
        == {
            "veyru": ["field_observer", "stabilization_engineer"],
            "prisoners_dilemma": ["player_a", "player_b"],
        }[scenario]
    )
    entry = report.metrics["protocol_probe"]
    assert (entry.status, entry.kind, entry.rounds, entry.replicas) == ("ok", "model", 0, 2)
    assert entry.score == PROBE[scenario]
    assert entry.agreement == 1.0  # the scripted answerer is deterministic
    assert entry.cost_usd == 0.0
    assert report.evaluation_cost.probe_usd == 0.0
    lines = [json.loads(x) for x in (run_dir / "protocol_probe.jsonl").read_text().splitlines()]
    assert len(lines) == 16  # 2 agents x 4 questions x 2 replicas
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
