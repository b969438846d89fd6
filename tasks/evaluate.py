"""Tasks of the evaluate flows: select a cohort, estimate its judge spend, evaluate one run.

Every parameter is a small handle (a run's URL, scenario and log SHA-256, the checked request):
Prefect walks each task parameter's object graph, so a parsed log passed to a task costs a walk
of every event (the profile of issue 16: 888,000 ``visit_collection`` calls for one log). The
run is loaded inside the task, and the cache is the run's report itself
(:func:`glossogen.evaluation.up_to_date`), so a task needs no Prefect result cache (the task
policy of :func:`orchestration.glossogen_task`): a run whose entries are up to date is skipped
in the task.
"""

from __future__ import annotations

from pydantic import BaseModel

from glossogen.evaluation import (
    Evaluation,
    EvaluationError,
    EvaluationRequest,
    RunHandle,
    RunOutcome,
    cached_run,
    estimate_judge_usd,
    evaluate_run,
    plan_request,
    run_evaluation,
    run_handle,
)
from orchestration import glossogen_task


@glossogen_task(name="evaluate_one_run")
async def score_run(run_url: str, scenario: str | None, request: EvaluationRequest) -> Evaluation:
    """Plan, score and write one run's report (refusals raise ``EvaluationError``).

    Up-to-date entries of metrics that spend (judged, model) are reused, never paid twice.
    """
    plan = plan_request(run_url, scenario, request)
    return await run_evaluation(plan, request.plot)


@glossogen_task(name="evaluate_run", task_run_name="evaluate-{handle.run_id}")
async def evaluate_handle(handle: RunHandle, request: EvaluationRequest) -> RunOutcome:
    """Evaluate one run of a cohort (never raises for a problem of that run alone)."""
    return await evaluate_run(handle, request)


class CohortSelection(BaseModel):
    """The runs a cohort evaluates, as handles, and the ones it could not take, with why.

    ``fresh``: run id -> its ``skipped`` outcome (the metrics kept, the report's skipped log
    lines), for the runs whose report is already up to date for the whole request
    (:func:`glossogen.evaluation.cached_run`); they get no task.
    """

    handles: list[RunHandle] = []
    fresh: dict[str, RunOutcome] = {}
    unreadable: dict[str, str] = {}
    missing_run_ids: list[str] = []


@glossogen_task(name="select_cohort")
def select_cohort(
    runs_dir: str, selection: dict[str, object], max_runs: int, request: EvaluationRequest
) -> CohortSelection:
    """Resolve the export's selection under ``runs_dir``, hash each log, read each report.

    Raises:
        RunsDirError, SelectionError, StorageError: as :func:`glossogen.export.select_runs`.
    """
    from glossogen.export import select_runs

    selected = select_runs(runs_dir, selection, max_runs=max_runs)
    result = CohortSelection(
        unreadable=dict(selected.unreadable), missing_run_ids=selected.missing_run_ids
    )
    for record in selected.records:
        try:
            handle = run_handle(record.run_url, record.scenario, record.run_id)
        except EvaluationError as exc:
            result.unreadable[record.run_id] = str(exc)
            continue
        result.handles.append(handle)
        kept = cached_run(handle, request)
        if kept is not None:
            result.fresh[handle.run_id] = kept
    return result


@glossogen_task(name="estimate_judge_spend")
def estimate_spend(handles: list[RunHandle], request: EvaluationRequest) -> dict[str, float | None]:
    """Estimated judge USD per run id (runs the request would refuse are left out)."""
    estimates: dict[str, float | None] = {}
    for handle in handles:
        try:
            plan = plan_request(handle.run_url, handle.scenario, request)
        except EvaluationError:
            continue
        estimates[handle.run_id] = estimate_judge_usd(plan)
    return estimates
