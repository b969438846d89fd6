"""A seat that reaches its turn limit with a tool call answered logs that call's result once."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from glossogen.eventlog import (
    AgentTurnLimitReached,
    ToolCallInvoked,
    ToolResultReceived,
    read_events,
)
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend


@pytest.mark.parametrize("turns", [3, 5, 8])
def test_every_tool_call_has_one_result_when_the_turn_limit_cuts_a_seat_off(
    turns: int, tmp_path: Path
) -> None:
    request = RunRequest(scenario="veyru", model="scripted", provider="scripted",
                         runs_dir=str(tmp_path), config="knobs_default",
                         overrides=["round_count=1"], max_agent_turns=turns)  # fmt: skip

    async def play() -> str:
        plan = plan_run(request)
        folder = claim_run(plan, str(tmp_path))
        session = open_session(plan, folder)
        await session.play_round(1)
        session.finish(price_spend(folder), "incomplete")
        return folder.log_url

    events = read_events(asyncio.run(play())).events
    cut = {e.agent_id for e in events if isinstance(e, AgentTurnLimitReached)}
    assert cut  # the limit did cut a seat off
    results = Counter(e.tool_call_id for e in events if isinstance(e, ToolResultReceived))
    calls = [e.tool_call_id for e in events if isinstance(e, ToolCallInvoked)]
    assert [c for c, n in results.items() if n > 1] == []
    assert sorted(results) == sorted(calls)  # each call answered exactly once
