"""Tasks that continue a run from its event log."""

from __future__ import annotations

from glossogen.derive import ResumePoint
from glossogen.engine import RoundSummary
from glossogen.launch import RunConfig, RunSession, open_session, resume_point
from orchestration import glossogen_task


@glossogen_task(name="open_resume_point")
async def open_resume_point(
    config: RunConfig, run_dir: str, allow_config_change: bool
) -> ResumePoint:
    """Read the run's log, refuse a bad resume, and find the round to pick up at."""
    return resume_point(config, run_dir, allow_config_change)


@glossogen_task(name="reopen_run")
async def reopen_run(config: RunConfig, point: ResumePoint) -> RunSession:
    """Rebuild the engine from the log and log ``run_resumed``."""
    return open_session(config, point.folder, resume=point)


@glossogen_task(name="finish_round", task_run_name="finish_round-{round_number}")
async def finish_round(session: RunSession, round_number: int) -> RoundSummary:
    """Play the postmortem of a cut-off round whose verdict stands."""
    return await session.finish_round(round_number)
