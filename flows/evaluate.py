"""The evaluate flows: one run into its ``<scenario>_report.json``, or a cohort of runs.

Tasks take small handles (a run's URL and id, the checked request), never a parsed log; the
run's log is read inside its task and the cache is the run's report (see
``tasks/evaluate.py``). A cohort's runs go to tasks in batches, so the Prefect server records a
few task runs, not one per run. Judge and probe requests take ``llm:<provider>`` slots, shared
with simulations (``install_call_gate``); a cohort that calls no model installs no gate.

The cohort flow takes the one request value, ``CohortRequest`` (``launch.check_cohort``
builds it; the ``evaluate-cohort`` deployment passes it as ``request``); a deployment made
before it took that request passes its fields loose, and they are read as one (:func:`cohort_of`).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from prefect.artifacts import acreate_table_artifact
from pydantic import BaseModel

from glossogen.evaluation import (
    CohortRun,
    Evaluation,
    EvaluationRequest,
    RunOutcome,
    headline_rows,
)
from glossogen.launch import CohortRequest, notify
from glossogen.pricing import add_costs
from glossogen.refusals import Refusal
from glossogen.storage import RunFolder
from orchestration import glossogen_flow
from tasks.evaluate import (
    SpendEstimate,
    estimate_spend,
    evaluate_runs,
    score_run,
    select_cohort,
)

COHORT_CONCURRENCY = 4
"""Batches of a cohort that calls a model evaluated at once (their judge and probe calls
overlap; deterministic work does not)."""
BATCH_RUNS = 250
"""Most runs one task of a cohort that calls a model evaluates (one after the other, each log
read once): a 1,000-run cohort is four task runs, one per concurrent batch (each task run costs
the Prefect server its states and events; 100 made it ten)."""
UNCALLED_BATCH_RUNS = 1000
"""Most runs one task of a cohort that calls no model evaluates: its runs are scored one after
the other however they are batched (deterministic work never gives the event loop away), so a
batch per concurrent slot would only add task runs: a 1,000-run cohort is one task run."""


@asynccontextmanager
async def _call_gate(needed: bool = True) -> AsyncIterator[None]:
    """Model calls take ``llm:<provider>`` slots while open; idle slots go back at the end."""
    if not needed:
        yield
        return
    from glossogen.concurrency import current_gate
    from orchestration.gate import install_call_gate

    install_call_gate()  # judge and probe calls take llm:<provider> slots, as simulations do
    try:
        yield
    finally:
        await current_gate().release_idle()  # slots kept for a next call go back at once


def batches(
    runs: list[CohortRun], capped: bool, calls_models: bool = True
) -> list[list[CohortRun]]:
    """Split a cohort's runs into the batches its tasks take, in order.

    When the request may call a model: at least :data:`COHORT_CONCURRENCY` batches when there
    are that many runs, each of at most :data:`BATCH_RUNS`; one run per batch under a spend cap
    with judged work (a run starts only while its estimate fits the cap). When it calls none:
    batches of :data:`UNCALLED_BATCH_RUNS`.
    """
    if capped:
        size = 1
    elif not calls_models:
        size = UNCALLED_BATCH_RUNS
    else:
        size = max(1, min(BATCH_RUNS, math.ceil(len(runs) / COHORT_CONCURRENCY)))
    return [runs[i : i + size] for i in range(0, len(runs), size)]


def _artifact_key(run_id: str) -> str:
    """Prefect artifact keys allow lower-case letters, digits and dashes."""
    return "evaluation-" + re.sub(r"[^a-z0-9-]+", "-", run_id.lower()).strip("-")


def _evaluated_run_name() -> str:
    """``evaluate-<scenario>/<unix_ts>``: the run's id, never its folder's path.

    As the other flows name their runs (``resume``'s run id, ``evaluate-cohort-runs``): a
    server's path (``/srv/data/runs/veyru/1796...``) is not shown in the flow run's name. A
    folder not shaped as a run's is ``<scenario>/<its folder's name>`` (its own name alone
    without a scenario).
    """
    from prefect.runtime import flow_run

    parameters = flow_run.parameters
    run_dir, scenario = str(parameters.get("run_dir", "")), parameters.get("scenario")
    try:
        return f"evaluate-{RunFolder.at(run_dir).run_id}"
    except ValueError:
        pass
    try:  # a run folder stored elsewhere: <scenario>/<its folder's name>
        if isinstance(scenario, str):
            return f"evaluate-{RunFolder.holding(run_dir, scenario).run_id}"
    except ValueError:
        pass
    return f"evaluate-{_folder_name(run_dir)}"


@glossogen_flow(name="evaluate", flow_run_name=_evaluated_run_name)
async def evaluate(
    run_dir: str,
    request: EvaluationRequest | None = None,
    scenario: str | None = None,
) -> Evaluation:
    """Score the run in ``run_dir`` as ``request`` asks and write its report; return it.

    ``request`` is the one value every surface builds (:func:`check_request`, checked once);
    None scores every metric with no judge. ``scenario`` is the run's scenario as the user
    named it; without it, the folder's ``<scenario>.jsonl`` (an installed scenario's name)
    says, else the parent folder's name, so a run folder stored anywhere evaluates. A relative
    local ``run_dir`` is made absolute.

    One task loads the run and scores its metrics concurrently; an up-to-date entry of a judged
    or model metric is kept, never paid for twice. The report is written even when some metrics
    failed (their entries say ``failed``); the caller reads ``Evaluation.failed``. The headline
    table is published as a Prefect table artifact.

    Raises:
        EvaluationError: the run was refused (exit code on the exception).
    """
    request = request or EvaluationRequest()
    async with _call_gate():
        done = await score_run(run_dir, scenario, request)
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
        capped: Why the spend cap held the first run back (``spend_cap_usd`` refused: what was
            spent, which run's estimate would pass it), None when none was held back.
    """

    selected: int = 0
    outcomes: list[RunOutcome] = []
    unreadable: dict[str, str] = {}
    missing_run_ids: list[str] = []
    not_measured: list[str] = []
    estimate_usd: float | None = 0.0
    spent_usd: float | None = 0.0
    capped: Refusal | None = None

    def count(self, state: str) -> int:
        """Outcomes in ``state`` (``scored``, ``skipped``, ``refused``, ``failed``)."""
        return sum(1 for o in self.outcomes if o.state == state)


