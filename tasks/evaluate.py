"""Tasks of the evaluate flows: select a cohort, estimate its judge spend, evaluate its runs.

Every parameter is small (run folder URLs and ids, the checked request): Prefect walks each task
parameter's object graph, so a parsed log passed to a task costs a walk of every event (the
profile of issue 16: 888,000 ``visit_collection`` calls for one log). A run's log is read inside
the task, once, and the cache is the run's report itself
(:func:`glossogen.evaluation.up_to_date`), so a task needs no Prefect result cache (the task
policy of :func:`orchestration.glossogen_task`): a run whose entries are up to date is skipped
in the task. A cohort's runs go to the server in batches (:func:`evaluate_runs`), not one
task per run.
"""

from __future__ import annotations

from pydantic import BaseModel

from glossogen.evaluation import (
    BatchOutcome,
    CohortRun,
    Evaluation,
    EvaluationError,
    EvaluationRequest,
    estimate_judge_usd,
    evaluate_batch,
    plan_request,
    run_evaluation,
)
from orchestration import glossogen_task, task_argument


@glossogen_task(name="evaluate_one_run")
async def score_run(run_url: str, scenario: str | None, request: EvaluationRequest) -> Evaluation:
    """Plan, score and write one run's report (refusals raise ``EvaluationError``).

    Up-to-date entries of metrics that spend (judged, model) are reused, never paid twice.
    """
    plan = plan_request(run_url, scenario, request)
    return await run_evaluation(plan, request.plot)


def _batch_name() -> str:
    runs: list[CohortRun] = task_argument("runs")
    more = f"-and-{len(runs) - 1}-more" if len(runs) > 1 else ""
    return f"evaluate-{runs[0].run_id}{more}" if runs else "evaluate-none"


@glossogen_task(name="evaluate_runs", task_run_name=_batch_name)
async def evaluate_runs(runs: list[CohortRun], request: EvaluationRequest) -> BatchOutcome:
    """Evaluate a batch of a cohort's runs in turn (never raises for a problem of one run).

    Observers get ``run_evaluated`` after each run.
    """
    from glossogen.launch import notify

    return await evaluate_batch(runs, request, lambda o: notify("run_evaluated", o))


class CohortSelection(BaseModel):
    """The runs a cohort evaluates, and the ones it could not take, with why."""

    runs: list[CohortRun] = []
    unreadable: dict[str, str] = {}
    missing_run_ids: list[str] = []


@glossogen_task(name="select_cohort")
def select_cohort(
    runs_dir: str, selection: dict[str, object], max_runs: int, listed: list[str] | None = None
) -> CohortSelection:
    """Resolve the export's selection under ``runs_dir`` (of each log, its head alone is read).

    ``listed``: the run ids the cohort's check listed (``CohortRequest.listed``), so the
    folder is not listed again; None lists it.

    Raises:
        RunsDirError, SelectionError, StorageError: as :func:`glossogen.export.select_runs`.
    """
    from glossogen.export import select_runs

    selected = select_runs(runs_dir, selection, max_runs=max_runs, log_facts=False, listed=listed)
    return CohortSelection(
        runs=[
            CohortRun(run_id=r.run_id, run_url=r.run_url, scenario=r.scenario)
            for r in selected.records
        ],
        unreadable=dict(selected.unreadable),
        missing_run_ids=selected.missing_run_ids,
    )


class SpendEstimate(BaseModel):
    """A cohort's judge spend before any call.

    ``usd``: estimated judge USD per run id (runs the request would refuse are left out);
    ``up_to_date``: runs with nothing to score (every planned entry up to date): skipped, never
    held back by a spend cap.
    """

    usd: dict[str, float | None] = {}
    up_to_date: set[str] = set()


@glossogen_task(name="estimate_judge_spend")
def estimate_spend(runs: list[CohortRun], request: EvaluationRequest) -> SpendEstimate:
    """Plan each run (its log read) and price the judge calls scoring it would make."""
    estimate = SpendEstimate()
    for run in runs:
        try:
            plan = plan_request(run.run_url, run.scenario, request)
        except EvaluationError:
            continue
        estimate.usd[run.run_id] = estimate_judge_usd(plan)
        if not plan.to_score(reuse_all=True):
            estimate.up_to_date.add(run.run_id)
    return estimate
