"""The evaluate flows: one run into its ``<scenario>_report.json``, or a cohort of runs.

Tasks take small handles (a run's URL and log SHA-256, the checked request), never a parsed
log; the run is loaded inside its task and the cache is the run's report (see
``tasks/evaluate.py``). Judge and probe requests take ``llm:<provider>`` slots, shared with
simulations (``install_call_gate``).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_table_artifact
from pydantic import BaseModel

from glossogen.concurrency import current_gate
from glossogen.evaluation import (
    Evaluation,
    EvaluationRequest,
    RunHandle,
    RunOutcome,
    check_request,
    headline_rows,
)
from glossogen.launch import notify
from glossogen.pricing import add_costs
from orchestration.gate import install_call_gate
from tasks.evaluate import estimate_spend, evaluate_handle, score_run, select_cohort

COHORT_CONCURRENCY = 4
"""Runs of a cohort evaluated at once (their judge calls overlap; deterministic work does not)."""


def _artifact_key(run_id: str) -> str:
    """Prefect artifact keys allow lower-case letters, digits and dashes."""
    return "evaluation-" + re.sub(r"[^a-z0-9-]+", "-", run_id.lower()).strip("-")


@flow(name="evaluate", flow_run_name="evaluate-{run_dir}")
async def evaluate(
    run_dir: str,
    metrics: str | list[str] = "all",
    model: str | None = None,
    provider: str | None = None,
    judge_settings: dict[str, Any] | None = None,
    judge_replicas: int = 1,
    probe_replicas: int = 1,
    allow_incomplete: bool = False,
    plot: bool = False,
    scenario: str | None = None,
) -> Evaluation:
    """Score the run in ``run_dir`` and write its report; return what was written.

    ``scenario`` is the run's scenario as the user named it; without it, the folder's
    ``<scenario>.jsonl`` (an installed scenario's name) says, else the parent folder's name, so a
    run folder stored anywhere evaluates. A relative local ``run_dir`` is made absolute.

    One task loads the run and scores its metrics concurrently; an up-to-date entry of a judged
    or model metric is kept, never paid for twice. The report is written even when some metrics
    failed (their entries say ``failed``); the caller reads ``Evaluation.failed``. The headline
    table is published as a Prefect table artifact.

    Raises:
        EvaluationError: the request or run was refused (exit code on the exception).
    """
    install_call_gate()  # judge and probe calls take llm:<provider> slots, as simulations do
    request = check_request(metrics, model, provider, judge_settings, judge_replicas,
                            probe_replicas, allow_incomplete, plot)  # fmt: skip
    try:
        done = await score_run(run_dir, scenario, request)
    finally:
        await current_gate().release_idle()  # slots kept for a next judge call go back at once
    report = done.report
    await acreate_table_artifact(
        table=headline_rows(report, done.scored),
        key=_artifact_key(report.run_id),
        description=f"Evaluation of {report.run_id} (log {report.log_sha256[:12]})",
    )
    return done


class CohortEvaluation(BaseModel):
    """What a cohort evaluation did.

    Attributes:
        selected: Runs the selection held (evaluable or not).
        outcomes: One per run evaluated (or skipped, or refused), in run id order.
        unreadable: Runs that could not be taken at all (not a run log, a broken file), why.
        missing_run_ids: Explicit ``--run-id`` values that resolve to no run.
        not_measured: Runs left unevaluated because the next one would pass the spend cap.
        estimate_usd: Estimated judge spend of the whole cohort, stated before any call
            (None: the judge model is not in the price catalogue; 0.0 without judged metrics).
        spent_usd: Evaluation spend of the runs evaluated now (None: some call not costed).
    """

    selected: int = 0
    outcomes: list[RunOutcome] = []
    unreadable: dict[str, str] = {}
    missing_run_ids: list[str] = []
    not_measured: list[str] = []
    estimate_usd: float | None = 0.0
    spent_usd: float | None = 0.0

    def count(self, state: str) -> int:
        """Outcomes in ``state`` (``scored``, ``skipped``, ``refused``, ``failed``)."""
        return sum(1 for o in self.outcomes if o.state == state)


class SpendCapError(ValueError):
    """The cap cannot be honoured: the judge spend cannot be estimated (one line)."""


@flow(name="evaluate-cohort", flow_run_name="evaluate-cohort-{runs_dir}")
async def evaluate_cohort(
    runs_dir: str,
    selection: dict[str, Any] | None = None,
    request: EvaluationRequest | None = None,
    spend_cap_usd: float | None = None,
    max_runs: int = 5000,
) -> CohortEvaluation:
    """Evaluate every selected run under ``runs_dir`` in this flow, one task per run.

    ``selection`` is the export's (``{"kind": "filters", ...}`` or ``{"kind": "run_ids",
    ...}``; all runs when None). With judged metrics the cohort's judge spend is estimated
    first (observers get ``cohort_estimated``); with ``spend_cap_usd`` a run starts only while
    spent + in flight + its estimate stays within the cap, and the rest are ``not_measured``.
    A run that fails or is refused never stops the others. Observers get ``run_evaluated``
    after each run.

    Raises:
        RunsDirError, SelectionError, StorageError: the selection cannot be resolved.
        SpendCapError: a cap was given and the judge spend cannot be estimated.
    """
    install_call_gate()
    request = request or EvaluationRequest()
    chosen = select_cohort(runs_dir, selection or {"kind": "filters"}, max_runs, request)
    todo = [h for h in chosen.handles if h.run_id not in chosen.fresh]
    result = CohortEvaluation(
        selected=len(chosen.handles) + len(chosen.unreadable),
        unreadable=chosen.unreadable,
        missing_run_ids=chosen.missing_run_ids,
    )
    estimates: dict[str, float | None] = {}
    if request.model is not None:
        estimates = estimate_spend(todo, request)
        result.estimate_usd = add_costs(list(estimates.values()))
    notify("cohort_estimated", len(chosen.handles), result.estimate_usd)
    outcomes: dict[str, RunOutcome] = {}
    for run_id, skipped in chosen.fresh.items():  # up to date: no task, nothing written
        outcomes[run_id] = skipped
        notify("run_evaluated", skipped)
    if spend_cap_usd is not None and result.estimate_usd is None:
        raise SpendCapError(
            f"--spend-cap-usd {spend_cap_usd:g}: the judge {request.provider}:{request.model} "
            "is not in the price catalogue (genai-prices), so its spend cannot be estimated"
        )
    spent, in_flight = 0.0, 0.0
    slots = asyncio.Semaphore(COHORT_CONCURRENCY)
    stop = asyncio.Event()

    async def one(handle: RunHandle) -> None:
        nonlocal spent, in_flight
        async with slots:
            estimate = estimates.get(handle.run_id) or 0.0
            if stop.is_set() or (
                spend_cap_usd is not None and spent + in_flight + estimate > spend_cap_usd + 1e-12
            ):
                stop.set()
                result.not_measured.append(handle.run_id)
                return
            in_flight += estimate
            try:
                outcome = await evaluate_handle(handle, request)
            finally:
                in_flight -= estimate
            spent += estimate if outcome.cost_usd is None else outcome.cost_usd
            outcomes[handle.run_id] = outcome
            notify("run_evaluated", outcome)

    try:
        await asyncio.gather(*(one(h) for h in todo))
    finally:
        await current_gate().release_idle()
    result.outcomes = [outcomes[h.run_id] for h in chosen.handles if h.run_id in outcomes]
    result.not_measured.sort()
    result.spent_usd = add_costs([o.cost_usd for o in result.outcomes])
    return result
