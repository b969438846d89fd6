"""ATIF trajectories: one per agent, validated by the ``atif`` models, from new and 0.5 logs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from atif import Trajectory
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    EventLogWriter,
    InjectionDelivered,
    LlmResponseReceived,
    RoundCompleted,
    SimulationEnded,
    SimulationStarted,
    ToolCallInvoked,
    ToolResultReceived,
    iter_event_dicts,
    read_events,
)
from glossogen.export._atif import build_trajectories, trajectory_json
from tests.fixtures.played_runs import play_run

CASE_05 = Path(__file__).parents[1] / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _valid(trajectory: Trajectory) -> Trajectory:
    """Round-trip the written JSON through the package's models (what a consumer reads)."""
    return Trajectory.model_validate_json(trajectory_json(trajectory))


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(play_run(str(tmp_path_factory.mktemp("runs")), rounds=2).url)


def test_a_played_run_gives_each_agent_its_conversation_usage_and_tool_results(
    played: Path,
) -> None:
    trajectories = build_trajectories(str(played))
    assert list(trajectories) == ["field_observer", "stabilization_engineer"]
    events = read_events(str(played / "veyru.jsonl")).events
    ended = next(e for e in events if e.event_type == "simulation_ended")
    for agent_id, built in trajectories.items():
        trajectory = _valid(built)
        assert trajectory.session_id == f"veyru/{played.name}"
        assert trajectory.agent.name == "glossogen" and trajectory.agent.model_name == "scripted"
        steps = trajectory.steps
        assert steps[0].source == "system"
        assert steps[0].message.startswith(  # type: ignore[union-attr]  # a system step's message is text
            "You are Field Observer" if agent_id == "field_observer" else "You are Stabilization"
        )
        mine = [e for e in events if getattr(e, "agent_id", None) == agent_id]
        responses = [e for e in mine if e.event_type == "llm_response_received"]
        agent_steps = [s for s in steps if s.source == "agent"]
        assert len(agent_steps) == len(responses)
        assert [s.tool_calls and [c.tool_call_id for c in s.tool_calls] for s in agent_steps] == [
            [c["tool_call_id"] for c in r.tool_calls] or None for r in responses
        ]
        user = [s.message for s in steps if s.source == "user"]
        briefings = [e.text for e in mine if e.event_type == "injection_delivered"]
        assert [m for m in user if m in briefings] == briefings  # every briefing, in order
        results = {
            r.source_call_id: r.content
            for s in steps
            if s.observation
            for r in s.observation.results
        }
        returned = [e for e in mine if e.event_type == "tool_result_received"]
        assert set(results) == {e.tool_call_id for e in returned}
        cost = next(c for c in ended.agent_costs if c.agent_id == agent_id)
        final = trajectory.final_metrics
        assert final is not None
        assert (final.total_prompt_tokens, final.total_completion_tokens) == (
            cost.input_tokens,
            cost.output_tokens,
        )
        assert final.total_cost_usd == cost.cost_usd == 0.0
        assert final.total_steps == len(steps)
        stamps = [s.timestamp or "" for s in steps]
        assert "" not in stamps
        assert stamps == sorted(stamps)  # one clock: the trajectory reads in time order


