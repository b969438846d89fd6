"""Sweeps: a grid of cells times trials, launched once each, summarised with statistics.

A :class:`SweepRequest` (the spec file and the launch's options) becomes a checked plan once
(:func:`prepare_sweep`: the spec, :func:`load_spec`, then every cell, :func:`plan_sweep`); a
:class:`SweepRun` reads the sweep's ledger (labelled runs in the runs folder) and offers the
steps of a launch (what to launch next within the spend cap, what each run's end changes, the
summary); the sweep flow (``flows/sweep.py``) takes the plan whole, owns the loop and the
concurrency, so this package never imports Prefect.
"""

from glossogen.sweep._grid import Cell, TrialKey, expand_grid, idempotency_key, trial_labels
from glossogen.sweep._ledger import RunRecord, read_run, scan_sweep
from glossogen.sweep._plan import (
    QUALIFICATION_ROUNDS,
    QUALIFICATION_TIMEOUT_SECONDS,
    QUALIFICATION_TURNS,
    CellPlan,
    SweepOptions,
    SweepPlan,
    SweepRequest,
    plan_sweep,
    prepare_sweep,
)
from glossogen.sweep._runner import Launch, SweepMode, SweepRun
from glossogen.sweep._spec import SweepError, SweepSpec, load_spec
from glossogen.sweep._spend import RunEstimate, SpendAccount, estimate_run
from glossogen.sweep._stability import JudgeReplay, annotate, replay_judge
from glossogen.sweep._stats import (
    Z_95,
    MetricSummary,
    consistency,
    pass_hat_k,
    summarize_metric,
    wilson_interval,
)
from glossogen.sweep._summary import SUMMARY_NAME, SweepSummary, sweep_url, write_summary

__all__ = [
    "QUALIFICATION_ROUNDS",
    "QUALIFICATION_TIMEOUT_SECONDS",
    "QUALIFICATION_TURNS",
    "SUMMARY_NAME",
    "Z_95",
    "Cell",
    "CellPlan",
    "JudgeReplay",
    "Launch",
    "MetricSummary",
    "RunEstimate",
    "RunRecord",
    "SpendAccount",
    "SweepError",
    "SweepMode",
    "SweepOptions",
    "SweepPlan",
    "SweepRequest",
    "SweepRun",
    "SweepSpec",
    "SweepSummary",
    "TrialKey",
    "annotate",
    "consistency",
    "estimate_run",
    "expand_grid",
    "idempotency_key",
    "load_spec",
    "pass_hat_k",
    "plan_sweep",
    "prepare_sweep",
    "read_run",
    "replay_judge",
    "scan_sweep",
    "summarize_metric",
    "sweep_url",
    "trial_labels",
    "wilson_interval",
    "write_summary",
]
