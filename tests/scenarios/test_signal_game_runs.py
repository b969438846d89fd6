"""signal_game over real HTTP: both seats stub OpenAI models (its CLI runs: test_scenario_runs)."""

from __future__ import annotations

import json
from pathlib import Path

from glossogen.eventlog import read_events
from glossogen.launch import RunRequest
from glossogen.scenario import load_scenario
from scenarios.signal_game.events import SignalGameChoiceMade
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated
from tests.scenarios._runs import verdicts

NAME = "signal_game"


# -- real HTTP: both seats stub OpenAI models -------------------------------------------------


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
    # seed 42 does not show the target first in the receiver's order: the first candidate is wrong
    assert (choice.chosen, choice.correct, shown.answer) == ("brim", False, "vask")
    assert verdicts(log) == [(1, "pair", False, "0 of 1 targets chosen correctly")]
    bodies = [r.body for r in openai_stub.requests if isinstance(r.body, dict)]
    assert {b["model"] for b in bodies} == {"gpt-5.4"}
    assert all(b.get("parallel_tool_calls") is False for b in bodies if b.get("tools"))
