"""``run_summary.json``: the census of a sweep, per cell and trial, with its statistics.

Written atomically to ``<runs_dir>/sweeps/<sweep_id>/run_summary.json`` each time a run ends and
once at the end, so a reader never sees a half-written file. Every number in it is derived from
the runs' event logs (the ledger) and the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from glossogen.refusals import Refusal
from glossogen.storage import SWEEPS_FOLDER, RunStore, join
from glossogen.sweep._grid import TrialKey
from glossogen.sweep._ledger import RunRecord
from glossogen.sweep._stats import MetricSummary, summarize_metric

SUMMARY_NAME = "run_summary.json"
TrialState = Literal["planned", "running", "done", "failed", "incomplete"]
Stability = Literal["stable", "flaky", "unmeasured"]
METRICS = ("round_success", "completed")
"""Metrics judged pass/fail per trial: ``round_success`` (the run completed and its share of
rounds won reached ``pass_threshold``) and ``completed`` (the run ended ``completed``)."""


def sweep_url(runs_dir: str, sweep_id: str) -> str:
    """The sweep's folder: ``<runs_dir>/sweeps/<sweep_id>``."""
    return join(runs_dir, SWEEPS_FOLDER, sweep_id)


_STATE_OF_STATUS: dict[str, TrialState] = {
    "completed": "done",
    "error": "failed",
    "incomplete": "incomplete",
    "interrupted": "incomplete",
    "running": "running",
}


def state_of(record: RunRecord | None) -> TrialState:
    """The census state of a trial from its run: done, failed, incomplete or running."""
    if record is None:
        return "planned"
    return _STATE_OF_STATUS.get(record.status, "failed")


def passes(record: RunRecord, metric: str, threshold: float) -> bool | None:
    """Whether ``record`` passes ``metric`` (None: not measured, the run has not ended)."""
    if not record.ended:
        return None
    if metric == "completed":
        return record.status == "completed"
    return (
        record.status == "completed"
        and record.round_success is not None
        and record.round_success >= threshold
    )


class TrialSummary(BaseModel):
    """One (cell, trial): its state, run, verdicts and scores."""

    trial: int
    state: TrialState
    run_id: str | None = None
    status: str | None = None
    error: str | None = None
    verdicts: list[bool] = []
    scores: dict[str, Any] = {}
    passed: dict[str, bool | None] = {}
    stability_sample: dict[str, Any] | None = None
    """The second sample of a failed trial (``--stability-retry``); never replaces the first."""


class CellSummary(BaseModel):
    """One cell: its grid values, trials, per-metric statistics and stability annotation."""

    cell_id: str
    index: int
    params: dict[str, Any]
    model: str
    provider: str
    trials: list[TrialSummary]
    metrics: dict[str, MetricSummary]
    stability: Stability
    stability_detail: str


class Census(BaseModel):
    """Trials of the census by state (qualification and stability runs are not counted)."""

    planned: int
    running: int
    done: int
    failed: int
    incomplete: int


class SpendSummary(BaseModel):
    """Spend against the cap, USD."""

    cap_usd: float | None
    spent_usd: float
    in_flight_estimate_usd: float
    estimate_per_run_usd: dict[str, float | None]
    estimate_source: dict[str, str]


AbortReason = Literal["spend_cap", "qualification_failed", "interrupted"]
"""Why a sweep launch stopped early."""


class Aborted(BaseModel):
    """Why the sweep stopped early: ``spend_cap``, ``qualification_failed`` or ``interrupted``.

    Attributes:
        reason: The reason's name.
        detail: One line, a request value that would let it go on named by its field
            (``replace plays it again``).
        refusal: That request value, as data (None: none named), for a surface to name its
            own way (:meth:`said`); not written to ``run_summary.json``, whose ``detail`` says it.
    """

    reason: AbortReason
    detail: str
    refusal: Refusal | None = Field(default=None, exclude=True)

    def said(self, names: Mapping[str, str] | None = None) -> str:
        """Return ``detail``, the request value it names named as ``names`` says (its field)."""
        return self.detail if self.refusal is None else self.refusal.worded(names)


class SweepSummary(BaseModel):
    """The whole ``run_summary.json``."""

    sweep_id: str
    spec_path: str
    """The spec file, absolute (a local path) or as given (an fsspec URL)."""
    scenario: str
    runs_dir: str
    mode: Literal["deployments", "in-process", "mixed"]
    epoch: int
    trials_per_cell: int
    pass_threshold: float
    metrics_defined: dict[str, str]
    census: Census
    cells: list[CellSummary]
    qualification: list[TrialSummary] = []
    spend: SpendSummary
    aborted: Aborted | None = None
    exit_code: int | None = None
    updated_at: str


METRIC_DEFINITIONS = {
    "round_success": "the run completed and rounds won / rounds played >= pass_threshold",
    "completed": "the run ended with status completed",
}


def trial_summary(
    trial: int, record: RunRecord | None, threshold: float, state: TrialState | None = None
) -> TrialSummary:
    """Summarise one trial from its run record (or its planned/incomplete state)."""
    if record is None:
        return TrialSummary(trial=trial, state=state or "planned")
    return TrialSummary(
        trial=trial,
        state=state or state_of(record),
        run_id=record.run_id,
        status=record.status,
        error=record.error,
        verdicts=record.verdicts,
        scores={
            "round_success": record.round_success,
            "rounds_played": record.rounds_played,
            "rounds_won": record.rounds_won,
            "total_messages": record.total_messages,
            "total_chars": record.total_chars,
            "cost_usd": record.cost_usd,
        },
        passed={m: passes(record, m, threshold) for m in METRICS},
    )


def census_of(states: dict[TrialKey, TrialState]) -> Census:
    """Count the census states of the main trials."""
    counts = {s: 0 for s in ("planned", "running", "done", "failed", "incomplete")}
    for key, state in states.items():
        if key.part == "main":
            counts[state] += 1
    return Census(**counts)


def cell_metrics(trials: list[TrialSummary]) -> dict[str, MetricSummary]:
    """Per metric, the statistics over the trials that were measured."""
    return {
        m: summarize_metric([p for t in trials if (p := t.passed.get(m)) is not None])
        for m in METRICS
    }


def now_iso() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_summary(runs_dir: str, summary: SweepSummary) -> str:
    """Write ``run_summary.json`` atomically into the sweep's folder; return its URL.

    Raises:
        StorageError: the storage is unreachable.
    """
    url = sweep_url(runs_dir, summary.sweep_id)
    RunStore(runs_dir).write_json(url, SUMMARY_NAME, summary)
    return join(url, SUMMARY_NAME)
