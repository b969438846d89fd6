"""What ``run_summary.json`` says of a sweep launch: census, per-cell statistics, stability, spend.

Read from a :class:`~glossogen.sweep._runner.SweepRun` (its plan, ledger, states, replays and
spend account); the loop that fills them lives in ``_runner.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossogen.storage import absolute
from glossogen.sweep._grid import TrialKey
from glossogen.sweep._stability import SampleOutcome, annotate
from glossogen.sweep._summary import (
    METRIC_DEFINITIONS,
    CellSummary,
    SpendSummary,
    SweepSummary,
    cell_metrics,
    census_of,
    now_iso,
    passes,
    trial_summary,
)

if TYPE_CHECKING:
    from glossogen.sweep._runner import SweepRun

__all__ = ["stability_mode", "summarize"]


def stability_mode(run: SweepRun) -> str | None:
    """The stability mode the summary reports.

    ``--stability-retry`` of this launch, else ``agent_rerun`` when the ledger holds
    stability runs (a re-run without the option keeps what the disk measured).
    """
    if run.plan.options.stability_retry is not None:
        return run.plan.options.stability_retry
    if any(k.part == "stability" for k in run.chosen):
        return "agent_rerun"
    return None


def _second_sample(run: SweepRun, key: TrialKey) -> tuple[SampleOutcome, dict[str, object]] | None:
    mode = stability_mode(run)
    if mode == "judge_replay" and key in run.replays:
        replay = run.replays[key]
        return replay.outcome, {"mode": mode, **replay.model_dump()}
    if mode == "agent_rerun":
        sample = run.chosen.get(TrialKey(key.cell_id, key.trial, "stability"))
        if sample is None or not sample.ended:
            return "unmeasured", {"mode": mode, "run_id": None, "outcome": "unmeasured"}
        ok = passes(sample, "round_success", run.plan.spec.pass_threshold)
        outcome: SampleOutcome = (
            "unmeasured"
            if sample.status != "completed"
            else ("not_reproduced" if ok else "reproduced")
        )
        return outcome, {"mode": mode, "run_id": sample.run_id, "outcome": outcome}
    return None


def summarize(run: SweepRun, exit_code: int | None = None) -> SweepSummary:
    """The census, per-cell statistics, spend and abort reason, as ``run_summary.json``."""
    spec, threshold = run.plan.spec, run.plan.spec.pass_threshold
    requested = stability_mode(run) is not None
    failed = set(run.failed_trials())
    cells = []
    for cell_plan in run.plan.cells:
        cell = cell_plan.cell
        trials, samples = [], []
        for t in range(1, spec.trials + 1):
            key = TrialKey(cell.cell_id, t)
            record = run.chosen.get(key) or run.latest.get(key)
            summary = trial_summary(t, record, threshold, run.states[key])
            if key in run.errors and summary.error is None:
                summary.error = run.errors[key]
            if key in failed and (sample := _second_sample(run, key)) is not None:
                samples.append(sample[0])
                summary.stability_sample = sample[1]
            trials.append(summary)
        n_failed = sum(1 for k in failed if k.cell_id == cell.cell_id)
        stability, detail = annotate(samples, requested, n_failed)
        cells.append(
            CellSummary(
                cell_id=cell.cell_id,
                index=cell.index,
                params=cell.params,
                model=cell.model,
                provider=cell.provider,
                trials=trials,
                metrics=cell_metrics(trials),
                stability=stability,
                stability_detail=detail,
            )
        )
    qualification = [
        trial_summary(k.trial, run.chosen.get(k), threshold).model_copy(
            update={"error": run.errors.get(k) or getattr(run.chosen.get(k), "error", None)}
        )
        for k in (run.plan.qualification_keys() if run.plan.options.qualification else [])
    ]
    return SweepSummary(
        sweep_id=run.plan.sweep_id,
        spec_path=absolute(run.plan.spec_path),
        scenario=spec.scenario,
        runs_dir=spec.runs_dir,
        mode=run.mode,
        epoch=run.epoch,
        trials_per_cell=spec.trials,
        pass_threshold=threshold,
        metrics_defined=METRIC_DEFINITIONS,
        census=census_of(run.states),
        cells=cells,
        qualification=qualification,
        spend=SpendSummary(
            cap_usd=spec.spend_cap_usd,
            spent_usd=run.account.spent_usd,
            in_flight_estimate_usd=run.account.in_flight_usd,
            estimate_per_run_usd={
                c.cell.cell_id: run.estimate_of(c.cell.cell_id)[0] for c in run.plan.cells
            },
            estimate_source={
                c.cell.cell_id: run.estimate_of(c.cell.cell_id)[1] for c in run.plan.cells
            },
        ),
        aborted=run.aborted,
        exit_code=exit_code,
        updated_at=now_iso(),
    )
