"""signal_game as a user runs it: the CLI, resume, fork, evaluate (its own metric), real HTTP."""

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
from glossogen.eventlog import RoundResultRecorded, RunResumed, read_events
from glossogen.launch import RunRequest
from glossogen.scenario import load_scenario
from scenarios.signal_game.events import SignalGameChoiceMade
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated

NAME = "signal_game"
PRINTED = ["lost (3 of 5 targets chosen correctly)"] + ["won (5 of 5 targets chosen correctly)"] * 4


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


def _verdicts(log: Path) -> list[tuple[int, bool, str]]:
    return [
        (e.round_number, e.success, e.reason)
        for e in read_events(str(log)).events
        if isinstance(e, RoundResultRecorded)
    ]


def test_the_cli_prints_each_round_and_the_summary(cli_run: tuple[Path, list[str]]) -> None:
    run_dir, lines = cli_run
    printed = [x.split(": ", 1)[1].split(" · ")[0] for x in lines if x.startswith("round ")]
    assert printed == PRINTED
    assert "completed: 4/5 rounds won" in lines[-1]


def test_a_run_cut_after_a_choice_resumes_to_the_same_verdicts(
    cli_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    finished, _ = cli_run
    log = finished / f"{NAME}.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    cut = next(
        i + 1
        for i, line in enumerate(lines)
        if json.loads(line)["event_type"] == "signal_game_choice_made"
        and json.loads(line)["round_number"] == 2
    )
    run = tmp_path / NAME / finished.name
    shutil.copytree(finished, run)
    (run / f"{NAME}.jsonl").write_text("".join(lines[:cut]))
    result = asyncio.run(resume(run_dir=str(run)))
    assert result.status == "completed"
    assert _verdicts(run / f"{NAME}.jsonl") == _verdicts(log)
    events = read_events(str(run / f"{NAME}.jsonl")).events
    (resumed,) = [e for e in events if isinstance(e, RunResumed)]
    assert resumed.reopened_round == 2


def test_a_fork_after_round_3_replays_rounds_4_and_5(
    cli_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    source, _ = cli_run
    prepared = prepare_fork(ForkRequest(NAME, str(source), 3, str(tmp_path)))
    assert asyncio.run(resume(run_dir=prepared.folder.url)).status == "completed"
    fork = Path(prepared.folder.url) / f"{NAME}.jsonl"
    assert _verdicts(fork) == _verdicts(source / f"{NAME}.jsonl")
    load_scenario(NAME)
    choices = [e for e in read_events(str(fork)).events if isinstance(e, SignalGameChoiceMade)]
    assert len(choices) == 25


def test_evaluate_scores_topographic_similarity(
    cli_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    source, _ = cli_run
    folder = tmp_path / "copy"
    shutil.copytree(source, folder)
    with pytest.raises(SystemExit) as done:
        main(["evaluate", NAME, "--run-dir", str(folder),
              "--metrics", "topographic_similarity,round_success"])  # fmt: skip
    assert done.value.code == 0
    report = json.loads((folder / f"{NAME}_report.json").read_text())
    text = json.dumps(report)
    assert '"summary": "4 of 5 rounds won"' in text
    assert "topographic similarity" in text and "over 25 messages" in text


# -- real HTTP: both seats stub OpenAI models -------------------------------------------------


@pytest.fixture
def openai_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return model_stub


def test_one_target_over_real_http(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    """The sender sends a word; the receiver waits for it, then chooses its first candidate."""

    def respond(req: RecordedRequest) -> StubReply:
        text = json.dumps(req.messages)
        done = len(req.tool_results)
        if "You are the sender" in text:
            if done:
                return StubReply(text="done")
            return StubReply(tool_calls=[("send_message", {"channel_id": "link", "text": "hi"})])
        if "You are the receiver" in text:
            if done == 0:
                return StubReply(tool_calls=[("wait_for_notifications", {})])
            if done == 1:
                label = text.split("Candidates: ", 1)[1].split(":", 1)[0]
                return StubReply(tool_calls=[("choose", {"label": label})])
            return StubReply(text="done")
        return StubReply(text="standing by")

    openai_stub.responder = respond  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario=NAME, model="gpt-5.4", provider="openai", runs_dir=str(tmp_path),
            config="knobs_default",
            overrides=["round_count=1", "targets_per_round=1", "postmortem_enabled=false"],
        )
    )  # fmt: skip
    assert result.status == "completed"
    log = Path(result.run_url) / f"{NAME}.jsonl"
    load_scenario(NAME)
    events = read_events(str(log)).events
    sends = [e for e in events if e.event_type == "message_sent"]
    assert [(m.sender_id, m.text) for m in sends] == [("agent_a", "hi")]
    (choice,) = [e for e in events if isinstance(e, SignalGameChoiceMade)]
    (shown,) = [e for e in events if e.event_type == "signal_game_target_revealed"]
    assert (choice.chosen, choice.chars_used, choice.message) == (
        shown.candidates[0]["label"], 2, "hi"
    )  # fmt: skip
    assert choice.correct is (choice.chosen == shown.answer)
    assert _verdicts(log) == [
        (1, choice.correct, f"{int(choice.correct)} of 1 targets chosen correctly")
    ]
    bodies = [r.body for r in openai_stub.requests if isinstance(r.body, dict)]
    assert {b["model"] for b in bodies} == {"gpt-5.4"}
    assert all(b.get("parallel_tool_calls") is False for b in bodies if b.get("tools"))


def test_a_fork_whose_knobs_drop_parallel_tool_calls_is_warned_about(
    cli_run: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _ = cli_run
    knobs = json.loads((source / "config.json").read_text())
    knobs["agent_model_settings"] = {"max_tokens": 4000}  # the object replaces the source's
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps(knobs))
    argv = ["fork-at-round", NAME, "--source-run-dir", str(source), "--after-round", "4",
            "--runs-dir", str(tmp_path / "forks"), "--knobs", str(path), "--wait"]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    warned = [x for x in capsys.readouterr().err.splitlines() if "warning" in x]
    assert warned == [
        "glossogen: warning: signal_game: agent_model_settings.parallel_tool_calls is not false, "
        "so a model may send and choose in one response; the presets set it to false"
    ]
