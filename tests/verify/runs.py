"""Runs whose books a test checks: played offline (scripted seats, virtual clock) through the
library's own launch, resume and fork paths, and copies of them broken by hand."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from glossogen.derive import ForkRequest, prepare_fork
from glossogen.launch import (
    ResumeRequest,
    RunRequest,
    claim_run,
    open_session,
    plan_resume,
    plan_run,
    price_spend,
    resume_point,
)
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import CLOCK_START


def scripted(scenario: str, runs_dir: Path, rounds: int = 2) -> RunRequest:
    """A scripted run of ``rounds`` rounds of ``scenario`` under ``runs_dir``."""
    return RunRequest(scenario=scenario, model="scripted", provider="scripted",
                      runs_dir=str(runs_dir), config="knobs_default",
                      overrides=[f"round_count={rounds}"])  # fmt: skip


def play_interrupted(request: RunRequest, rounds: int) -> RunFolder:
    """Play ``rounds`` rounds, then end the run ``interrupted`` (as Ctrl-C would): resumable."""

    async def go() -> RunFolder:
        plan = plan_run(request)
        folder = claim_run(plan, request.runs_dir)
        session = open_session(plan, folder, clock_start=CLOCK_START)
        for n in range(1, rounds + 1):
            await session.play_round(n)
        session.finish(price_spend(folder), "interrupted", "interrupted")
        return folder

    return asyncio.run(go())


def resume(run_dir: str) -> RunFolder:
    """Go on with the run in ``run_dir`` in place to its last round, as ``--resume`` does."""

    async def go() -> RunFolder:
        config, _ = plan_resume(ResumeRequest(run_dir=run_dir))
        point = resume_point(config, run_dir, False)
        session = open_session(config, point.folder, resume=point)
        first = session.first_round
        if session.postmortem_only:
            await session.finish_round(first)
            first += 1
        for n in range(first, config.knobs.round_count + 1):
            await session.play_round(n)
        await session.settle_requests()
        session.finish(price_spend(point.folder), "completed")
        return point.folder

    return asyncio.run(go())


def fork(source: RunFolder, runs_dir: Path, after_round: int = 1) -> RunFolder:
    """Fork ``source`` after ``after_round`` into ``runs_dir`` and play the fork to its end."""
    request = ForkRequest(scenario=source.scenario, source_run_dir=source.url,
                          after_round=after_round, runs_dir=str(runs_dir))  # fmt: skip
    prepared = prepare_fork(request)
    return resume(prepared.folder.url)


def copy_run(folder: RunFolder, runs_dir: Path, timestamp: int) -> tuple[str, Path]:
    """Copy a run folder to ``runs_dir/<scenario>/<timestamp>``; return its run id and log."""
    target = runs_dir / folder.scenario / str(timestamp)
    shutil.copytree(folder.url, target)
    return f"{folder.scenario}/{timestamp}", target / f"{folder.scenario}.jsonl"


def lines(log: Path) -> list[dict[str, Any]]:
    """The log's events as dicts, in order (line ``n`` is ``lines(log)[n - 1]``)."""
    return [json.loads(line) for line in log.read_text().splitlines()]


def write(log: Path, events: list[dict[str, Any]]) -> None:
    """Write ``events`` as the log, one JSON object a line."""
    log.write_text("".join(json.dumps(e) + "\n" for e in events))


def line_of(events: list[dict[str, Any]], event: dict[str, Any]) -> int:
    """The 1-based line number of ``event`` in ``events``."""
    return next(n for n, e in enumerate(events, start=1) if e is event)


def duplicate_verdict(folder: RunFolder, runs_dir: Path, timestamp: int) -> tuple[str, Path, str]:
    """Copy a two-round run with round 2's verdict written twice; return its run id, its log
    and the one line ``glossogen verify`` names it with."""
    run_id, log = copy_run(folder, runs_dir, timestamp)
    events = lines(log)
    verdict = [e for e in events if e["event_type"] == "round_result_recorded"][1]
    again = dict(verdict)
    events.insert(events.index(verdict) + 1, again)
    write(log, events)
    first, second = line_of(events, verdict), line_of(events, again)
    line = (f"{run_id}: verdicts: line {second} (round 2): round 2 has 2 verdicts for team "
            f"{verdict['team_id']} (lines {first}, {second})")  # fmt: skip
    return run_id, log, line
