"""A whole run on the real local model (llama.cpp, SmolLM2-135M): real text, real token counts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.eventlog import read_events
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
    assert result.status in ("completed", "incomplete")
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    responses = [e for e in events if e.event_type == "llm_response_received"]
    assert responses
    assert all(e.provider == "local" and e.model == "smollm2-135m" for e in responses)
    assert all(e.input_tokens > 0 and e.output_tokens > 0 and e.cost_usd == 0.0 for e in responses)
    # Every tool call the model made names an offered tool with arguments that validated.
    offered = {"wait_for_notifications", "read_channel", "send_message", "lock_in"}
    calls = [c for e in responses for c in e.tool_calls]
    assert calls and {c["tool_name"] for c in calls} <= offered
    assert not [e for e in events if e.event_type == "agent_run_cycle_failed"]
    assert events[-1].event_type == "simulation_ended"
