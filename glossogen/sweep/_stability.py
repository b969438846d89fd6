"""Stability re-sampling: a second sample of a failed trial says reproducible or flaky.

Two modes (``--stability-retry``):

- ``agent_rerun``: the trial is played once more (a run labelled ``part=stability``); a failure
  that fails again is reproducible, one that now passes is flaky.
- ``judge_replay``: every ``judge_called`` of the failed run is asked again of the same judge
  model (the question as logged); rulings that all agree make the failure reproducible, any
  that differs makes it flaky. A run with no judge call (deterministic verdicts) cannot be
  replayed: unmeasured. Scripted judges are deterministic, so their replay agrees by definition.

The first attempt stays authoritative: a sample only annotates, it never changes a verdict.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from pydantic import BaseModel

from glossogen.eventlog import Event, JudgeCalled, SimulationStarted, read_events
from glossogen.storage import RunFolder
from glossogen.sweep._summary import Stability

SampleOutcome = Literal["reproduced", "not_reproduced", "unmeasured"]


class JudgeReplay(BaseModel):
    """What replaying a run's judge calls found.

    Attributes:
        replayed: Judge calls asked again.
        agreed: Replayed rulings equal to the logged ones.
        cost_usd: What the replay spent (USD; null when a model is not costed).
        outcome: ``reproduced`` (all agreed), ``not_reproduced`` (one differed), or
            ``unmeasured`` (nothing to replay, or a replay call failed).
        detail: One line for the summary.
    """

    replayed: int
    agreed: int
    cost_usd: float | None
    outcome: SampleOutcome
    detail: str


async def replay_judge(run_url: str, scenario: str) -> JudgeReplay:
    """Ask every logged ``judge_called`` of a run again and compare the rulings.

    The same judge model gets the logged instructions and question, with the run's
    ``judge_model_settings``; the replay's own ``judge_called`` events are not written to the
    run's log (the first attempt stays authoritative).

    Raises:
        StorageError: the log cannot be read.
    """
    from glossogen.engine import RunJudge
    from glossogen.pricing import add_costs
    from glossogen.scenario import JudgeDecision

    events = read_events(RunFolder.at(run_url).log_url).events
    calls = [e for e in events if isinstance(e, JudgeCalled)]
    config: dict[str, Any] = next(
        (e.scenario_config for e in events if isinstance(e, SimulationStarted)),
        {},
    )
    settings = {
        k: v for k, v in (config.get("judge_model_settings") or {}).items() if v is not None
    }
    if not calls:
        return JudgeReplay(
            replayed=0,
            agreed=0,
            cost_usd=0.0,
            outcome="unmeasured",
            detail="no judge call to replay (the verdicts are deterministic)",
        )
    emitted: list[Event] = []
    agreed = 0
    costs: list[float | None] = []
    for call in calls:
        judge = RunJudge(call.model, call.provider, settings, emitted.append)
        decision = await judge.rule(
            call.question,
            call.instructions,
            partial(JudgeDecision, call.success, call.reason),
        )
        if judge.failed_in_round:
            return JudgeReplay(
                replayed=len(costs),
                agreed=agreed,
                cost_usd=add_costs(costs),
                outcome="unmeasured",
                detail=f"a replayed judge call failed ({decision.reason})",
            )
        agreed += decision.success == call.success
        last = emitted[-1] if emitted else None
        costs.append(last.cost_usd if isinstance(last, JudgeCalled) else None)
    outcome: SampleOutcome = "reproduced" if agreed == len(calls) else "not_reproduced"
    return JudgeReplay(
        replayed=len(calls),
        agreed=agreed,
        cost_usd=add_costs(costs),
        outcome=outcome,
        detail=f"{agreed} of {len(calls)} replayed judge ruling(s) agreed",
    )


def annotate(
    samples: list[SampleOutcome], requested: bool, failed_trials: int
) -> tuple[Stability, str]:
    """Return a cell's ``(stability, detail)`` from the outcomes of its failed trials' samples.

    ``unmeasured`` without ``--stability-retry`` or when a sample could not be taken;
    ``stable`` when no trial failed or every failure reproduced; ``flaky`` when one did not.
    """
    if not requested:
        return "unmeasured", "no stability_retry"
    if failed_trials == 0:
        return "stable", "no failed trial to re-sample"
    if len(samples) < failed_trials or "unmeasured" in samples:
        return "unmeasured", "a failed trial's second sample could not be measured"
    if "not_reproduced" in samples:
        flaky = samples.count("not_reproduced")
        return "flaky", f"{flaky} of {failed_trials} failure(s) did not reproduce"
    return "stable", f"all {failed_trials} failure(s) reproduced"
