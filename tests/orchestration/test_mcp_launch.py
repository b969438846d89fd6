"""The MCP tools' launch path when a worker serves the provider: the run's folder is claimed at
once, then the run plays on the ``simulate-<provider>`` deployment, into that folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

from deployments.local_server import ProcessWorker
from glossogen.eventlog import RoundResultRecorded, SimulationEnded, read_events
from glossogen.launch import RunRequest, launch_new, plan_run
from glossogen.storage import RunFolder
from tests.fixtures.polling import wait_until


def test_start_run_plays_on_the_deployment_a_worker_serves(
    scripted_worker: ProcessWorker, tmp_path: Path
) -> None:
    config = plan_run(
        RunRequest(
            scenario="prisoners_dilemma", model="scripted", provider="scripted",
            runs_dir=str(tmp_path), config="knobs_default", overrides=["round_count=2"],
        )
    )  # fmt: skip
    folder, launched = asyncio.run(launch_new(config, str(tmp_path)))
    assert launched == "deployment:simulate/simulate-scripted"
    # The id is the caller's before anything plays: the folder holds the claim already.
    assert folder.run_id.startswith("prisoners_dilemma/")
    assert (Path(folder.url) / "config.json").is_file()
    log = Path(folder.url) / "prisoners_dilemma.jsonl"

    def ended() -> SimulationEnded | None:
        events = read_events(str(log)).events if log.is_file() else []
        return events[-1] if events and isinstance(events[-1], SimulationEnded) else None

    final = wait_until(ended, "the deployed run to end")
    assert (final.status, final.rounds_played) == ("completed", 2)
    events = read_events(str(log)).events
    assert events[0].run_id == folder.run_id  # played into the claimed folder, not a new one
    assert [e.round_number for e in events if isinstance(e, RoundResultRecorded)] == [1, 2]
    assert RunFolder.at(folder.url).run_id == folder.run_id
