"""The simulate flow: the whole life of a run as a dozen task calls."""

from __future__ import annotations

import asyncio

from prefect import flow

from glossogen.engine import RoundSummary
from glossogen.launch import RunRequest, RunResult
from tasks.config import check_credentials, resolve_config
from tasks.rounds import claim_run_dir, finalize, play_round, price_spend, start_run


@flow(name="simulate", flow_run_name="{request.scenario}")
async def simulate(request: RunRequest) -> RunResult:
    """Play ``request.scenario`` for its ``round_count`` rounds and return how it ended.

    Status is ``completed``; ``error`` when every agent was taken out by failures (a provider
    refusing every call) or the flow crashed; ``incomplete`` when every agent reached
    ``max_agent_turns`` before the last round; ``interrupted`` on Ctrl-C or cancellation.
    """
    plan = resolve_config(request)
    check_credentials(plan)
    claimed = claim_run_dir(plan)
    session = start_run(plan, claimed)
    rounds: list[RoundSummary] = []
    status, error = "completed", None
    try:
        for round_number in range(1, plan.knobs["round_count"] + 1):
            rounds.append(await play_round(session, round_number))
            if reason := session.stopped_early:
                status = "error" if session.engine.any_agent_failed else "incomplete"
                error = reason
                break
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        status = "interrupted" if interrupted else "error"
        error = "interrupted" if interrupted else f"{type(exc).__name__}: {exc}"[:300]
        finalize(session, price_spend(plan, claimed), rounds, status, error)
        raise
    return finalize(session, price_spend(plan, claimed), rounds, status, error)
