"""A whole run on the real local model (llama.cpp, SmolLM2-135M): real text, real token counts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.eventlog import (
    AgentRunCycleFailed,
    LlmResponseReceived,
    RoundResultRecorded,
    SimulationEnded,
    read_events,
)
from glossogen.launch import VIRTUAL_CLOCK_SETTING, RunRequest
from tests.fixtures.parts import require_part

require_part("llama_cpp", "the `local` extra: uv sync --extra local")


def test_prisoners_dilemma_plays_on_the_local_model(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On the virtual clock: the round ends when both lock in, when both are idle or at the turn
    # limit, never by its 90 s running out on a loaded machine before the model has answered.
    monkeypatch.setenv(VIRTUAL_CLOCK_SETTING, "1")
    request = RunRequest(
        scenario="prisoners_dilemma",
        model="smollm2-135m",
        provider="local",
        runs_dir=str(tmp_path),
        config="knobs_default",
        overrides=[
            "round_count=1",
            "postmortem_enabled=false",
            "idle_floor_seconds=0.1",
            "max_round_duration_seconds=90",
            "agent_model_settings.max_tokens=64",
        ],
        max_agent_turns=8,
    )
    result = asyncio.run(simulate(request))
    # Temperature 0, seeded: the same answers on every machine (the two seats' order varies,
    # they play at once). SmolLM2-135M waits for news rather than speak; both do, the round ends
    # idle and the missing moves count as defect.
    assert result.status == "completed"
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    responses = sorted(
        (e.agent_id, e.provider, e.model, e.input_tokens, e.output_tokens, e.cost_usd,
         [c["tool_name"] for c in e.tool_calls])
        for e in events
        if isinstance(e, LlmResponseReceived)
    )  # fmt: skip
    assert responses == [
        ("player_a", "local", "smollm2-135m", 673, 3, 0.0, ["wait_for_notifications"]),
        ("player_b", "local", "smollm2-135m", 673, 3, 0.0, ["wait_for_notifications"]),
    ]
    assert [e for e in events if isinstance(e, AgentRunCycleFailed)] == []
    verdicts = [
        (e.team_id, e.success, e.void) for e in events if isinstance(e, RoundResultRecorded)
    ]
    assert verdicts == [("team", False, False)]
    assert isinstance(events[-1], SimulationEnded)
