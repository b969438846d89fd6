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
from glossogen.evaluation import EvaluationError
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
    first = asyncio.run(evaluate(run_dir, "language_repetition", **kwargs))
    assert len(model_stub.requests) == 4
    again = asyncio.run(evaluate(run_dir, "language_repetition,round_success", **kwargs))
    assert len(model_stub.requests) == 4  # the report's entry is up to date: no new judge call
    assert (again.scored, again.reused) == (["round_success"], ["language_repetition"])
    assert (
        again.report.metrics["language_repetition"] == first.report.metrics["language_repetition"]
    )
    (Path(run_dir) / "language_repetition.jsonl").unlink()
    asyncio.run(evaluate(run_dir, "language_repetition", **kwargs))
    assert len(model_stub.requests) == 8  # its sidecar is gone: scored (and paid) again
    assert (Path(run_dir) / "language_repetition.jsonl").exists()
    asyncio.run(evaluate(run_dir, "language_repetition", **{**kwargs, "judge_replicas": 1}))
    assert len(model_stub.requests) == 10  # other replicas: not the entry's
    asyncio.run(evaluate(run_dir, "language_repetition", **{**kwargs, "judge_settings": {}}))
    assert len(model_stub.requests) == 14  # other judge settings (2 rounds x 2 replicas again)


def test_re_evaluation_replaces_one_entry_and_keeps_the_others(
    prefect_api: str, tmp_path: Path
) -> None:
    run_dir = str(copy_case(tmp_path))
    asyncio.run(evaluate(run_dir, "round_success,mean_chars_per_round"))
    path = Path(run_dir) / "veyru_report.json"
    saved = json.loads(path.read_text())
    saved["metrics"]["round_success"]["score"] = 0.123  # an entry the next evaluation replaces
    path.write_text(json.dumps(saved))
    done = asyncio.run(evaluate(run_dir, "round_success,messages_per_round"))
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
    assert "has no simulation_ended" in capsys.readouterr().err
    assert not (Path(run_dir) / "veyru_report.json").exists()
    with pytest.raises(EvaluationError) as refused:
        asyncio.run(evaluate(run_dir, "mean_chars_per_message"))
    assert refused.value.exit_code == 65
    code = _cli("veyru", "--run-dir", run_dir, "--metrics", "mean_chars_per_message",
                "--allow-incomplete")  # fmt: skip
    assert code == 0
    report = json.loads((Path(run_dir) / "veyru_report.json").read_text())
    # the cut-off round 2 never completed: only what counts (round 1) is scored
    assert report["metrics"]["mean_chars_per_message"]["score"] == 4.0
    assert report["run_status"] is None  # the report says the run never ended


def test_bad_requests_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = str(copy_case(tmp_path))
    cases = [
        (["--metrics", "round_success,nope"], 64, "unknown metric 'nope' (known: agent_cycle_failures"),
        (["--metrics", "language_repetition"], 64, "language_repetition needs a judge"),
        (["--model", "m"], 64, "--model and --provider go together"),
        (["--model", "m", "--provider", "xai"], 64, "cannot judge (judge providers: anthropic"),
        (["--model", "m", "--provider", "openai", "--judge-settings", "temperature=9"], 64,
         "--judge-settings temperature='9': must be at most 2.0"),
        (["--judge-replicas", "0"], 64, "--judge-replicas 0: must be at least 1"),
    ]  # fmt: skip
    for extra, code, message in cases:
        assert _cli("veyru", "--run-dir", run_dir, *extra) == code, extra
        assert message in capsys.readouterr().err, extra
    assert _cli("prisoners_dilemma", "--run-dir", run_dir) == 65
    assert "holds a 'veyru' run, not 'prisoners_dilemma'" in capsys.readouterr().err
    assert _cli("veyru", "--run-dir", str(tmp_path / "nowhere" / "1")) == 66
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
    assert "missing credentials: OPENAI_API_KEY (judge provider openai)" in capsys.readouterr().err
    assert model_stub.requests == []


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
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    run_dir = str(copy_case(tmp_path))
    asyncio.run(evaluate(run_dir, "round_success,mean_chars_per_round"))

    async def latest() -> list:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    key=ArtifactFilterKey(any_=["evaluation-veyru-1795939736"])
                ),
                limit=1,
                sort="CREATED_DESC",
            )

    artifact = asyncio.run(latest())[0]
    table = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
    assert [(row["metric"], row["score"], row["rounds"]) for row in table] == [
        ("round_success", 1.0, 5),
        ("mean_chars_per_round", 91.2, 5),
    ]
