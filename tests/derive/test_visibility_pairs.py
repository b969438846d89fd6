"""A replaced seat's filtered history keeps every tool call with its return, or neither.

A prisoners' dilemma source plays two rounds on the stub OpenAI server; its seats call tools in
the postmortem too, and the request that returns a round's last main-phase call is the one the
postmortem briefing is merged into. ``--channel-visibility postmortem=none`` drops that request:
the call it answered must go with it, or every cycle of the incoming model fails.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
)

from flows.simulate import simulate
from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork, read_history
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRunCycleFailed,
    Event,
    EventLogWriter,
    SimulationEnded,
    ToolCallInvoked,
    read_events,
)
from glossogen.launch import VIRTUAL_CLOCK_SETTING, RunRequest
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.fixtures.played_runs import play_run

SCENARIO = "prisoners_dilemma"


def talkative_player(req: RecordedRequest) -> StubReply:
    """Talk, lock in cooperate, and in the postmortem read the channel before a last word."""
    last = json.dumps(req.messages[-1]) if req.messages else ""
    called = [m.get("name") for m in req.messages if m.get("type") == "function_call"]
    if "postmortem" in last and called[-1:] != ["read_channel"]:
        return StubReply(tool_calls=[("read_channel", {"channel_id": "postmortem"})])
    if "locked" in last or "postmortem" in last or called[-1:] == ["read_channel"]:
        return StubReply(text="Done.")
    if "status" in last and ("sent" in last or "conflict" in last):
        return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})])
    return StubReply(tool_calls=[("send_message", {"channel_id": "table", "text": "together?"})])


@pytest.fixture(scope="module")
def stub(model_stub_server: StubModelServer) -> Iterator[StubModelServer]:
    """The stub OpenAI endpoint, playing dilemma seats, named by the SDK's variables."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VIRTUAL_CLOCK_SETTING, "1")
        patch.setenv("OPENAI_BASE_URL", model_stub_server.openai_base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test-visibility")
        model_stub_server.reset()
        model_stub_server.responder = talkative_player
        yield model_stub_server
        model_stub_server.reset()


@pytest.fixture(scope="module")
def source(
    prefect_api: str, stub: StubModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    request = RunRequest(
        scenario=SCENARIO,
        model="gpt-4.1",
        provider="openai",
        runs_dir=str(tmp_path_factory.mktemp("runs")),
        config="knobs_default",
        overrides=["round_count=3", "idle_floor_seconds=0.05"],
    )
    result = asyncio.run(simulate(request))
    assert result.status == "completed"
    return Path(result.run_url)


def _unpaired(history: list[ModelMessage]) -> tuple[set[str], set[str]]:
    """Tool-call ids without a return, and return ids without a call, in one history."""
    calls = {p.tool_call_id for m in history for p in m.parts if p.part_kind == "tool-call"}
    returns = {
        p.tool_call_id
        for m in history
        for p in m.parts
        if p.part_kind in ("tool-return", "retry-prompt") and p.tool_name
    }
    return calls - returns, returns - calls


def _calls(events: list[Event], phase: str, rounds: range) -> set[str]:
    """player_a's tool-call ids logged in ``phase`` of ``rounds``."""
    return {
        e.tool_call_id
        for e in events
        if isinstance(e, ToolCallInvoked)
        and e.agent_id == "player_a"
        and e.phase == phase
        and e.round_number in rounds
    }


def test_postmortem_none_drops_each_call_with_its_return_and_the_run_plays(
    source: Path, stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source_events = read_events(str(source / f"{SCENARIO}.jsonl")).events
    # The case: the source's round-2 piece rewrote the round-1 postmortem's messages, and its
    # seats called a tool in the round-1 postmortem (the only postmortem calls of the log). The
    # two seats ask at once: which call the stub answers first is the event loop's order (seen
    # both ways under load), so the calls are compared in seat order.
    assert sorted(
        (e.round_number, e.agent_id, e.tool_name)
        for e in source_events
        if isinstance(e, ToolCallInvoked) and e.phase == "postmortem"
    ) == [(1, "player_a", "read_channel"), (1, "player_b", "read_channel")]
    stub.requests = []
    with pytest.raises(SystemExit) as exited:
        main(
            ["replace-agent", SCENARIO, "--source-run-dir", str(source), "--after-round", "2",
             "--replaced-agent-id", "player_a", "--model", "gpt-4.1-mini", "--provider",
             "openai", "--runs-dir", str(tmp_path), "--channel-visibility", "postmortem=none",
             "--wait"]
        )  # fmt: skip
    assert exited.value.code == 0, capsys.readouterr().err
    (run,) = (tmp_path / SCENARIO).iterdir()
    events = read_events(str(run / f"{SCENARIO}.jsonl")).events
    assert [e for e in events if isinstance(e, AgentRunCycleFailed)] == []
    ended = next(e for e in events if isinstance(e, SimulationEnded))
    assert (ended.status, ended.rounds_played) == ("completed", 3)
    (given,) = [
        read_history(e)
        for e in events
        if isinstance(e, AgentHistoryAppended) and e.agent_id == "player_a" and e.phase == "setup"
    ]
    assert _unpaired(given) == (set(), set())
    # Every main-phase call of rounds 1-2 with its return; no postmortem call, prompt or result.
    kept = {p.tool_call_id for m in given for p in m.parts if p.part_kind == "tool-call"}
    assert kept == _calls(source_events, "main", range(1, 3))
    prompts = [p.content for m in given for p in m.parts if p.part_kind == "user-prompt"]
    assert [str(p)[:8] for p in prompts] == ["Round 1 ", "Round 2 "]
    assert not any("postmortem" in str(p) for p in prompts)
    # The incoming model's first request carries that history, each call with its result.
    first = next(r for r in stub.requests if r.model == "gpt-4.1-mini")
    sent_calls = {m["call_id"] for m in first.messages if m.get("type") == "function_call"}
    assert sent_calls == {call_id for call_id, _ in first.tool_results} == kept


def test_a_return_merged_into_the_postmortem_briefing_stays_with_its_call(
    tmp_path: Path,
) -> None:
    # Scripted veyru: the request answering a round's last main-phase call is logged again in
    # the postmortem piece with the briefing merged into it; the return keeps its main tag.
    source = play_run(str(tmp_path / "runs"), "veyru", rounds=2)
    source_events = read_events(source.log_url).events
    merged = next(
        e
        for e in source_events
        if isinstance(e, AgentHistoryAppended)
        and e.agent_id == "field_observer"
        and e.phase == "postmortem"
    )
    assert [p["part_kind"] for p in merged.messages[0]["parts"]] == ["tool-return", "user-prompt"]
    prepared = prepare_fork(
        ForkRequest(
            "veyru", source.url, 1, str(tmp_path / "derived"), 1, None, "field_observer",
            "scripted", "scripted", "postmortem=none",
        )
    )  # fmt: skip
    (given,) = [
        read_history(e)
        for e in read_events(prepared.folder.log_url).events
        if isinstance(e, AgentHistoryAppended)
        and e.agent_id == "field_observer"
        and e.phase == "setup"
    ]
    assert _unpaired(given) == (set(), set())
    kept = {p.tool_call_id for m in given for p in m.parts if p.part_kind == "tool-call"}
    main_calls = {
        e.tool_call_id
        for e in source_events
        if isinstance(e, ToolCallInvoked)
        and e.agent_id == "field_observer"
        and (e.round_number, e.phase) == (1, "main")
    }
    assert kept == main_calls and len(kept) == 11
    assert isinstance(given[-1], ModelRequest)  # the last return; no postmortem briefing
    assert [p.part_kind for p in given[-1].parts] == ["tool-return"]


def test_a_history_pydantic_ai_refuses_is_an_internal_fault_exit_70(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A history of ours that pydantic-ai refuses to continue (here: each seat's ends in a
    # suspended response) fails every cycle with no provider at fault: a bug, exit 70, not 69.
    source = play_run(str(tmp_path / "runs"), "veyru", rounds=2)
    prepared = prepare_fork(ForkRequest("veyru", source.url, 1, str(tmp_path / "derived")))
    suspended = ModelResponse(parts=[TextPart("thinking it over")], state="suspended")
    with EventLogWriter(prepared.folder.log_url) as writer:
        for seat in ("field_observer", "stabilization_engineer"):
            writer.append(
                AgentHistoryAppended(
                    round_number=1,
                    phase="setup",
                    agent_id=seat,
                    messages=ModelMessagesTypeAdapter.dump_python([suspended], mode="json"),
                )
            )
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["run", "veyru", "--resume", prepared.folder.url])
    err = capsys.readouterr().err
    assert exited.value.code == 70, err
    assert err.splitlines()[-1] == (
        "glossogen: error: run error: every agent was taken out by model errors (see "
        "agent_run_cycle_failed events); 6 of the failures were internal faults of glossogen "
        "(error_kind internal), not the provider's"
    )
    failed = [
        (e.agent_id, e.error_kind)
        for e in read_events(prepared.folder.log_url).events
        if isinstance(e, AgentRunCycleFailed)
    ]
    assert (
        sorted(failed)
        == [("field_observer", "internal")] * 3 + [("stabilization_engineer", "internal")] * 3
    )