class SpendCapError(ValueError):
    """The cap cannot be honoured: the judge spend cannot be estimated (one line).

    ``refusal`` names the ``spend_cap_usd`` refused; each surface words it (the CLI its flag).
    """

    def __init__(self, refusal: Refusal) -> None:
        """Keep the refusal; ``str()`` names the request field."""
        super().__init__(refusal.worded())
        self.refusal = refusal


def _held_back(cap: float | None, spent: float, run: CohortRun, usd: float) -> Refusal:
    """The cap's refusal of the first run it held back: nothing spent yet, or what was."""
    if spent <= 0:
        reason = (
            f"the estimated judge spend of {run.run_id}, the first run to score, is ${usd:.6f}, "
            "above the cap: no judge call was made"
        )
    else:
        reason = (
            f"${spent:.6f} spent or in flight, and the estimated judge spend of {run.run_id}, "
            f"the next run to score, ${usd:.6f}, would pass it"
        )
    return Refusal(field="spend_cap_usd", value=f"{cap:g}", reason=reason)


def _cohort_run_name() -> str:
    """``evaluate-cohort-<runs folder's name>`` (``evaluate-cohort-runs``), never its path.

    From the flow run's request (an object, or a deployment's dict) or an older deployment's
    loose ``runs_dir``: the folder's own name alone, so a server's path is not shown in the
    flow run's name (``/srv/data/runs`` is ``runs``; ``s3://bucket/runs`` too).
    """
    from prefect.runtime import flow_run

    parameters = flow_run.parameters
    request = parameters.get("request")
    runs_dir = parameters.get("runs_dir")
    if isinstance(request, dict):
        runs_dir = request.get("runs_dir", runs_dir)
    elif request is not None:
        runs_dir = getattr(request, "runs_dir", runs_dir)
    return f"evaluate-cohort-{_folder_name(str(runs_dir))}"


def _folder_name(runs_dir: str) -> str:
    """The runs directory's own name (``runs`` of ``/srv/data/runs`` or ``s3://b/runs/``)."""
    path = runs_dir.rstrip("/") if "://" in runs_dir else os.path.abspath(runs_dir)
    return path.replace("\\", "/").rsplit("/", 1)[-1] or "root"


def cohort_of(
    request: CohortRequest | EvaluationRequest | None,
    runs_dir: str | None = None,
    selection: dict[str, Any] | None = None,
    spend_cap_usd: float | None = None,
    max_runs: int | None = None,
) -> CohortRequest:
    """The cohort's request: ``request``, or an older deployment's loose parameters read as one.

    An ``evaluate-cohort`` deployment made before the flow took the :class:`CohortRequest`
    passes ``runs_dir`` (and, at run time, ``selection``, ``request`` as the
    :class:`EvaluationRequest`, ``spend_cap_usd``, ``max_runs``): they are read as that request.

    Raises:
        ValueError: a ``CohortRequest`` and loose parameters both, or no runs directory at all
            (one line naming them).
    """
    given = (("runs_dir", runs_dir), ("selection", selection),
             ("spend_cap_usd", spend_cap_usd), ("max_runs", max_runs))  # fmt: skip
    loose = {k: v for k, v in given if v is not None}
    if isinstance(request, CohortRequest):
        if loose:
            raise ValueError(
                "evaluate-cohort takes request (a CohortRequest) or, as an older deployment "
                f"passes them, runs_dir and the rest loose, not both: got request and "
                f"{', '.join(loose)}"
            )
        return request
    if runs_dir is None:
        raise ValueError(
            "evaluate-cohort takes request (a CohortRequest: runs_dir, selection, evaluation, "
            "spend_cap_usd, max_runs)"
        )
    return CohortRequest.model_validate(loose | {"evaluation": request or EvaluationRequest()})


