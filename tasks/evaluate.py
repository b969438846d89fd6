"""Tasks of the evaluate flow: plan the evaluation, score one metric per task run, write the report.

``score`` is cached on (log SHA-256, metric name, metric version, judge model, provider and
settings, replicas): evaluating a run again scores only what is missing or changed. Its
parameters hold the loaded run (a live object), so the cache key comes from ``_cache_key`` alone
and Prefect never hashes the parameters. A metric that fails raises, so a failure is
never cached; the flow turns it into a ``failed`` entry.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NONE
from prefect.context import TaskRunContext

from glossogen.evaluation import (
    EvaluationPlan,
    Outcome,
    Report,
    get_metric,
    plan_evaluation,
    score_metric,
    write_html,
    write_outcomes,
)


def cache_key(plan: EvaluationPlan, metric_name: str) -> str:
    """Return the cache key of scoring ``metric_name`` on the plan's run.

    Parts: the log's SHA-256, the metric's name and version, and for judged metrics the judge's
    model, provider, settings and replicas (for the probe, its replicas); the key is the
    metric's name and the SHA-256 of those parts.
    """
    metric = get_metric(metric_name)
    parts: list[Any] = [plan.run.log_sha256, metric.name, metric.version]
    if metric.kind == "judged" and plan.judge is not None:
        parts += [plan.judge.provider, plan.judge.model, plan.judge.settings, plan.judge_replicas]
    if metric.kind == "model":
        parts += [plan.probe_replicas]
    # hashed: the key names the cached result's file, and a model id may hold "/"
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return f"evaluate-{metric.name}-{hashlib.sha256(text.encode()).hexdigest()}"


def _cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    return cache_key(parameters["plan"], parameters["metric_name"])


@task(name="plan_evaluation", cache_policy=NONE)
def plan(
    run_dir: str,
    metrics: str | list[str],
    model: str | None,
    provider: str | None,
    judge_settings: dict[str, Any] | None,
    judge_replicas: int,
    probe_replicas: int,
    allow_incomplete: bool,
    plot: bool,
    scenario: str | None = None,
) -> EvaluationPlan:
    """Check the request and load the run once (refusals raise ``EvaluationError``)."""
    return plan_evaluation(
        run_dir,
        metrics,
        model,
        provider,
        judge_settings,
        judge_replicas,
        probe_replicas,
        allow_incomplete,
        scenario=scenario,
        plot=plot,
    )


@task(
    name="score_metric",
    task_run_name="score-{metric_name}",
    cache_key_fn=_cache_key,
    persist_result=True,
)
async def score(plan: EvaluationPlan, metric_name: str) -> Outcome:
    """Score one metric; raises when it fails (so the failure is not cached)."""
    return await score_metric(plan, get_metric(metric_name))


@task(name="write_report", cache_policy=NONE, retries=2, retry_delay_seconds=1)
def write(
    plan: EvaluationPlan, outcomes: list[Outcome], plot: bool, now: datetime | None = None
) -> Report:
    """Write the sidecars and the merged ``<scenario>_report.json``; ``report.html`` with plot."""
    report = write_outcomes(plan, outcomes, now)
    if plot:
        write_html(plan.run.run_dir, report)
    return report
