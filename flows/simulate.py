"""The simulate flow: the whole life of a run as a dozen task calls."""

from __future__ import annotations

from prefect import flow

from glossogen.engine import RoundSummary
from glossogen.launch import RunRequest, RunResult
from tasks.config import check_credentials, resolve_config
from tasks.rounds import claim_run_dir, finalize, play_round, price_spend, start_run


@flow(name="simulate", flow_run_name="{request.scenario}")
async def simulate(request: RunRequest) -> RunResult:
    """Play ``request.scenario`` for its ``round_count`` rounds and return how it ended.

    Status is ``completed``, or ``error`` when every agent failed (provider refusing every
    call) or hit its turn limit before the last round.
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
            if session.stopped_early:
                status, error = "error", "every agent failed or reached max_agent_turns"
                break
    except BaseException as exc:
        status, error = (
            "interrupted" if isinstance(exc, KeyboardInterrupt) else "error",
            repr(exc)[:300],
        )
        finalize(session, price_spend(plan, claimed), rounds, status, error)
        raise
    return finalize(session, price_spend(plan, claimed), rounds, status, error)
