"""Tool calls cut off by a phase end are closed, so the agent's history can go on."""

import pytest
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from glossogen.engine._runner import INTERRUPTED, close_dangling_calls
from glossogen.scenario import ScriptedMove
from tests.engine._tiny import Tiny, knobs, play

pytestmark = pytest.mark.timeout(30)

PROMPT = ModelRequest(parts=[UserPromptPart("Round 1 begins.")])
WAIT = ToolCallPart("wait_for_notifications", {}, tool_call_id="a-1")
SEND = ToolCallPart("send_message", {"channel_id": "chat", "text": "hi"}, tool_call_id="a-2")


@pytest.mark.parametrize("calls", [[WAIT], [WAIT, SEND]], ids=["one call", "two calls"])
def test_a_history_ending_in_tool_calls_gets_an_interrupted_return_for_each(calls):
    history = [PROMPT, ModelResponse(parts=[TextPart("thinking"), *calls])]
    closed = close_dangling_calls(history)
    assert closed[:2] == history
    assert len(closed) == 3
    (request,) = closed[2:]
    assert isinstance(request, ModelRequest)
    returns = [(p.tool_name, p.tool_call_id, p.content) for p in request.parts]
    assert returns == [(c.tool_name, c.tool_call_id, INTERRUPTED) for c in calls]
    assert all(isinstance(p, ToolReturnPart) for p in request.parts)
    assert INTERRUPTED == "interrupted: the phase ended before this tool returned"


UNCHANGED = {
    "empty": [],
    "prompt only": [PROMPT],
    "ends in text": [PROMPT, ModelResponse(parts=[TextPart("Done.")])],
    "call already returned": [
        PROMPT,
        ModelResponse(parts=[WAIT]),
        ModelRequest(parts=[ToolReturnPart("wait_for_notifications", {}, tool_call_id="a-1")]),
    ],
}


@pytest.mark.parametrize("history", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_a_history_not_ending_in_a_tool_call_is_unchanged(history):
    assert close_dangling_calls(history) is history


def wait_forever(view):
    """Wait once per round, then stop (never reached: nobody ever writes)."""
    if view.tool_results("wait_for_notifications"):
        return ScriptedMove.finish()
    return ScriptedMove.call("wait_for_notifications")


def test_agents_blocked_waiting_at_the_phase_end_play_the_next_round():
    played = play(Tiny(knobs(), wait_forever), rounds=2)
    # Both block in wait_for_notifications: idle, so each round ends all_idle.
    assert [s.trigger for s in played.summaries] == ["all_idle", "all_idle"]
    assert played.per_agent("llm_response_received", round_number=2) == {"a": 1, "b": 1}
    assert played.of("agent_run_cycle_failed") == []
    for runner in played.engine.runners.values():
        returns = [
            p.content
            for m in runner.history
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        assert returns == [INTERRUPTED, INTERRUPTED]  # one cut-off wait per round
