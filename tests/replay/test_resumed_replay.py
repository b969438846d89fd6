"""Replay of resumed runs: one stopped in its postmortem, one resumed under a changed config."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from glossogen.eventlog import RunResumed, RunView
from glossogen.launch import ResumeRequest, RunSession, open_session, plan_resume, price_spend
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.played_runs import after_round_1, stopped_in_round_2


def _in_round_2s_postmortem(session: RunSession, boundary: int) -> bool:
    """Whether round 2's postmortem has begun (its verdict logged): the log holds its start."""
    log = Path(session.folder.log_url).read_text(encoding="utf-8")
    return log.count('"event_type":"postmortem_started"') == 2  # round 1's, then round 2's


def test_a_run_stopped_in_its_postmortem_and_resumed_replays_identically(
    tmp_path: Path,
) -> None:
    # stopped in round 2's postmortem, then resumed: its postmortem alone, then round 3
    run_dir = asyncio.run(stopped_in_round_2(str(tmp_path), _in_round_2s_postmortem, 3))
    recorded = RunView.load(f"{run_dir}/prisoners_dilemma.jsonl")
    resumed = [e for e in recorded.events if isinstance(e, RunResumed)]
    assert [(e.after_round, e.reopened_round, e.postmortem_only) for e in resumed] == [(1, 2, True)]
    types = [(e.event_type, e.round_number) for e in recorded.events]
    stop = types.index(("simulation_ended", 2))
    assert ("postmortem_started", 2) in types[:stop]
    assert ("round_completed", 2) not in types[:stop]
    report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_diff, report.stalled) == (None, None, None)
    assert report.identical
    replayed = RunView.load(f"{report.replay_url}/prisoners_dilemma.jsonl")
    assert [(e.event_type, e.round_number) for e in replayed.events] == types
    assert replayed.verdicts == recorded.verdicts
    assert (replayed.status, replayed.rounds_played) == ("completed", 3)


def test_a_run_resumed_under_a_changed_config_replays_identically(tmp_path: Path) -> None:
    runs_dir = str(tmp_path)
    run_id = asyncio.run(after_round_1(runs_dir, ending="interrupted"))  # round_count=2

    async def resume() -> None:
        request = ResumeRequest(run_dir=f"{runs_dir}/{run_id}", overrides=["round_count=3"],
                                max_agent_turns=60, allow_config_change=True)  # fmt: skip
        config, point = plan_resume(request)
        session = open_session(config, point.folder, resume=point)
        for number in range(point.next_round, config.knobs.round_count + 1):
            await session.play_round(number)
        await session.settle_requests()
        session.finish(price_spend(point.folder), "completed")

    asyncio.run(resume())
    recorded = RunView.load(f"{runs_dir}/{run_id}/veyru.jsonl")
    resumed = next(e for e in recorded.events if isinstance(e, RunResumed))
    assert resumed.config_changes == {"round_count": {"recorded": 2, "now": 3}}
    assert list(resumed.limit_changes) == ["max_agent_turns"]
    report = replay_run(ReplayRequest(run_dir=f"{runs_dir}/{run_id}", runs_dir=f"{runs_dir}/r"))
    assert (report.divergence, report.event_diff, report.stalled) == (None, None, None)
    assert report.identical
    replayed = RunView.load(f"{report.replay_url}/veyru.jsonl")
    again = next(e for e in replayed.events if isinstance(e, RunResumed))
    assert (again.config_changes, again.limit_changes) == (
        resumed.config_changes,
        resumed.limit_changes,
    )
    assert (replayed.status, replayed.rounds_played) == ("completed", 3)
    config = json.loads(Path(report.replay_url, "config.json").read_text())
    assert config["round_count"] == 3
    assert len(replayed.events) == len(recorded.events)
