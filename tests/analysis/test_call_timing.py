"""``call_level``'s latency and finish reason, over real HTTP to the OpenAI stub.

A two-round prisoners_dilemma run on ``gpt-4.1-mini`` (the stub answers every seat: a
message, then ``lock_in``, then "Done." in the postmortem), played on the real clock (not the
stub's usual virtual one, where a model call takes no game time and every latency reads 0).
Each answered request's latency is its ``llm_response_received`` time minus its
``model_request_sent`` time, above 0; its finish reason is what the stub sent as pydantic-ai
names it: on the Responses wire every answer is ``completed``, which pydantic-ai calls
``stop``. A request abandoned at a phase's end has a latency only if it was answered late.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from glossogen.analysis import Measure, Query, answer
from glossogen.eventlog import (
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestSent,
    read_events,
)
from glossogen.export import RunIdSelection, build_frames, select_runs
from glossogen.launch import VIRTUAL_CLOCK_SETTING, RunRequest
from tests.fixtures.model_stubs import StubModelServer
from tests.providers.ungated import play_ungated


def test_answered_requests_have_their_latency_and_finish_reason(
    pd_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(VIRTUAL_CLOCK_SETTING)  # the real clock: a model call takes time
    request = RunRequest(scenario="prisoners_dilemma", model="gpt-4.1-mini", provider="openai",
                         runs_dir=str(tmp_path / "runs"), config="knobs_default",
                         overrides=["round_count=2", "idle_floor_seconds=0.05"])  # fmt: skip
    result = play_ungated(request)
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    sent = {e.request_id: e.timestamp for e in events if isinstance(e, ModelRequestSent)}
    expected: list[tuple[str, float | None, str | None, str | None]] = []  # seat, latency,
    # finish reason, failure kind: per request, in log order
    for e in events:
        if isinstance(e, LlmResponseReceived):
            latency = (e.timestamp - sent[e.request_id or ""]).total_seconds()
            expected.append((e.agent_id, latency, "stop", None))
        elif isinstance(e, ModelRequestAbandoned):  # the phase ended before it was answered
            late = (e.timestamp - sent[e.request_id or ""]).total_seconds() if e.answered else None
            expected.append((e.agent_id, late, None, None if e.answered else "abandoned"))
    assert len(expected) == len(pd_stub.requests) == len(sent) > 0

    records = select_runs(str(tmp_path / "runs"), RunIdSelection(run_ids=[result.run_id])).records
    calls = build_frames(records, ["call_level"])["call_level"]
    got = calls.select("agent_id", "latency_seconds", "finish_reason", "failure_kind").rows()
    assert got == expected
    answered = [row for row in got if row[3] is None]
    assert answered and all(row[1] is not None and row[1] > 0 for row in answered)

    by_reason = answer(str(tmp_path / "runs"), Query(
        grain="call", by=["finish_reason"], measures=[Measure(field="latency_seconds", agg="max")]
    ))  # fmt: skip
    frame = pl.DataFrame(expected, schema=["agent", "latency", "reason", "failure"], orient="row")
    assert {
        g.keys["finish_reason"]: (g.cells[0].value, g.cells[0].n) for g in by_reason.groups
    } == {
        reason: (part.get_column("latency").max(), part.get_column("latency").count())
        for (reason,), part in frame.partition_by("reason", as_dict=True).items()
    }