def _crafted_log(run: Path) -> None:
    """A one-agent log whose usage carries cache reads and writes, and an uncosted call."""
    run.mkdir(parents=True)
    writer = EventLogWriter(str(run / "demo.jsonl"))
    call = ToolCallPart("send_message", {"channel_id": "link", "text": "hi"}, tool_call_id="c1")
    history = [
        ModelRequest(
            parts=[UserPromptPart("Round 1: say hi.", timestamp=T0)],
            instructions="You are a1.",
            timestamp=T0,
        ),
        ModelResponse(parts=[call], usage=RequestUsage(input_tokens=1000), timestamp=T0),
        ModelRequest(
            parts=[ToolReturnPart("send_message", {"status": "sent"}, "c1", timestamp=T0)],
            instructions="You are a1.",
            timestamp=T0,
        ),
        ModelResponse(parts=[TextPart("done")], timestamp=T0),
    ]
    for event in [
        SimulationStarted(
            run_id="demo/1700000000",
            scenario_name="demo",
            scenario_config={},
            model="claude-sonnet-4-6",
            provider="anthropic",
            versions={"glossogen": "9.9.9"},
            timestamp=T0,
        ),
        AgentRegistered(
            agent_id="a1",
            role="speaker",
            display_name="A1",
            team_id="team",
            model="claude-sonnet-4-6",
            provider="anthropic",
            tools=["send_message"],
            timestamp=T0,
        ),
        InjectionDelivered(agent_id="a1", text="Round 1: say hi.", round_number=1, timestamp=T0),
        LlmResponseReceived(
            agent_id="a1",
            model="claude-sonnet-4-6",
            provider="anthropic",
            cycle=1,
            tool_calls=[{"tool_name": "send_message", "tool_call_id": "c1", "args": call.args}],
            input_tokens=1000,
            output_tokens=50,
            cache_read_tokens=600,
            cache_write_tokens=100,
            cost_usd=0.0123,
            round_number=1,
            timestamp=T0,
        ),
        ToolCallInvoked(agent_id="a1", tool_name="send_message", tool_call_id="c1", args=call.args),
        ToolResultReceived(
            agent_id="a1", tool_name="send_message", tool_call_id="c1", result={"status": "sent"}
        ),
        LlmResponseReceived(
            agent_id="a1",
            model="claude-sonnet-4-6",
            provider="anthropic",
            cycle=2,
            text="done",
            input_tokens=200,
            output_tokens=5,
            cost_usd=None,
            round_number=1,
            timestamp=T0,
        ),
        AgentHistoryAppended(
            agent_id="a1",
            messages=ModelMessagesTypeAdapter.dump_python(history, mode="json"),
            from_index=0,
            round_number=1,
        ),
        RoundCompleted(round_number=1),
        SimulationEnded(
            status="completed",
            rounds_played=1,
            rounds_won=1,
            total_messages=1,
            total_chars=2,
            total_cost_usd=None,
            duration_seconds=1.0,
        ),
    ]:
        writer.append(event)
    writer.close()


def test_usage_maps_to_atif_metrics_with_cache_writes_in_extra(tmp_path: Path) -> None:
    run = tmp_path / "demo" / "1700000000"
    _crafted_log(run)
    trajectory = _valid(build_trajectories(str(run))["a1"])
    assert trajectory.agent.version == "9.9.9"
    assert trajectory.trajectory_id == "demo/1700000000/a1"
    assert [s.model_dump(mode="json", exclude_none=True) for s in trajectory.steps] == [
        {
            "step_id": 1,
            "timestamp": "2026-11-29T12:00:00Z",
            "source": "system",
            "message": "You are a1.",
        },
        {
            "step_id": 2,
            "timestamp": "2026-11-29T12:00:00Z",
            "source": "user",
            "message": "Round 1: say hi.",
        },
        {
            "step_id": 3,
            "timestamp": "2026-11-29T12:00:00Z",
            "source": "agent",
            "model_name": "claude-sonnet-4-6",
            "message": "",
            "tool_calls": [
                {
                    "tool_call_id": "c1",
                    "function_name": "send_message",
                    "arguments": {"channel_id": "link", "text": "hi"},
                }
            ],
            "observation": {
                "results": [
                    {
                        "source_call_id": "c1",
                        "content": '{"status":"sent"}',
                        "extra": {"tool_name": "send_message"},
                    }
                ]
            },
            "metrics": {
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "cached_tokens": 600,
                "cost_usd": 0.0123,
                "extra": {"cache_write_tokens": 100},
            },
            "llm_call_count": 1,
        },
        {
            "step_id": 4,
            "timestamp": "2026-11-29T12:00:00Z",
            "source": "agent",
            "model_name": "claude-sonnet-4-6",
            "message": "done",
            "metrics": {
                "prompt_tokens": 200,
                "completion_tokens": 5,
                "cached_tokens": 0,
                "extra": {"cache_write_tokens": 0},
            },
            "llm_call_count": 1,
        },
    ]
    final = trajectory.final_metrics
    assert final is not None
    assert final.model_dump(exclude_none=True) == {
        "total_prompt_tokens": 1200,
        "total_completion_tokens": 55,
        "total_cached_tokens": 600,
        "total_steps": 4,
        "extra": {"cache_write_tokens": 100},
    }  # one call was not costed: no total cost rather than a partial one


