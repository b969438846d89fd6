"""Tasks that play a run: claim its folder, open it, play one round per task run, finish."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NONE

from glossogen.engine import RoundSummary
from glossogen.launch import (
    RunPlan,
    RunResult,
    RunSession,
    Spend,
    claim_run,
    log_url,
    open_session,
)
from glossogen.launch import (
    price_spend as price,
)
from glossogen.storage import ClaimedRun


@task(name="claim_run_dir", cache_policy=NONE, retries=2, retry_delay_seconds=1)
def claim_run_dir(plan: RunPlan) -> ClaimedRun:
    """Claim ``<runs_dir>/<scenario>/<unix_ts>/`` atomically and write its config files."""
    return claim_run(plan)


@task(name="start_run", cache_policy=NONE)
def start_run(plan: RunPlan, claimed: ClaimedRun) -> RunSession:
    """Open the event log and the engine; log ``simulation_started`` and the agents."""
    return open_session(plan, claimed)


@task(name="play_round", cache_policy=NONE, task_run_name="play_round-{round_number}")
async def play_round(session: RunSession, round_number: int) -> RoundSummary:
    """Play one round (and its postmortem) inside the run's event loop."""
    return await session.play_round(round_number)


@task(name="price_spend", cache_policy=NONE, retries=2, retry_delay_seconds=1)
def price_spend(plan: RunPlan, claimed: ClaimedRun) -> Spend:
    """Sum the run's spend (USD) from its event log."""
    return price(log_url(plan, claimed))


@task(name="finalize", cache_policy=NONE)
def finalize(
    session: RunSession,
    spend: Spend,
    rounds: list[RoundSummary],
    status: str,
    error: str | None = None,
) -> RunResult:
    """Log ``simulation_ended`` with status, messages and cost, and close the log."""
    return session.finish(spend, rounds, status, error)
