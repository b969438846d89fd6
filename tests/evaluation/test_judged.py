"""Judged metrics against the stub model server over real HTTP, with canned judge answers."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from glossogen.cli import main
from glossogen.evaluation import Report, plan_evaluation, score_all, write_outcomes
from tests.evaluation._logs import RunLog
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer, StubReply

SECRET = "sk-test-judge-0123456789SECRET"
FO, SE = "field_observer", "stabilization_engineer"
TOKENS = dict(input_tokens=1000, output_tokens=50)


def _prompt(req: RecordedRequest) -> str:
    return json.dumps(req.messages)


def canned(
    answers: dict[str, list[dict | StubFault]],
) -> Callable[[RecordedRequest], StubReply | StubFault]:
    """Answer the n-th request whose prompt contains a key with that key's n-th answer."""
    seen: Counter[str] = Counter()

    def respond(req: RecordedRequest) -> StubReply | StubFault:
        prompt = _prompt(req)
        key = next(k for k in answers if k in prompt)
        answer = answers[key][seen[key] % len(answers[key])]
        seen[key] += 1
        if isinstance(answer, StubFault):
            return answer
        return StubReply(tool_calls=[(req.tool_names[0], answer)], **TOKENS)

    return respond


@pytest.fixture
def openai_judge(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return model_stub


def _run(tmp_path: Path) -> Path:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "aab aab").say(1, SE, "brace jade").verdict(1, True)
    log.round(2).say(2, FO, "L4 L4").verdict(2, True)
    return log.end().write()


def _score(run_dir: Path, metrics: str, replicas: int = 2, provider: str = "openai",
           model: str = "gpt-4o-mini") -> Report:  # fmt: skip
    plan = plan_evaluation(
        str(run_dir), metrics, model, provider, ["temperature=0"], judge_replicas=replicas
    )
    return write_outcomes(plan, asyncio.run(score_all(plan)))


def _call_usd(model: str, provider_id: str) -> float:
    return float(calc_price(Usage(**TOKENS), model_ref=model, provider_id=provider_id).total_price)


REPETITION = {
    "aab aab": [
        {
            "messages": [
                {"index": 1, "repetition_factor": 2.0},
                {"index": 2, "repetition_factor": 1.0},
            ]
        },
        {
            "messages": [
                {"index": 1, "repetition_factor": 1.5},
                {"index": 2, "repetition_factor": 1.0},
            ]
        },
    ],
    "L4 L4": [{"messages": [{"index": 1, "repetition_factor": 2.0}]}],
}


def test_language_repetition_averages_replicas_per_message(
    openai_judge: StubModelServer, tmp_path: Path
) -> None:
    openai_judge.responder = canned(REPETITION)
    run_dir = _run(tmp_path)
    report = _score(run_dir, "language_repetition")
    entry = report.metrics["language_repetition"]
    # factors: "aab aab" (2.0 + 1.5) / 2 = 1.75, "brace jade" 1.0, "L4 L4" 2.0
    assert entry.status == "ok"
    assert entry.score == pytest.approx((1.75 + 1.0 + 2.0) / 3)
    assert [(o.round_number, o.value) for o in entry.per_round] == [(1, 1.375), (2, 2.0)]
    assert {o.agent_id: o.value for o in entry.per_agent} == {FO: 1.875, SE: 1.0}
    # agreement per message 1 - (max - min) / max: 1 - 0.5 / 2 = 0.75, 1.0, 1.0
    assert entry.agreement == pytest.approx((0.75 + 1.0 + 1.0) / 3)
    assert (entry.replicas, entry.rounds, entry.sidecar) == (2, 2, "language_repetition.jsonl")
    assert entry.judge.model_dump() == {
        "model": "gpt-4o-mini", "provider": "openai", "settings": {"temperature": 0.0},
    }  # fmt: skip
    unit = _call_usd("gpt-4o-mini", "openai")
    assert entry.cost_usd == pytest.approx(4 * unit, rel=1e-12)
    assert report.evaluation_cost.judge_usd == pytest.approx(4 * unit, rel=1e-12)
    assert report.evaluation_cost.total_usd == pytest.approx(4 * unit, rel=1e-12)
    assert report.evaluation_cost.estimated_cost_usd == report.evaluation_cost.total_usd
    assert report.evaluation_cost.probe_usd == 0.0
    sent = openai_judge.requests
    assert len(sent) == 4
    assert {r.body.get("temperature") for r in sent} == {0.0}
    assert {r.api_key for r in sent} == {SECRET}
    ids = [e.message_id for e in RunLog.read_messages(run_dir)]
    lines = [
        json.loads(x) for x in (run_dir / "language_repetition.jsonl").read_text().splitlines()
    ]
    assert lines == [
        {"message_id": ids[0], "round_number": 1, "sender_id": FO, "repetition_factor": 1.75},
        {"message_id": ids[1], "round_number": 1, "sender_id": SE, "repetition_factor": 1.0},
        {"message_id": ids[2], "round_number": 2, "sender_id": FO, "repetition_factor": 2.0},
    ]
    for path in run_dir.iterdir():
        assert SECRET not in path.read_text(), path


