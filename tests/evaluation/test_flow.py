"""The evaluate flow and command: caching, merging, the incomplete gate, pictures, the artifact."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path

import pytest

from flows.evaluate import evaluate
from glossogen.cli import main
from glossogen.evaluation import EvaluationError, check_request
from tests.evaluation._logs import RunLog, copy_case
from tests.evaluation.test_judged import REPETITION, canned
from tests.fixtures.model_stubs import StubModelServer

FO, SE = "field_observer", "stabilization_engineer"


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as done:
        main(["evaluate", *args])
    return int(done.value.code)


def _judged_run(tmp_path: Path) -> Path:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "aab aab").say(1, SE, "brace jade").verdict(1, True)
    log.round(2).say(2, FO, "L4 L4").verdict(2, False)
    return log.end().write()


def test_evaluating_again_reuses_cached_judge_scores(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model_stub.responder = canned(REPETITION)
    run_dir = str(_judged_run(tmp_path))
    kwargs = dict(model="gpt-4o-mini", provider="openai", judge_settings={"temperature": 0},
                  judge_replicas=2)  # fmt: skip
    first = asyncio.run(evaluate(run_dir, check_request("language_repetition", **kwargs)))
    assert len(model_stub.requests) == 4
    again = asyncio.run(
        evaluate(run_dir, check_request("language_repetition,round_success", **kwargs))
    )
    assert len(model_stub.requests) == 4  # the report's entry is up to date: no new judge call
    assert (again.scored, again.reused) == (["round_success"], ["language_repetition"])
    assert (
        again.report.metrics["language_repetition"] == first.report.metrics["language_repetition"]
    )
    (Path(run_dir) / "language_repetition.jsonl").unlink()
    asyncio.run(evaluate(run_dir, check_request("language_repetition", **kwargs)))
    assert len(model_stub.requests) == 8  # its sidecar is gone: scored (and paid) again
    assert (Path(run_dir) / "language_repetition.jsonl").exists()
    asyncio.run(
        evaluate(run_dir, check_request("language_repetition", **{**kwargs, "judge_replicas": 1}))
    )
    assert len(model_stub.requests) == 10  # other replicas: not the entry's
    asyncio.run(
        evaluate(run_dir, check_request("language_repetition", **{**kwargs, "judge_settings": {}}))
    )
    assert len(model_stub.requests) == 14  # other judge settings (2 rounds x 2 replicas again)


def test_re_evaluation_replaces_one_entry_and_keeps_the_others(
    prefect_api: str, tmp_path: Path
) -> None:
    run_dir = str(copy_case(tmp_path))
    asyncio.run(evaluate(run_dir, check_request("round_success,mean_chars_per_round")))
    path = Path(run_dir) / "veyru_report.json"
    saved = json.loads(path.read_text())
    saved["metrics"]["round_success"]["score"] = 0.123  # an entry the next evaluation replaces
    path.write_text(json.dumps(saved))
    done = asyncio.run(evaluate(run_dir, check_request("round_success,messages_per_round")))
    assert done.scored == ["round_success", "messages_per_round"]
    metrics = json.loads(path.read_text())["metrics"]
    assert list(metrics) == ["mean_chars_per_round", "messages_per_round", "round_success"]
    assert (metrics["round_success"]["score"], metrics["mean_chars_per_round"]["score"]) == (
        1.0,
        91.2,
    )


def test_a_run_without_simulation_ended_is_refused_unless_allowed(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abcd").verdict(1, True).complete(1)
    log.round(2).say(2, FO, "cut off mid-round")
    run_dir = str(log.write())
    assert _cli("veyru", "--run-dir", run_dir, "--metrics", "mean_chars_per_message") == 65
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: veyru/1700000000 has no simulation_ended (still playing, or killed): "
        "pass --allow-incomplete to score what it logged"
    ]
    assert not (Path(run_dir) / "veyru_report.json").exists()
    with pytest.raises(EvaluationError) as refused:
        asyncio.run(evaluate(run_dir, check_request("mean_chars_per_message")))
    assert refused.value.exit_code == 65
    code = _cli("veyru", "--run-dir", run_dir, "--metrics", "mean_chars_per_message",
                "--allow-incomplete")  # fmt: skip
    assert code == 0
    report = json.loads((Path(run_dir) / "veyru_report.json").read_text())
    # the cut-off round 2 never completed: only what counts (round 1) is scored
    assert report["metrics"]["mean_chars_per_message"]["score"] == 4.0
    assert report["run_status"] is None  # the report says the run never ended


METRICS = (
    "agent_cycle_failures, budget_utilisation, character_entropy_bits, cost_per_round_usd, "
    "gzip_compression_ratio, language_repetition, mean_chars_per_message, mean_chars_per_round, "
    "messages_per_round, protocol_probe, round_success, shorthand_codes, topographic_similarity, "
    "vocabulary_growth"
)


SIX = "drive_module_repair, orbital_anomaly, prisoners_dilemma, signal_game, spot_the_difference, veyru"


# bad judge settings and replica counts are the cases of tests/evaluation/test_command.py
@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (["veyru", "--run-dir", "RUN", "--metrics", "round_success,nope"], 64,
         f"--metrics: unknown metric 'nope' (known: {METRICS})"),
        (["veyru", "--run-dir", "RUN", "--metrics", "language_repetition"], 64,
         "language_repetition needs a judge: pass --model and --provider"),
        (["veyru", "--run-dir", "RUN", "--model", "m"], 64,
         "--model and --provider go together (the judge)"),
        (["veyru", "--run-dir", "RUN", "--model", "m", "--provider", "xai"], 64,
         "--provider 'xai' cannot judge (judge providers: anthropic, huggingface, openai)"),
        (["prisoners_dilemma", "--run-dir", "RUN"], 65,
         "RUN holds a 'veyru' run, not 'prisoners_dilemma'"),
        (["veyru", "--run-dir", "NOWHERE"], 66, "no event log veyru.jsonl in NOWHERE"),
        (["nosuch", "--run-dir", "RUN"], 64, f"unknown scenario 'nosuch' (installed: {SIX})"),
    ],
    ids=["unknown-metric", "judged-without-judge", "model-alone", "xai-judge", "other-scenario",
         "no-folder", "unknown-scenario"],
)  # fmt: skip
def test_a_bad_request_exits_with_its_code_and_one_exact_line_and_writes_nothing(
    args: list[str], code: int, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = str(copy_case(tmp_path))
    nowhere = str(tmp_path / "nowhere" / "1")
    args = [{"RUN": run_dir, "NOWHERE": nowhere}.get(arg, arg) for arg in args]
    assert _cli(*args) == code
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: " + line.replace("RUN", run_dir).replace("NOWHERE", nowhere)
    ]
    assert sorted(p.name for p in Path(run_dir).iterdir()) == ["veyru.jsonl"]


def test_a_judged_metric_without_its_key_exits_77_before_any_call(
    tmp_path: Path, model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.chdir(tmp_path)  # no .env above
    run_dir = str(_judged_run(tmp_path))
    code = _cli("veyru", "--run-dir", run_dir, "--metrics", "language_repetition",
                "--model", "gpt-4o-mini", "--provider", "openai")  # fmt: skip
    assert code == 77
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: missing credentials: OPENAI_API_KEY (judge provider openai)"
    ]
    assert model_stub.requests == []


def test_a_cohort_with_a_judge_but_no_key_exits_77_before_any_run_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env above
    run_dir = _judged_run(tmp_path)
    code = _cli("--runs-dir", str(run_dir.parent.parent), "--metrics", "language_repetition",
                "--model", "gpt-4o-mini", "--provider", "openai")  # fmt: skip
    assert code == 77
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: missing credentials: OPENAI_API_KEY (judge provider openai)"
    ]
    assert sorted(p.name for p in run_dir.iterdir()) == ["veyru.jsonl"]


def test_plot_writes_report_html_with_three_charts(prefect_api: str, tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abc", budget_chars=150).verdict(1, True)
    log.round(2).say(2, SE, "abcdef", budget_chars=150).verdict(2, False)
    run_dir = log.end().write()
    assert _cli("veyru", "--run-dir", str(run_dir), "--metrics", "vocabulary_growth", "--plot") == 0
    page = (run_dir / "report.html").read_text()
    images = re.findall(r'alt="([^"]+)" src="data:image/png;base64,([^"]+)"', page)
    assert [alt for alt, _ in images] == [
        "Characters per round (primary channels)",
        "Success per round",
        "Budget use per round",
    ]
    for _, data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG")
    metrics = json.loads((run_dir / "veyru_report.json").read_text())["metrics"]
    # --plot scores what the charts show
    assert set(metrics) == {"vocabulary_growth", "mean_chars_per_round", "round_success",
                            "budget_utilisation"}  # fmt: skip
    assert "<td>round_success</td><td>0.5</td>" in page


def test_the_flow_publishes_the_headline_table(prefect_api: str, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    run_dir = str(copy_case(tmp_path))
    state = asyncio.run(
        evaluate(run_dir, check_request("round_success,mean_chars_per_round"), return_state=True)
    )
    assert state.is_completed()
    flow_run_id = state.state_details.flow_run_id

    async def published() -> list:
        # the key is the run's (other tests, and other suites on a shared server, evaluate the
        # same case): this flow run's artifact is the one with its flow run id
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    key=ArtifactFilterKey(any_=["evaluation-veyru-1795939736"]),
                    flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
                ),
            )

    artifacts = asyncio.run(published())
    assert len(artifacts) == 1
    artifact = artifacts[0]
    table = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
    assert [(row["metric"], row["score"], row["rounds"]) for row in table] == [
        ("round_success", 1.0, 5),
        ("mean_chars_per_round", 91.2, 5),
    ]
