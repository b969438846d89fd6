"""The simulate flow on a real Prefect server: whole runs, their logs, their folders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.eventlog import read_events
from glossogen.launch import RunRequest, observing
from glossogen.storage import RunFolder, RunStore


def _play(runs_dir: str, scenario: str, *overrides: str) -> tuple:
    seen: list[str] = []

    class Watcher:
        def run_claimed(self, run_id: str, run_url: str, round_count: int) -> None:
            seen.append(run_id)

    request = RunRequest(
        scenario=scenario,
        model="scripted",
        provider="scripted",
        runs_dir=runs_dir,
        config="knobs_default",
        overrides=list(overrides),
    )
    with observing(Watcher()):
        result = asyncio.run(simulate(request))
    return result, seen


def test_prisoners_dilemma_plays_every_round_and_records_its_verdicts(
    prefect_api: str, tmp_path: Path
) -> None:
    result, claimed = _play(str(tmp_path), "prisoners_dilemma", "round_count=3")
    assert claimed == [result.run_id]
    assert result.status == "completed"
    assert (result.rounds_played, result.rounds_won) == (3, 2)
    log = read_events(f"{result.run_url}/prisoners_dilemma.jsonl")
    assert (log.invalid_lines, log.unknown_lines, log.truncated_tail) == (0, 0, False)
    verdicts = [e.success for e in log.events if e.event_type == "round_result_recorded"]
    assert verdicts == [False, True, True]
    ended = log.events[-1]
    assert ended.event_type == "simulation_ended"
    assert ended.total_cost_usd == 0.0
    assert sorted(a.agent_id for a in ended.agent_costs) == ["player_a", "player_b"]
    assert [(a.agent_id, a.requests, a.cost_usd) for a in ended.agent_costs] == [
        ("player_a", 18, 0.0),
        ("player_b", 18, 0.0),
    ]
    assert ended.total_messages == sum(1 for e in log.events if e.event_type == "message_sent")
    config = json.loads(Path(result.run_url, "config.json").read_text())
    assert config["round_count"] == 3
    assert config["payoff_reward"] == 3


def test_a_run_on_s3_writes_its_folder_through_fsspec(prefect_api: str, s3_bucket: str) -> None:
    result, _ = _play(
        f"{s3_bucket}/experiments", "prisoners_dilemma", "round_count=2", "postmortem_enabled=false"
    )
    assert result.run_url.startswith(f"{s3_bucket}/experiments/prisoners_dilemma/")
    log = read_events(f"{result.run_url}/prisoners_dilemma.jsonl")
    types = [e.event_type for e in log.events]
    assert types[0] == "simulation_started"
    assert types[-1] == "simulation_ended"
    assert "postmortem_started" not in types
    assert (
        RunStore(f"{s3_bucket}/experiments").read_json(result.run_url, "config.json")["round_count"]
        == 2
    )


def test_veyru_default_run_logs_every_event_kind_a_reader_needs(
    prefect_api: str, tmp_path: Path
) -> None:
    result, _ = _play(str(tmp_path), "veyru")
    assert result.status == "completed"
    log = read_events(f"{result.run_url}/veyru.jsonl")
    types = [e.event_type for e in log.events]
    assert types[0] == "simulation_started"
    assert types[-1] == "simulation_ended"
    registered = [e.agent_id for e in log.events if e.event_type == "agent_registered"]
    assert registered == ["field_observer", "stabilization_engineer"]
    for round_number in range(1, 6):
        in_round = {e.event_type for e in log.events if e.round_number == round_number}
        assert {
            "injection_delivered",
            "message_sent",
            "tool_call_invoked",
            "tool_result_received",
            "llm_response_received",
            "round_ended",
            "round_result_recorded",
            "postmortem_started",
            "postmortem_ended",
        } <= in_round, round_number
    judged = sorted({e.round_number for e in log.events if e.event_type == "judge_called"})
    assert judged == [1, 3, 4, 5]  # round 2 collapsed on its budget before any treatment
    verdicts = [
        (e.success, e.reason) for e in log.events if e.event_type == "round_result_recorded"
    ]
    assert verdicts == [
        (True, "3 of 3 stages stabilized"),
        (False, "budget exceeded"),
        (True, "3 of 3 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
    ]
    # Verdicts are recorded before each postmortem opens.
    for round_number in range(1, 6):
        order = [e.event_type for e in log.events if e.round_number == round_number]
        assert order.index("round_result_recorded") < order.index("postmortem_started")
    ended = log.events[-1]
    assert (ended.rounds_played, ended.rounds_won) == (5, 4)
    assert ended.total_cost_usd == 0.0
    assert ended.judge_cost_usd == 0.0
    assert {a.agent_id for a in ended.agent_costs} == {"field_observer", "stabilization_engineer"}


def test_the_flow_run_is_named_after_the_run_id(prefect_api: str, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    result, _ = _play(str(tmp_path), "prisoners_dilemma", "round_count=1")
    named = FlowRunFilter(name=FlowRunFilterName(any_=[result.run_id]))
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=named)
    # Run ids are unix seconds: another test's run on this server may bear the same name, so
    # this test's flow run is the one whose parameters name its runs dir.
    mine = [r for r in runs if r.parameters["config"]["runs_dir"] == str(tmp_path)]
    assert [(r.name, r.state_name) for r in mine] == [(result.run_id, "Completed")]


def test_the_flow_run_publishes_the_runs_rounds_with_a_link_to_its_page(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from tasks.rounds import _run_artifact_key

    monkeypatch.setenv("GLOSSOGEN_BROWSER_URL", "http://127.0.0.1:8000/")
    result, _ = _play(str(tmp_path), "prisoners_dilemma", "round_count=3")
    key = _run_artifact_key(RunFolder.at(result.run_url))
    assert key.startswith("run-prisoners-dilemma-")

    async def read() -> list:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])), limit=5
            )

    (artifact,) = asyncio.run(read())
    rows = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
    log = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    per_round = [
        sum(1 for e in log if e.event_type == "message_sent" and e.round_number == n)
        for n in (1, 2, 3)
    ]
    assert [(r["round"], r["verdict"], r["messages"], r["cost_usd"]) for r in rows] == [
        (1, "lost", per_round[0], 0.0),
        (2, "won", per_round[1], 0.0),
        (3, "won", per_round[2], 0.0),
    ]
    link = f"http://127.0.0.1:8000/runs/{result.run_id}"
    assert artifact.description == (
        f"run {result.run_id}: completed, 2 of 3 rounds won, {sum(per_round)} messages, "
        f"{sum(r['chars'] for r in rows)} chars, $0.000000; folder {result.run_url}; "
        f"page [{link}]({link})"
    )