def test_a_message_every_replica_failed_on_has_a_null_factor(
    openai_judge: StubModelServer, tmp_path: Path
) -> None:
    openai_judge.responder = canned(
        {"aab aab": [StubFault(status=400)], "L4 L4": REPETITION["L4 L4"]}
    )
    run_dir = _run(tmp_path)
    entry = _score(run_dir, "language_repetition").metrics["language_repetition"]
    assert (entry.status, entry.score, entry.rounds) == ("ok", 2.0, 1)
    lines = [
        json.loads(x) for x in (run_dir / "language_repetition.jsonl").read_text().splitlines()
    ]
    assert [x["repetition_factor"] for x in lines] == [None, None, 2.0]


def test_every_replica_failing_reports_failure_not_a_score(
    openai_judge: StubModelServer, tmp_path: Path
) -> None:
    openai_judge.responder = lambda req: StubFault(status=400, message="bad request")
    run_dir = _run(tmp_path)
    report = _score(run_dir, "language_repetition,shorthand_codes,round_success")
    for name in ("language_repetition", "shorthand_codes"):
        entry = report.metrics[name]
        assert (entry.status, entry.score, entry.rounds) == ("failed", None, 0)
        assert entry.error == (
            "every judge call failed (first: ModelRequestRejectedError: status_code: 400, "
            "model_name: gpt-4o-mini, body: {'message': 'bad request', "
            "'type': 'invalid_request_error', 'param': None, 'code': None})"
        )
        assert entry.summary == f"failed: {entry.error}"
    assert report.metrics["round_success"].score == 1.0
    assert not (run_dir / "language_repetition.jsonl").exists()
    saved = json.loads((run_dir / "veyru_report.json").read_text())
    assert saved["metrics"]["language_repetition"]["status"] == "failed"


def test_shorthand_codes_with_an_anthropic_judge(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    model_stub.responder = canned(
        {
            "aab aab": [
                {
                    "codes": [
                        {"code": "L4", "meaning": "level 4"},
                        {"code": "brace", "meaning": "x"},
                    ]
                },
                {"codes": [{"code": "l4", "meaning": "intensity 4"}]},
            ],
            "L4 L4": [{"codes": []}],
        }
    )
    entry = _score(
        _run(tmp_path), "shorthand_codes", provider="anthropic", model="claude-haiku-4-5"
    ).metrics["shorthand_codes"]
    # round 1: replicas list 2 and 1 codes -> 1.5; round 2: none -> 0.0
    assert [(o.round_number, o.value) for o in entry.per_round] == [(1, 1.5), (2, 0.0)]
    assert entry.score == 0.75
    assert entry.per_round[0].note == "brace, l4"
    # Jaccard {l4, brace} vs {l4} = 1/2; two empty sets agree fully
    assert entry.agreement == pytest.approx((0.5 + 1.0) / 2)
    assert entry.cost_usd == pytest.approx(
        4 * _call_usd("claude-haiku-4-5", "anthropic"), rel=1e-12
    )
    assert {r.wire for r in model_stub.requests} == {"anthropic"}


def test_cli_writes_the_report_then_exits_1_naming_the_failed_metric(
    prefect_api: str,
    openai_judge: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    openai_judge.responder = lambda req: StubFault(status=400, message="bad request")
    run_dir = _run(tmp_path)
    args = ["evaluate", "veyru", "--run-dir", str(run_dir), "--metrics",
            "round_success,language_repetition", "--model", "gpt-4o-mini", "--provider", "openai",
            "--judge-settings", "temperature=0"]  # fmt: skip
    for attempt in (1, 2):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 1
        assert capsys.readouterr().err.splitlines() == [
            "glossogen: error: metrics failed: language_repetition (every judge call failed "
            "(first: ModelRequestRejectedError: status_code: 400, model_name: gpt-4o-mini, body: "
            "{'message': 'bad request', 'type': 'invalid_request_error', 'param': None, "
            "'code': None}))"
        ]
        report = json.loads((run_dir / "veyru_report.json").read_text())
        assert report["metrics"]["round_success"]["score"] == 1.0
        assert report["metrics"]["language_repetition"]["status"] == "failed"
        # a failure is never cached: the second evaluation asks the judge again
        assert len(openai_judge.requests) == 2 * attempt


class CountingGate:
    """A call gate that records which provider each model request took a slot of.

    Not a stand-in for project code: ``install_gate`` is the seam through which a process
    installs its gate (the ``simulate`` flow installs the Prefect-limits one), and this gate
    implements that protocol to count. The Prefect-backed gate itself is tested against real
    limits in ``tests/orchestration/test_limits.py``.
    """

    def __init__(self) -> None:
        self.slots: list[str] = []

    def slot(self, provider: str):  # noqa: ANN201
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def held():  # noqa: ANN202
            self.slots.append(provider)
            yield

        return held()

    async def release_idle(self) -> None:
        """Nothing is held between requests."""


def test_judge_requests_take_slots_of_the_provider_gate(
    openai_judge: StubModelServer, tmp_path: Path
) -> None:
    from glossogen.concurrency import install_gate

    openai_judge.responder = canned(REPETITION)
    gate = CountingGate()
    previous = install_gate(gate)
    try:
        _score(_run(tmp_path), "language_repetition")
    finally:
        install_gate(previous)
    assert gate.slots == ["openai"] * 4  # the same llm:<provider> gate simulations use
