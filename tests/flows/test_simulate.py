"""The simulate flow on a real Prefect server: whole runs, their logs, their folders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from flows.simulate import simulate
from glossogen.eventlog import read_events
from glossogen.launch import RunRequest, observing
from glossogen.storage import RunStore


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
    assert all(a.requests > 0 and a.cost_usd == 0.0 for a in ended.agent_costs)
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
