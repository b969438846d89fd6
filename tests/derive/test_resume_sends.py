"""What a resumed run's seats send after ``--allow-config-change``, read from the stub's bodies.

A prisoners' dilemma run on the stub OpenAI server plays round 1 of 2 with
``agent_model_settings.temperature=0.7`` and stops (no ``simulation_ended``, as a killed process
leaves it). It is resumed with the temperature changed to 0.2: every seat is registered anew at
the resume with the new settings, and every request of round 2 carries exactly those.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from glossogen.eventlog import AgentRegistered, RunResumed, read_events
from glossogen.launch import RunRequest, claim_run, open_session, plan_run
from tests.derive.test_derived_sends import dilemma_player, sent
from tests.fixtures.model_stubs import StubModelServer

SCENARIO = "prisoners_dilemma"


async def _play_one_round_and_stop(request: RunRequest) -> str:
    plan = plan_run(request)
    folder = claim_run(plan, request.runs_dir)
    session = open_session(plan, folder)
    await session.play_round(1)
    await session.settle_requests()
    session.writer.close()  # the process stops here: no simulation_ended
    assert session.lock is not None
    session.lock.release()
    return folder.url


def _registered(run: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    return [
        (e.round_number, e.agent_id, e.model, e.model_settings)
        for e in read_events(f"{run}/{SCENARIO}.jsonl").events
        if isinstance(e, AgentRegistered)
    ]


def test_a_resume_with_changed_settings_sends_and_records_them(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-resume")
    model_stub.responder = dilemma_player
    request = RunRequest(
        scenario=SCENARIO,
        model="gpt-4.1",
        provider="openai",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=2", "idle_floor_seconds=0.05", "postmortem_enabled=false",
                   "agent_model_settings.temperature=0.7",
                   "agents.player_b.model=gpt-4.1-mini"],
    )  # fmt: skip
    run = asyncio.run(_play_one_round_and_stop(request))
    before = [r for r in model_stub.requests if r.wire == "responses"]
    assert before and {tuple(sorted(sent(r).items())) for r in before} == {
        (("cache", True), ("max_tokens", 16384), ("temperature", 0.7))
    }
    model_stub.requests = []
    with pytest.raises(SystemExit) as exited:
        main(["run", SCENARIO, "--resume", run, "--allow-config-change",
              "agent_model_settings.temperature=0.2"])  # fmt: skip
    assert exited.value.code == 0, capsys.readouterr().err
    new = {"cache": True, "max_tokens": 16384, "temperature": 0.2}
    assert _registered(run) == [
        (0, "player_a", "gpt-4.1", {"cache": True, "max_tokens": 16384, "temperature": 0.7}),
        (0, "player_b", "gpt-4.1-mini", {"cache": True, "max_tokens": 16384, "temperature": 0.7}),
        (1, "player_a", "gpt-4.1", new),  # registered anew at the resume, after round 1
        (1, "player_b", "gpt-4.1-mini", new),
    ]
    (resumed,) = [e for e in read_events(f"{run}/{SCENARIO}.jsonl").events
                  if isinstance(e, RunResumed)]  # fmt: skip
    assert resumed.config_changes["agent_model_settings"]["now"]["temperature"] == 0.2
    after = [r for r in model_stub.requests if r.wire == "responses"]
    assert {r.model for r in after} == {"gpt-4.1", "gpt-4.1-mini"}  # both seats played round 2
    assert all(sent(r) == new for r in after)