def test_a_glossogen_05_run_gives_trajectories_through_the_upcasters() -> None:
    trajectories = build_trajectories(str(CASE_05))
    assert list(trajectories) == ["field_observer", "stabilization_engineer"]
    raw = list(iter_event_dicts(str(CASE_05 / "veyru.jsonl")))
    events = read_events(str(CASE_05 / "veyru.jsonl")).events
    for agent_id, built in trajectories.items():
        trajectory = _valid(built)
        registered = next(
            d for d in raw if d["event_type"] == "agent_registered" and d["agent_id"] == agent_id
        )
        assert trajectory.steps[0].source == "system"
        assert trajectory.steps[0].message == registered["system_prompt"]
        mine = [e for e in events if getattr(e, "agent_id", None) == agent_id]
        kinds = [e.event_type for e in mine]
        agent_steps = [s for s in trajectory.steps if s.source == "agent"]
        user_steps = [s for s in trajectory.steps if s.source == "user"]
        assert len(agent_steps) == kinds.count("llm_response_received")
        assert len(user_steps) == kinds.count("injection_delivered") + kinds.count(
            "world_event_delivered"
        )
        results = [r for s in agent_steps if s.observation for r in s.observation.results]
        assert len(results) == kinds.count("tool_result_received")
        assert all(r.source_call_id for r in results)  # every result joined to its call
    total = sum(
        len(s.observation.results) for t in trajectories.values() for s in t.steps if s.observation
    )
    assert total == 382
    assert json.loads(trajectory_json(trajectories["field_observer"]))["schema_version"] == (
        "ATIF-v1.8"
    )


def _agent_steps(trajectories: dict[str, Trajectory]) -> dict[str, int]:
    return {a: sum(s.source == "agent" for s in t.steps) for a, t in trajectories.items()}


def _responses(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        event = json.loads(line)
        if event["event_type"] == "llm_response_received":
            counts[event["agent_id"]] = counts.get(event["agent_id"], 0) + 1
    return counts


def test_a_run_still_being_written_gives_what_its_log_holds_so_far(tmp_path: Path) -> None:
    run = tmp_path / "veyru" / "1795939736"
    run.mkdir(parents=True)
    lines = (CASE_05 / "veyru.jsonl").read_text().splitlines(keepends=True)
    cut = len(lines) * 3 // 5
    (run / "veyru.jsonl").write_text("".join(lines[:cut]) + lines[cut][:40])  # torn last line
    trajectories = build_trajectories(str(run))
    assert _agent_steps(trajectories) == _responses(lines[:cut])
    for trajectory in trajectories.values():
        _valid(trajectory)


def test_a_round_replayed_after_a_resume_counts_once(played: Path, tmp_path: Path) -> None:
    lines = (played / "veyru.jsonl").read_text().splitlines(keepends=True)
    kinds = [json.loads(line)["event_type"] for line in lines]
    boundary = kinds.index("round_completed")  # end of round 1
    round_2 = lines[boundary + 1 : kinds.index("simulation_ended")]
    resumed = json.dumps(
        {
            "event_type": "run_resumed",
            "schema_version": 1,
            "timestamp": "2026-11-29T13:00:00Z",
            "round_number": 1,
            "phase": "setup",
            "after_round": 1,
            "reopened_round": 2,
        }
    )
    run = tmp_path / "veyru" / played.name
    run.mkdir(parents=True)
    log = [*lines[: boundary + 1], *round_2, resumed + "\n", *round_2, lines[-1]]
    (run / "veyru.jsonl").write_text("".join(log))
    replayed = build_trajectories(str(run))
    original = build_trajectories(str(played))
    assert _agent_steps(replayed) == _responses(lines)
    for agent_id, trajectory in replayed.items():
        assert [s.message for s in _valid(trajectory).steps] == [
            s.message for s in original[agent_id].steps
        ]