@glossogen_flow(name="evaluate-cohort", flow_run_name=_cohort_run_name)
async def evaluate_cohort(
    request: CohortRequest | EvaluationRequest | None = None,
    runs_dir: str | None = None,
    selection: dict[str, Any] | None = None,
    spend_cap_usd: float | None = None,
    max_runs: int | None = None,
) -> CohortEvaluation:
    """Evaluate every run ``request`` selects under its runs directory, runs batched per task.

    ``request`` is the one value every surface builds (:func:`glossogen.launch.check_cohort`,
    checked once); its ``selection`` is the export's (all runs when None). Each task evaluates
    a batch of runs (:func:`batches`), each log read once; a run whose report is up to date is
    skipped from the report alone. With judged metrics the cohort's judge spend is estimated
    first (observers get ``cohort_estimated``); with ``spend_cap_usd`` a run starts only while
    spent + in flight + its estimate stays within the cap, and the rest are ``not_measured`` (a
    run with nothing to score is skipped, never held back). A run that fails or is refused
    never stops the others. Observers get ``run_evaluated`` after each run.

    Args:
        request: The cohort (:class:`~glossogen.launch.CohortRequest`; a dict of its fields as
            a deployment passes it). An older deployment's ``request``, the
            :class:`EvaluationRequest` alone, is read with the loose parameters (:func:`cohort_of`).
        runs_dir: Only for a deployment made before the flow took the cohort's request: its
            runs directory.
        selection: With ``runs_dir``, the export's selection in its dict form.
        spend_cap_usd: With ``runs_dir``, the judge spend cap (USD).
        max_runs: With ``runs_dir``, the ceiling on the runs selected.

    Raises:
        RunsDirError, SelectionError, StorageError: the selection cannot be resolved.
        SpendCapError: a cap was given and the judge spend cannot be estimated.
        ValueError: the request given both ways, or neither (:func:`cohort_of`).
    """
    cohort = cohort_of(request, runs_dir, selection, spend_cap_usd, max_runs)
    async with _call_gate(cohort.evaluation.calls_models):
        return await _evaluate_cohort(cohort)


async def _evaluate_cohort(cohort: CohortRequest) -> CohortEvaluation:
    request, spend_cap_usd = cohort.evaluation, cohort.spend_cap_usd
    selection = cohort.selection.model_dump() if cohort.selection is not None else None
    chosen = select_cohort(cohort.runs_dir, selection or {"kind": "filters"}, cohort.max_runs,
                           cohort.listed)  # fmt: skip
    result = CohortEvaluation(
        selected=len(chosen.runs) + len(chosen.unreadable),
        unreadable=chosen.unreadable,
        missing_run_ids=chosen.missing_run_ids,
    )
    estimate = SpendEstimate()
    if request.model is not None:
        estimate = estimate_spend(chosen.runs, request)
        result.estimate_usd = add_costs(list(estimate.usd.values()))
    notify("cohort_estimated", len(chosen.runs), result.estimate_usd)
    if spend_cap_usd is not None and result.estimate_usd is None:
        raise SpendCapError(
            Refusal(
                field="spend_cap_usd",
                value=f"{spend_cap_usd:g}",
                reason=f"the judge {request.provider}:{request.model} is not in the price "
                "catalogue (genai-prices), so its spend cannot be estimated",
            )
        )
    capped = spend_cap_usd is not None and request.calls_models
    outcomes: dict[str, RunOutcome] = {}
    spent, in_flight = 0.0, 0.0
    slots = asyncio.Semaphore(COHORT_CONCURRENCY)
    stop = asyncio.Event()

    def admitted(batch: list[CohortRun], usd: float) -> bool:
        if spend_cap_usd is None or all(r.run_id in estimate.up_to_date for r in batch):
            return True
        return not stop.is_set() and spent + in_flight + usd <= spend_cap_usd + 1e-12

    async def one(batch: list[CohortRun]) -> None:
        nonlocal spent, in_flight
        async with slots:
            usd = sum(estimate.usd.get(r.run_id) or 0.0 for r in batch)
            if not admitted(batch, usd):
                stop.set()
                if result.capped is None:
                    result.capped = _held_back(spend_cap_usd, spent + in_flight, batch[0], usd)
                result.not_measured += [r.run_id for r in batch]
                return
            in_flight += usd
            try:
                done = await evaluate_runs(batch, request)
            finally:
                in_flight -= usd
            for outcome in done.outcomes:
                usd_run = estimate.usd.get(outcome.run_id) or 0.0
                spent += usd_run if outcome.cost_usd is None else outcome.cost_usd
                outcomes[outcome.run_id] = outcome
            result.unreadable.update(done.unreadable)

    await asyncio.gather(*(one(b) for b in batches(chosen.runs, capped, request.calls_models)))
    result.outcomes = [outcomes[r.run_id] for r in chosen.runs if r.run_id in outcomes]
    result.not_measured.sort()
    result.spent_usd = add_costs([o.cost_usd for o in result.outcomes])
    return result
