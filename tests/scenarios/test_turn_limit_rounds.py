"""A seat that runs out of ``max_agent_turns`` before its round settles never scores a move.

In every scenario one seat asks for a channel that does not exist on every request (each answer
is a tool result, so every request is a turn) until its turn limit takes it out in round 1; the
other seats play their scripted policies. What the capped seat did not do is the cap, not a
move: the round is recorded void (``turn_limit``), never lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from glossogen.eventlog import AgentTurnLimitReached, RoundEnded, RoundResultRecorded
from glossogen.testing import play

TURNS = 30


def _asks_for_nowhere(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("read_channel", {"channel_id": "nowhere"})])


FIRST_SEAT = {
    "prisoners_dilemma": "player_a",
    "veyru": "field_observer",
    "orbital_anomaly": "astronaut",
    "drive_module_repair": "field_technician",
    "signal_game": "agent_a",
    "spot_the_difference": "viewer_left",
}
PRESET = {"spot_the_difference": "knobs_single_team"}


@pytest.mark.parametrize("scenario", sorted(FIRST_SEAT))
def test_a_seat_out_of_turns_mid_round_makes_the_round_void_not_lost(
    tmp_path: Path, scenario: str
) -> None:
    seat = FIRST_SEAT[scenario]
    run = play(
        scenario, tmp_path, rounds=1, config=PRESET.get(scenario, "knobs_default"),
        agents={seat: FunctionModel(_asks_for_nowhere)}, max_agent_turns=TURNS,
    )  # fmt: skip
    (limited,) = [e for e in run.events if isinstance(e, AgentTurnLimitReached)]
    assert (limited.agent_id, limited.round_number, limited.max_agent_turns) == (seat, 1, TURNS)
    (ended,) = [e for e in run.events if isinstance(e, RoundEnded)]
    assert ended.trigger != "settled"
    recorded = [e for e in run.events if isinstance(e, RoundResultRecorded)]
    assert recorded and all(r.void and not r.success for r in recorded)
    assert all(r.reason.startswith("void (turn_limit): ") for r in recorded)


def test_the_prisoners_dilemma_line_says_void_not_a_defection(tmp_path: Path) -> None:
    run = play(
        "prisoners_dilemma", tmp_path, rounds=1,
        agents={"player_a": FunctionModel(_asks_for_nowhere)}, max_agent_turns=TURNS,
    )  # fmt: skip
    assert [(e.success, e.void, e.reason) for e in run.events if isinstance(e, RoundResultRecorded)] == [
        (False, True, "void (turn_limit): player_a defect (missing), player_b defect (missing)")
    ]  # fmt: skip
