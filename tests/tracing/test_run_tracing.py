"""A whole run traced to a Langfuse-style OTLP collector on 127.0.0.1: one session per run id."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.launch import RunRequest
from tests.tracing.test_tracing import Collector, _env, wait_flushed


def test_every_agent_call_of_a_run_is_traced_under_its_run_id(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = Collector()
    try:
        for key, value in _env(collector.host).items():
            monkeypatch.setenv(key, value)
        request = RunRequest(
            scenario="prisoners_dilemma",
            model="scripted",
            provider="scripted",
            runs_dir=str(tmp_path),
            config="knobs_default",
            overrides=["round_count=2", "postmortem_enabled=false"],
        )
        result = asyncio.run(simulate(request))
        wait_flushed()  # the run shut its tracing down; its flush may still be exporting
        spans = collector.spans()
    finally:
        collector.stop()
    assert result.status == "completed"
    assert spans
    assert {a["langfuse.session.id"] for _, a in spans} == {result.run_id}
    assert {a["glossogen.agent_id"] for _, a in spans} == {"player_a", "player_b"}
    assert {a["glossogen.round"] for _, a in spans} == {1, 2}
    assert {(a["glossogen.provider"], a["glossogen.model"]) for _, a in spans} == {
        ("scripted", "scripted")
    }
    per_round = Counter(a["glossogen.round"] for n, a in spans if n.startswith("invoke_agent"))
    assert per_round == {1: 2, 2: 2}  # one agent run per seat per round
