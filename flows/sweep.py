"""The sweep flow: plan the grid, launch what the ledger lacks, summarise, exit with a code."""

from __future__ import annotations

import asyncio
import gc

from prefect import flow
from prefect.exceptions import TerminationSignal

from glossogen.sweep import Launch, RunRecord, SweepOptions, SweepRun, SweepSummary
from tasks.sweep import find_workers, launch_deployment, launch_subflow, plan, publish_census

DEFAULT_CONCURRENCY = 4
"""Runs in flight at once when ``concurrency`` is not given."""


@flow(name="sweep", flow_run_name="sweep-{spec_path}")
async def sweep(
    spec_path: str,
    replace: bool = False,
    concurrency: int | None = None,
    run_timeout_seconds: float | None = None,
    max_turns: int | None = None,
    qualification: bool = False,
    stability_retry: str | None = None,
) -> SweepSummary:
    """Play every (cell, trial) of the spec that has no run yet, and write ``run_summary.json``.

    A cell whose provider has a ``simulate-<provider>`` deployment with a worker online runs
    there (``run_deployment`` with the idempotency key ``<sweep>/<cell>/<trial>@<claim nonce>``);
    the others play in this process as ``simulate`` subflows. The summary's ``exit_code`` is the
    sweep's (0, 1 a run failed, 20 not measured, 65 qualification failed, 130 interrupted).

    Raises:
        SweepError: the spec or a cell is refused (nothing launched or written).
    """
    options = SweepOptions(
        replace=replace,
        concurrency=concurrency or DEFAULT_CONCURRENCY,
        run_timeout_seconds=run_timeout_seconds,
        max_turns=max_turns,
        qualification=qualification,
        stability_retry=stability_retry,  # type: ignore[arg-type]
    )
    sweep_plan = plan(spec_path, options)
    served = set(await find_workers([c.cell.provider for c in sweep_plan.cells]))
    providers = {c.cell.provider for c in sweep_plan.cells}
    mode = "deployments" if providers <= served else "mixed" if providers & served else "in-process"
    run: SweepRun

    async def launcher(launch: Launch) -> RunRecord:
        if launch.request.provider in served:
            return await launch_deployment(launch, sweep_plan.sweep_id, run.epoch)
        return await launch_subflow(launch, sweep_plan.sweep_id, run.epoch)

    # The runs played here share this process. A full collection of its heap (Prefect,
    # pydantic-ai and the provider SDKs: hundreds of thousands of objects) held up every run
    # for 0.5-0.6 s at a time on 2 cores (bench/sweep_throughput.py). What exists now (modules,
    # classes, clients) mostly outlives the sweep: leave it out of collections until the sweep
    # ends, then hand it back to the collector.
    frozen = mode != "deployments"
    if frozen:
        gc.freeze()
    run = SweepRun(sweep_plan, mode, launcher, publish_census)
    try:
        if not options.qualification or await run.qualify():
            await run.launch_all(sweep_plan.main_keys())
            if options.stability_retry:
                await run.resample()
    except (KeyboardInterrupt, asyncio.CancelledError, TerminationSignal):
        run.interrupted()
        run.write(run.exit_code())
        raise
    finally:
        run.close()
        if frozen:
            gc.unfreeze()
    summary = run.write(run.exit_code())
    await publish_census(summary)
    return summary
