"""A replaced seat's first model request, as the provider receives it over HTTP (stub server)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from flows.simulate import resume, simulate
from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import ToolCallInvoked, read_events
from glossogen.launch import RunRequest
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer

NEW_MODEL = "claude-sonnet-4-6"


@pytest.fixture(scope="module")
def source(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    request = RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(runs),
        config="knobs_default",
        overrides=["round_count=3"],
    )
    result = asyncio.run(simulate(request))
    assert result.status == "completed"
    return Path(result.run_url)


def _source_tool_calls(source: Path, rounds: range) -> set[str]:
    return {
        e.tool_call_id
        for e in read_events(str(source / "veyru.jsonl")).events
        if isinstance(e, ToolCallInvoked)
        and e.agent_id == "field_observer"
        and e.round_number in rounds
    }


def _first_request(
    model_stub: StubModelServer, source: Path, runs: Path, rule: str
) -> RecordedRequest:
    prepared = prepare_fork(
        ForkRequest(
            "veyru",
            str(source),
            2,
            str(runs),
            1,
            None,
            "field_observer",
            NEW_MODEL,
            "anthropic",
            rule,
        )
    )
    assert asyncio.run(resume(run_dir=prepared.folder.url)).status == "completed"
    return next(r for r in model_stub.requests if r.model == NEW_MODEL)


def _texts(request: RecordedRequest) -> list[str]:
    return [
        b["text"]
        for m in request.messages
        if m["role"] == "user"
        for b in m["content"]
        if b.get("type") == "text"
    ]


def _tool_uses(request: RecordedRequest) -> set[str]:
    return {
        b["id"]
        for m in request.messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b.get("type") == "tool_use"
    }


@pytest.mark.parametrize(
    ("rule", "kept"), [("none", range(0)), ("full", range(1, 3)), ("from_round:2", range(2, 3))]
)
def test_the_swapped_seat_is_sent_exactly_the_history_its_rule_allows(
    source: Path,
    tmp_path: Path,
    model_stub,
    monkeypatch: pytest.MonkeyPatch,
    rule: str,
    kept: range,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    first = _first_request(model_stub, source, tmp_path, rule)
    assert _tool_uses(first) == _source_tool_calls(source, kept)
    briefings = [t[:12] for t in _texts(first) if re.match(r"Round \d of 3\.", t)]
    assert briefings == [f"Round {n} of 3" for n in [*kept, 3]]
    postmortems = [t[:12] for t in _texts(first) if re.match(r"Round \d is over", t)]
    assert postmortems == [f"Round {n} is o" for n in kept]
    if rule == "none":
        assert len(first.messages) == 1
