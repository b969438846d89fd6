"""The evaluate flow: score a finished run into ``<scenario>_report.json``, one task per metric."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from typing import Any, cast

from prefect import flow
from prefect.artifacts import acreate_table_artifact
from prefect.states import State

from glossogen.concurrency import current_gate
from glossogen.evaluation import (
    Evaluation,
    Outcome,
    failed_outcome,
    get_metric,
    headline_rows,
    summarise,
)
from tasks.evaluate import plan, score, write
from tasks.gate import install_call_gate


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

    Every metric is its own task run (cached, see ``tasks/evaluate.py``), scored concurrently;
    judge and probe requests share each provider's ``llm:<provider>`` limit with simulations.
    The report is written even when some metrics failed (their entries say ``failed``); the
    caller reads ``Evaluation.failed``. The headline table is published as a Prefect table artifact.

    Raises:
        EvaluationError: the request or run was refused (exit code on the exception).
    """
    install_call_gate()  # judge and probe calls take llm:<provider> slots, as simulations do
    checked = plan(
        run_dir,
        metrics,
        model,
        provider,
        judge_settings,
        judge_replicas,
        probe_replicas,
        allow_incomplete,
        plot,
        scenario,
    )
    names = [m.name for m in checked.metrics]
    try:
        # Prefect types an async task called with return_state=True as returning State[T];
        # inside a flow's event loop the call returns a coroutine of that State.
        calls = [
            cast("Awaitable[State[Outcome]]", score(checked, name, return_state=True))
            for name in names
        ]
        states = await asyncio.gather(*calls)
    finally:
        await current_gate().release_idle()  # slots kept for a next judge call go back at once
    outcomes = []
    for name, state in zip(names, states, strict=True):
        value = await state.aresult(raise_on_failure=False)
        if isinstance(value, BaseException) or not state.is_completed():
            error = value if isinstance(value, BaseException) else RuntimeError(state.message)
            outcomes.append(failed_outcome(checked, get_metric(name), error))
        else:
            outcomes.append(value)
    report = write(checked, outcomes, plot)
    await acreate_table_artifact(
        table=headline_rows(report, names),
        key=_artifact_key(report.run_id),
        description=f"Evaluation of {report.run_id} (log {report.log_sha256[:12]})",
    )
    return summarise(checked, outcomes, report)
