"""orbital_anomaly and drive_module_repair as a user runs them: the CLI, resume, real HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.eventlog import JudgeCalled, RoundResultRecorded, RunResumed, read_events
from glossogen.launch import RunRequest
from scenarios.drive_module_repair.catalogue import draw_case
from scenarios.drive_module_repair.events import DriveModuleRepairReplacementJudged
from scenarios.orbital_anomaly.events import OrbitalAnomalyActuationJudged
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated

SUMMARY = {
    "orbital_anomaly": ("3/4 rounds won", [
        "won (3 of 3 stages cleared)", "won (2 of 2 stages cleared)",
        "lost (budget exceeded at stage 2 of 3)", "won (5 of 5 stages cleared)",
    ]),
    "drive_module_repair": ("3/4 rounds won", [
        "won (3 of 3 faults fixed)", "lost (budget exceeded with 4 of 5 faults fixed)",
        "won (3 of 3 faults fixed)", "won (4 of 4 faults fixed)",
    ]),
}  # fmt: skip
"""What ``glossogen run`` prints of a 4-round scripted run: three rounds won, one lost."""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "glossogen", *args],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module", params=sorted(SUMMARY))
def cli_run(
    request: pytest.FixtureRequest, prefect_api: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, list[str]]:
    scenario = request.param
    cwd = tmp_path_factory.mktemp(scenario)
    done = _cli(
        "run", scenario, "--model", "scripted", "--provider", "scripted",
        "--runs-dir", "./runs", "--config", "knobs_default", "round_count=4", cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    run_dir = Path(next(x for x in lines if x.startswith("new_run_dir=")).split("=", 1)[1])
    return scenario, run_dir, lines


def test_the_cli_prints_each_round_and_the_summary(cli_run: tuple[str, Path, list[str]]) -> None:
    scenario, run_dir, lines = cli_run
    won, rounds = SUMMARY[scenario]
    printed = [x.split(": ", 1)[1].split(" · ")[0] for x in lines if x.startswith("round ")]
    assert printed == rounds
    assert f"completed: {won}" in lines[-1]
    assert (run_dir / f"{scenario}.jsonl").is_file()


def _verdicts(log: Path) -> list[tuple[int, bool, str]]:
    return [
        (e.round_number, e.success, e.reason)
        for e in read_events(str(log)).events
        if isinstance(e, RoundResultRecorded)
    ]


def test_a_run_cut_mid_stage_resumes_to_the_same_verdicts(
    cli_run: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    from flows.simulate import resume

    scenario, finished, _ = cli_run
    log = finished / f"{scenario}.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    judged = f"{scenario}_{'actuation' if scenario == 'orbital_anomaly' else 'replacement'}_judged"
    # right after the first accepted stage of round 1 (a three-stage round in both scenarios)
    cut = next(
        i + 1
        for i, line in enumerate(lines)
        if json.loads(line)["event_type"] == judged and json.loads(line)["match"]
    )
    assert json.loads(lines[cut - 1])["round_number"] == 1
    run = tmp_path / scenario / finished.name
    shutil.copytree(finished, run)
    (run / f"{scenario}.jsonl").write_text("".join(lines[:cut]))
    result = asyncio.run(resume(run_dir=str(run)))
    assert result.status == "completed"
    assert _verdicts(run / f"{scenario}.jsonl") == _verdicts(log)
    events = read_events(str(run / f"{scenario}.jsonl")).events
    (resumed,) = [e for e in events if isinstance(e, RunResumed)]
    assert resumed.reopened_round == 1


# -- real HTTP: every seat a stub OpenAI model with canned tool calls ----------------------


@pytest.fixture
def openai_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return model_stub


def _actor(tool: str, action: str) -> object:
    """The seat holding ``tool`` acts once, then says it is done; every other seat stands by."""

    def respond(req: RecordedRequest) -> StubReply:
        if tool in req.tool_names:
            if req.tool_results:
                return StubReply(text="done")
            return StubReply(tool_calls=[(tool, {"action": action})])
        return StubReply(text="standing by")

    return respond


def test_orbital_anomaly_over_real_http(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    case = {
        "stages": [{"fault_id": "CM-02", "unit": "transponder 2", "configuration": "nominal string",
                    "hold_seconds": 12, "setting": 7}],
        "variant_index": 2,
    }  # fmt: skip
    action = (
        "change over to the other transponder and offset the carrier of transponder 2 "
        "(nominal string) by 7 kilohertz, hold 12 seconds"
    )
    openai_stub.responder = _actor("actuate_panel", action)  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario="orbital_anomaly", model="gpt-5.4", provider="openai",
            runs_dir=str(tmp_path), config="knobs_default",
            overrides=["round_count=1", "postmortem_enabled=false", "judge_provider=scripted",
                       "scheduled_events=" + json.dumps(
                           [{"kind": "inject_case", "round": 1, "payload": case}])],
        )
    )  # fmt: skip
    assert result.status == "completed"
    events = read_events(f"{result.run_url}/orbital_anomaly.jsonl").events
    (judged,) = [e for e in events if isinstance(e, OrbitalAnomalyActuationJudged)]
    assert (judged.action, judged.match) == (action, True)
    assert judged.reason == "procedure on the transponder 2 at 7 kilohertz, held 12 s"
    assert _verdicts(Path(result.run_url) / "orbital_anomaly.jsonl") == [
        (1, True, "1 of 1 stages cleared")
    ]
    seats = {r.body["model"] for r in openai_stub.requests if isinstance(r.body, dict)}
    assert seats == {"gpt-5.4"}
    assert any("actuate_panel" in r.tool_names for r in openai_stub.requests)


def test_drive_module_repair_over_real_http_with_a_judge_split_two_to_one(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    import random

    drawn = draw_case(random.Random("http"), module_count_weights=[1], fault_count_weights=[1])
    module = drawn.modules[0]
    payload = {"modules": [module.model_dump(mode="json")]}
    (component,) = module.faulty
    action = f"Drive module {module.module}, {component}: {module.replacement(component).compact()}"
    seat = _actor("service_component", action)
    votes = itertools.cycle([True, False, True])

    def respond(req: RecordedRequest) -> StubReply:
        if "final_result" in req.tool_names:  # the judge's structured ruling
            yes = next(votes)
            reason = "every step as the sheet says" if yes else "the torque reads wrong"
            return StubReply(tool_calls=[("final_result", {"success": yes, "reason": reason})])
        return seat(req)  # type: ignore[operator]

    openai_stub.responder = respond  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario="drive_module_repair", model="gpt-5.4", provider="openai",
            runs_dir=str(tmp_path), config="knobs_default",
            overrides=["round_count=1", "postmortem_enabled=false", "judge_provider=openai",
                       "judge_model=gpt-5.4",
                       "scheduled_events=" + json.dumps(
                           [{"kind": "inject_case", "round": 1, "payload": payload}])],
        )
    )  # fmt: skip
    assert result.status == "completed"
    log = Path(result.run_url) / "drive_module_repair.jsonl"
    events = read_events(str(log)).events
    calls = [e for e in events if isinstance(e, JudgeCalled)]
    assert sorted(c.success for c in calls) == [False, True, True]
    assert all(c.provider == "openai" and c.question == action for c in calls)
    (judged,) = [e for e in events if isinstance(e, DriveModuleRepairReplacementJudged)]
    assert sorted(v["success"] for v in judged.votes) == [False, True, True]
    assert (judged.match, judged.reason) == (True, "every step as the sheet says")
    assert _verdicts(log) == [(1, True, "1 of 1 faults fixed")]
