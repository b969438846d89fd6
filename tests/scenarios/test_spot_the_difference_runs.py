"""spot_the_difference as a user runs it: the CLI, resume, fork, evaluate, real HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flows.simulate import resume
from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import JudgeCalled, RoundResultRecorded, RunResumed, read_events
from glossogen.launch import RunRequest
from glossogen.scenario import load_scenario
from scenarios.spot_the_difference.events import (
    SpotTheDifferenceRoundRanked,
    SpotTheDifferenceSubmissionJudged,
)
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated

NAME = "spot_the_difference"
PRINTED = [  # the ranking's winners (ranked: a, a, a, a, b) won; the other eligible team not
    "team a won (all 2 differences found, 583 characters)",
    "team b lost (viewer_left_b: 1 of 2 differences found, 0 false positive(s))",
    "team a won (all 4 differences found, 553 characters)",
    "team b eligible (all 4 differences found, 782 characters)",
    "team a won (all 3 differences found, 404 characters)",
    "team b eligible (all 3 differences found, 544 characters)",
    "team a won (all 4 differences found, 551 characters)",
    "team b eligible (all 4 differences found, 765 characters)",
    "team a eligible (all 3 differences found, 537 characters)",
    "team b won (all 3 differences found, 384 characters)",
]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "glossogen", *args],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def cli_run(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    cwd = tmp_path_factory.mktemp(NAME)
    done = _cli(
        "run", NAME, "--model", "scripted", "--provider", "scripted",
        "--runs-dir", "./runs", "--config", "knobs_default", cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    run_dir = Path(next(x for x in lines if x.startswith("new_run_dir=")).split("=", 1)[1])
    return run_dir, lines


def _verdicts(log: Path) -> list[tuple[int, str, bool, str]]:
    return [
        (e.round_number, e.team_id, e.success, e.reason)
        for e in read_events(str(log)).events
        if isinstance(e, RoundResultRecorded)
    ]


def test_the_cli_plays_two_teams_and_counts_rounds_every_team_won(
    cli_run: tuple[Path, list[str]],
) -> None:
    run_dir, lines = cli_run
    assert "completed: 4/5 rounds won" in lines[-1]
    printed = [x.split(": ", 1)[1].split(" · ")[0] for x in lines if x.startswith("round ")]
    assert printed == PRINTED
    verdicts = _verdicts(run_dir / f"{NAME}.jsonl")
    assert [(n, t, ok) for n, t, ok, _ in verdicts] == [
        (n, t, not (n == 1 and t == "b")) for n in range(1, 6) for t in ("a", "b")
    ]
    load_scenario(NAME)  # registers its events, so the reader knows them
    ranked = [
        e.winners
        for e in read_events(str(run_dir / f"{NAME}.jsonl")).events
        if isinstance(e, SpotTheDifferenceRoundRanked)
    ]
    assert ranked == [["a"], ["a"], ["a"], ["a"], ["b"]]


def test_a_run_cut_after_a_judged_answer_resumes_to_the_same_verdicts(
    cli_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    finished, _ = cli_run
    log = finished / f"{NAME}.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    cut = next(
        i + 1
        for i, line in enumerate(lines)
        if json.loads(line)["event_type"] == "spot_the_difference_submission_judged"
    )
    run = tmp_path / NAME / finished.name
    shutil.copytree(finished, run)
    (run / f"{NAME}.jsonl").write_text("".join(lines[:cut]))
    result = asyncio.run(resume(run_dir=str(run)))
    assert result.status == "completed"
    assert _verdicts(run / f"{NAME}.jsonl") == _verdicts(log)
    events = read_events(str(run / f"{NAME}.jsonl")).events
    (resumed,) = [e for e in events if isinstance(e, RunResumed)]
    assert resumed.reopened_round == 1


def test_a_fork_after_round_2_replays_rounds_3_to_5(
    cli_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    source, _ = cli_run
    prepared = prepare_fork(ForkRequest(NAME, str(source), 2, str(tmp_path)))
    result = asyncio.run(resume(run_dir=prepared.folder.url))
    assert result.status == "completed"
    fork = Path(prepared.folder.url)
    assert _verdicts(fork / f"{NAME}.jsonl") == _verdicts(source / f"{NAME}.jsonl")
    judged = [
        e
        for e in read_events(str(fork / f"{NAME}.jsonl")).events
        if isinstance(e, SpotTheDifferenceSubmissionJudged)
    ]
    assert len(judged) == 20  # 4 per round: rounds 1-2 copied, 3-5 played again


def test_evaluate_scores_round_success_over_both_teams(
    cli_run: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _ = cli_run
    folder = tmp_path / "copy"
    shutil.copytree(source, folder)
    with pytest.raises(SystemExit) as done:
        main(["evaluate", NAME, "--run-dir", str(folder), "--metrics", "round_success"])
    assert done.value.code == 0
    report = json.loads((folder / f"{NAME}_report.json").read_text())
    text = json.dumps(report)
    assert '"summary": "4 of 5 rounds won"' in text and '"score": 0.8' in text
    assert text.count('"team_id": "a"') >= 5 and text.count('"team_id": "b"') >= 5
    assert (
        capsys.readouterr().out.splitlines()[-1].startswith(f"report: {folder}/{NAME}_report.json")
    )


# -- real HTTP: every seat and the judge a stub OpenAI model ----------------------------------


@pytest.fixture
def openai_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return model_stub


ANSWER = ["the large olive wheel in the centre was removed"]


def test_one_team_over_real_http_with_an_llm_judge(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    def respond(req: RecordedRequest) -> StubReply:
        if "final_result" in req.tool_names:  # the judge's item ruling
            ruling = {"matched": [1], "false_positives": 0, "reason": "the one removal, stated"}
            return StubReply(tool_calls=[("final_result", ruling)])
        if req.tool_results:
            return StubReply(text="done")
        return StubReply(tool_calls=[("submit_differences", {"differences": ANSWER})])

    openai_stub.responder = respond  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario=NAME, model="gpt-5.4", provider="openai", runs_dir=str(tmp_path),
            config="knobs_single_team",
            overrides=["round_count=1", "postmortem_enabled=false", "easy_round_numbers=[1]",
                       "judge_provider=openai", "judge_model=gpt-5.4"],
        )
    )  # fmt: skip
    assert result.status == "completed"
    log = Path(result.run_url) / f"{NAME}.jsonl"
    events = read_events(str(log)).events
    calls = [e for e in events if isinstance(e, JudgeCalled)]
    assert [(c.provider, c.question, c.detail, c.success) for c in calls] == [
        ("openai", f"1. {ANSWER[0]}", {"matched": [1], "false_positives": 0}, True)
    ] * 2
    judged = [e for e in events if isinstance(e, SpotTheDifferenceSubmissionJudged)]
    assert sorted((j.agent_id, j.complete) for j in judged) == [
        ("viewer_left", True),
        ("viewer_right", True),
    ]
    assert _verdicts(log) == [(1, "team", True, "the 1 difference found, 0 characters")]
    assert any("submit_differences" in r.tool_names for r in openai_stub.requests)
