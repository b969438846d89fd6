"""glossogen.testing as a scenario's tests use it: scripted or FunctionModel seats, a typed run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from glossogen.eventlog import MessageSent, SimulationStarted
from glossogen.testing import play, round_verdicts
from scenarios.prisoners_dilemma.events import MoveLocked


def test_a_scripted_play_reads_back_as_the_run_view(tmp_path: Path) -> None:
    start = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)
    run = play("prisoners_dilemma", tmp_path, rounds=2, clock_start=start)
    assert run.status == "completed"
    assert round_verdicts(run) == [
        [("team", True, "player_a cooperate, player_b cooperate")],
        [("team", True, "player_a cooperate, player_b cooperate")],
    ]
    first = run.events[0]
    assert isinstance(first, SimulationStarted) and first.timestamp == start
    assert [e.move for e in run.events if isinstance(e, MoveLocked)] == ["cooperate"] * 4
    assert sorted(run.roster) == ["player_a", "player_b"]


def _defector(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Lock in "defect" at once, then end the cycle."""
    answered = any(getattr(p, "tool_name", None) == "lock_in" for p in messages[-1].parts)
    if answered:
        return ModelResponse(parts=[TextPart("Locked.")])
    return ModelResponse(parts=[ToolCallPart("lock_in", {"move": "defect"})])


def test_a_function_model_seat_plays_beside_a_scripted_one(tmp_path: Path) -> None:
    run = play(
        "prisoners_dilemma", tmp_path, rounds=1, agents={"player_b": FunctionModel(_defector)}
    )
    assert round_verdicts(run) == [[("team", False, "player_a defect (missing), player_b defect")]]
    assert [(e.agent_id, e.move) for e in run.events if isinstance(e, MoveLocked)] == [
        ("player_b", "defect")
    ]
    assert {m.sender_id for m in run.messages if m.phase == "main"} == {"player_a"}


def test_a_model_for_a_seat_the_scenario_lacks_is_refused_before_a_folder_is_claimed(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError) as refused:
        play("prisoners_dilemma", tmp_path / "runs", agents={"player_c": FunctionModel(_defector)})
    assert str(refused.value) == (
        "agent_models names 'player_c', not a seat of prisoners_dilemma (seats: player_a, player_b)"
    )
    assert not (tmp_path / "runs").exists()


def test_message_text_is_typed(tmp_path: Path) -> None:
    run = play("prisoners_dilemma", tmp_path, rounds=1, overrides=["postmortem_enabled=false"])
    sent = [m for m in run.messages if isinstance(m, MessageSent)]
    assert [(m.sender_id, m.text) for m in sent] == [
        ("player_a", "I will cooperate this round if you do."),
        ("player_b", "Agreed, I cooperate too."),
    ]
