"""Model errors over real HTTP: refusals and invalid tool arguments take an agent out loudly,
a tool that ran returns its real result, and a scenario tool out of its phase is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRunCycleFailed,
    Event,
    LlmResponseReceived,
    RoundEnded,
    RoundResultRecorded,
    SimulationEnded,
    ToolResultReceived,
    read_events,
)
from glossogen.launch import RunRequest, RunResult
from glossogen.pricing import price_call
from scenarios.prisoners_dilemma.events import MoveLocked, RoundScored
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer, StubReply
from tests.providers.test_wire_formats import pd_turn
from tests.providers.ungated import play_ungated

MODEL = "claude-sonnet-4-6"
PLAYERS = ("player_a", "player_b")
ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *overrides: str) -> tuple[RunResult, list[Event]]:
    request = RunRequest(
        scenario="prisoners_dilemma",
        model=MODEL,
        provider="anthropic",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=2", "idle_floor_seconds=0.05", *overrides],
    )
    result = play_ungated(request)
    return result, read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events


@pytest.fixture
def anthropic_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return model_stub


def _failures(events: list[Event]) -> list[tuple[str, str, int]]:
    return sorted(
        (e.agent_id, e.error_kind, e.attempts) for e in events if isinstance(e, AgentRunCycleFailed)
    )


def _only(events: list[Event], cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]


def test_a_provider_refusing_every_call_takes_both_agents_out_and_voids_the_round(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    anthropic_stub.responder = lambda req: StubFault(kind="refusal", message="I can't help.")
    result, events = _run(tmp_path, "postmortem_enabled=false", "max_round_duration_seconds=30")
    assert _failures(events) == [(p, "refusal", n) for p in PLAYERS for n in (1, 2, 3)]
    assert len(anthropic_stub.requests) == 6
    assert [e.trigger for e in _only(events, RoundEnded)] == ["agents_failed"]
    (verdict,) = _only(events, RoundResultRecorded)
    assert (verdict.void, verdict.success) == (True, False)
    assert verdict.reason == (
        "void (agents_failed): player_a defect (missing), player_b defect (missing)"
    )
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert (ended.status, ended.rounds_played, ended.rounds_won) == ("error", 1, 0)
    assert ended.model_errors == {"refusal": 6}
    # Each refusal was answered and billed: 10 input and 5 output tokens, six times.
    one = price_call("anthropic", MODEL, input_tokens=10, output_tokens=5)
    assert one == 0.000105  # genai-prices: $3 per million in, $15 per million out
    assert len(_only(events, LlmResponseReceived)) == 6
    assert ended.total_cost_usd == 6 * one  # $0.00063
    assert (result.status, result.model_errors) == ("error", {"refusal": 6})


def test_a_model_calling_lock_in_with_a_bad_move_is_taken_out_and_never_scored(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    anthropic_stub.responder = lambda req: StubReply(tool_calls=[("lock_in", {"move": "banana"})])
    result, events = _run(tmp_path, "postmortem_enabled=false", "max_round_duration_seconds=30")
    assert _failures(events) == [
        (p, "invalid_tool_arguments", n) for p in PLAYERS for n in (1, 2, 3)
    ]
    assert len(anthropic_stub.requests) == 6
    assert not _only(events, MoveLocked)
    (verdict,) = _only(events, RoundResultRecorded)
    assert (verdict.void, verdict.success) == (True, False)
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert (ended.status, ended.rounds_played) == ("error", 1)
    assert ended.model_errors == {"invalid_tool_arguments": 6}
    assert result.error == (
        "every agent was taken out by model errors (see agent_run_cycle_failed events)"
    )


def test_one_bad_argument_then_a_good_one_is_one_model_error_and_the_round_counts(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    def player(req: RecordedRequest) -> StubReply:
        last = json.dumps(req.messages[-1])
        if "locked" in last:
            return StubReply(text="Done.")
        if "literal_error" in last or "cooperate" in last or "defect" in last:
            return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})])
        return StubReply(tool_calls=[("lock_in", {"move": "banana"})])

    anthropic_stub.responder = player
    result, events = _run(tmp_path, "round_count=1", "postmortem_enabled=false")
    assert _failures(events) == [(p, "invalid_tool_arguments", 1) for p in PLAYERS]
    assert sorted((e.agent_id, e.move) for e in _only(events, MoveLocked)) == [
        ("player_a", "cooperate"),
        ("player_b", "cooperate"),
    ]
    assert (result.status, result.rounds_won, result.rounds_played) == ("completed", 1, 1)
    assert result.model_errors == {"invalid_tool_arguments": 2}


def _pd_player(req: RecordedRequest) -> StubReply:
    """Talk, lock in cooperate; in the postmortem, try to lock in again, then stop."""
    phase, called = pd_turn(req)  # from the seat's own history, not the message last to arrive
    if phase == "postmortem":
        if "lock_in" in called:
            return StubReply(text="Done.")
        return StubReply(tool_calls=[("lock_in", {"move": "defect"})])
    if "lock_in" in called:
        return StubReply(text="Done.")
    if "send_message" in called:
        return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})])
    return StubReply(tool_calls=[("send_message", {"channel_id": "table", "text": "cooperate?"})])


def test_a_tool_that_ran_returns_its_result_and_lock_in_in_the_postmortem_is_refused(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    anthropic_stub.responder = _pd_player
    result, events = _run(tmp_path, "postmortem_duration_seconds=10")
    assert (result.status, result.rounds_won) == ("completed", 2)
    assert not _only(events, AgentRunCycleFailed)
    main = [e for e in _only(events, ToolResultReceived) if e.tool_name == "lock_in"]
    locked = [e for e in main if e.phase == "main"]
    # The second lock-in of each round settles it and ends the phase at once: its result is
    # still the real one, in the log and in the history the agent carries on with.
    assert sorted(
        (e.round_number, e.agent_id, e.result["status"], e.interrupted) for e in locked
    ) == [(r, p, "locked", False) for r in (1, 2) for p in PLAYERS]
    returns = {
        part["tool_call_id"]: part["content"]
        for e in _only(events, AgentHistoryAppended)
        for m in e.messages
        for part in m["parts"]
        if part.get("part_kind") == "tool-return" and part.get("tool_name") == "lock_in"
    }
    assert {returns[e.tool_call_id]["status"] for e in locked} == {"locked"}
    refused = [e for e in main if e.phase == "postmortem"]
    assert sorted((e.round_number, e.agent_id) for e in refused) == [
        (r, p) for r in (1, 2) for p in PLAYERS
    ]
    for e in refused:
        assert e.result == {
            "status": "refused",
            "reason": f"lock_in has no effect in the postmortem: round {e.round_number} was "
            "already scored; nothing was done",
        }
        assert e.refused == e.result["reason"]
    # Only the main phase's moves were locked and scored.
    assert [e.phase for e in _only(events, MoveLocked)] == ["main"] * 4
    assert [s.moves for s in _only(events, RoundScored)] == [
        {"player_a": "cooperate", "player_b": "cooperate"}
    ] * 2


def test_the_cli_exits_69_and_names_the_model_errors_in_its_closing_line(
    prefect_api: str,
    anthropic_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The command in this process (glossogen.cli.main): its exit code and its closing line.
    anthropic_stub.responder = lambda req: StubFault(kind="refusal")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["run", "prisoners_dilemma", "--model", MODEL, "--provider", "anthropic",
              "--runs-dir", "./runs", "--config", "knobs_default", "round_count=2",
              "postmortem_enabled=false", "max_round_duration_seconds=30",
              "idle_floor_seconds=0.05"])  # fmt: skip
    out, err = capsys.readouterr()
    assert exited.value.code == 69, err
    (log,) = (tmp_path / "runs").glob("prisoners_dilemma/*/prisoners_dilemma.jsonl")
    ended = read_events(str(log)).events[-1]
    assert isinstance(ended, SimulationEnded)
    closing = out.strip().splitlines()[-1]
    # Six refusals, each billed as the stub's default answer (10 in, 5 out: $0.000105); the
    # seconds are the process's real ones, read from the log the line sums up. No postmortem
    # was held, so the line does not say "(postmortems included)".
    assert closing == (
        f"prisoners_dilemma/{log.parent.name} error: 0/1 rounds won · 0 messages · 0 characters "
        "· $0.000630 · tokens 60 in (0 cache read, 0 cache write, "
        f"0 of it 1 h), 30 out, 0.0% of input from cache · {ended.duration_seconds:.1f} s · "
        "model errors: 6 refusal"
    )
