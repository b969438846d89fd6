"""GlossoGen 0.5.x logs (tests/cases) read as events of this schema through the upcaster."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from glossogen.eventlog import (
    AgentRegistered,
    LlmResponseReceived,
    MessageSent,
    RoundResultRecorded,
    SimulationEnded,
    iter_event_dicts,
    read_events,
)
from glossogen.scenario import load_scenario

CASE = (
    Path(__file__).resolve().parents[2]
    / "tests"
    / "cases"
    / "glossogen-0.5-runs"
    / "veyru"
    / "1795939736"
    / "veyru.jsonl"
)


@pytest.fixture(scope="module")
def legacy():
    load_scenario("veyru")  # registers our veyru events: the 0.5 ones must not validate as them
    return read_events(str(CASE))


def test_every_line_reads_and_only_scenario_extras_are_unknown(legacy):
    assert len(legacy.events) == 1101
    assert legacy.invalid_lines == 0
    assert legacy.truncated_tail is False
    assert Counter(d["event_type"] for d in legacy.raw_unknown) == {
        "glossogen05.veyru_stabilization_judged": 13,
        "glossogen05.veyru_case_started": 5,
        "agent_connected": 2,
    }


def test_rounds_verdicts_and_end(legacy):
    kinds = Counter(e.event_type for e in legacy.events)
    assert kinds["round_started"] == 5 and kinds["message_sent"] == 28
    verdicts = [
        (e.round_number, e.team_id, e.success)
        for e in legacy.events
        if isinstance(e, RoundResultRecorded)
    ]
    assert verdicts == [(r, "team", True) for r in range(1, 6)]
    end = next(e for e in legacy.events if isinstance(e, SimulationEnded))
    assert (end.status, end.status_detail, end.total_messages) == (
        "completed",
        "scenario_complete",
        28,
    )
    assert end.rounds_played is None and end.total_chars is None  # not carried: null, never 0


def test_messages_are_flat_with_phase_and_sender(legacy):
    sent = [e for e in legacy.events if isinstance(e, MessageSent)]
    first = sent[0]
    assert (first.sender_id, first.channel_id, first.text, first.chars, first.phase) == (
        "field_observer",
        "link",
        "r1 qi vesa mi veulno no ru",
        26,
        "main",
    )
    assert first.message_id == "90a9d02f-7fd5-4377-9f41-9169ae7bf0f0"
    per_channel = Counter()
    for e in sent:
        per_channel[(e.channel_id, e.phase)] += e.chars
    assert per_channel == {("link", "main"): 456, ("postmortem", "postmortem"): 354}


def test_agents_take_models_from_the_recorded_config(legacy):
    agents = [
        (e.agent_id, e.role, e.model, e.provider)
        for e in legacy.events
        if isinstance(e, AgentRegistered)
    ]
    assert agents == [
        ("field_observer", "Field Observer", "scripted-field_observer", "anthropic"),
        (
            "stabilization_engineer",
            "Stabilization Engineer",
            "scripted-stabilization_engineer",
            "anthropic",
        ),
    ]
    cycles = [
        e.cycle
        for e in legacy.events
        if isinstance(e, LlmResponseReceived) and e.agent_id == "field_observer"
    ]
    assert cycles == list(range(1, len(cycles) + 1))


def test_raw_dicts_are_upcast_too_and_our_lines_are_untouched(tmp_path):
    dicts = list(iter_event_dicts(str(CASE)))
    assert dicts[3]["event_type"] == "round_started" and dicts[3]["schema_version"] == 0
    ours = {
        "event_type": "round_started",
        "schema_version": 1,
        "round_number": 1,
        "event_id": "x",
        "timestamp": "2026-01-01T00:00:00Z",
        "phase": "main",
    }
    log = tmp_path / "a.jsonl"
    log.write_text(json.dumps(ours) + "\n")
    assert list(iter_event_dicts(str(log))) == [ours]
