"""One run scored: the library entry of ``glossogen evaluate --run-dir`` and MCP ``evaluate_run``.

Scoring deterministic metrics takes less CPU than importing Prefect, and the report is the
record and its own cache, so a planned run is scored in this process unless its plan calls a
model (a judged metric, the probe) and a Prefect API is configured: then it goes through the
``evaluate`` flow, shown in the Prefect UI, its judge calls under the ``llm:<provider>``
limits. With no API configured no server is started for it, whichever surface asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossogen.launch._process import apply_prefect_defaults, prefect_api_configured

if TYPE_CHECKING:
    from glossogen.evaluation import Evaluation, EvaluationPlan, EvaluationRequest


def through_flow(plan: EvaluationPlan) -> bool:
    """Whether :func:`evaluate_planned` scores ``plan`` through the ``evaluate`` flow.

    True when the plan calls a model and a Prefect API is configured; a surface checks that the
    API answers before it calls :func:`evaluate_planned` (the CLI: 69, nothing written).
    """
    return plan.calls_models and prefect_api_configured()


async def evaluate_planned(plan: EvaluationPlan, request: EvaluationRequest) -> Evaluation:
    """Score the planned run and write its report; return what was written.

    In this process, or through the ``evaluate`` flow when :func:`through_flow` says so.

    Raises:
        EvaluationError: the run changed between the plan and the scoring (exit code on it).
        StorageError: the run folder cannot be written.
    """
    from glossogen.evaluation import run_evaluation

    if not through_flow(plan):
        return await run_evaluation(plan, request.plot)
    apply_prefect_defaults()
    from flows.evaluate import evaluate

    return await evaluate(plan.run.run_dir, request, scenario=plan.run.scenario)
