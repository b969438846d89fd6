"""The sweep flow: take the plan, launch what the ledger lacks, summarise, exit with a code.

The flow takes the sweep's plan whole (``glossogen sweep`` planned it once from its
``SweepRequest``; a deployment's flow run, handed the request alone, plans it once with the
``plan_sweep`` task). The loop lives here and reads as task calls: ``find_workers``, then per trial
``launch_trial`` (on a worker) or a ``simulate``/``resume`` subflow followed by ``read_trial``
(in this process), and ``publish_census`` after each run ends. What to launch next under the
spend cap, and what each outcome changes, are the Prefect-free steps of
:class:`glossogen.sweep.SweepRun`.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable

from prefect import flow
from prefect.exceptions import TerminationSignal

from flows.simulate import RUN_STARTS, resume, simulate
from glossogen.sweep import (
    Launch,
    RunRecord,
    SweepMode,
    SweepPlan,
    SweepRequest,
    SweepRun,
    SweepSummary,
    TrialKey,
)
from tasks.sweep import (
    find_workers,
    launch_trial,
    planned,
    publish_census,
    read_trial,
    refused_before_start,
)

CANCEL_WAIT_SECONDS = 60.0
"""How long an interrupted sweep waits for its cancelled runs to log ``simulation_ended``."""

LAUNCH_ATTEMPTS = 5
"""Attempts at starting an in-process run the Prefect API refused before it claimed a folder."""

Play = Callable[[Launch], Awaitable[RunRecord]]
"""Plays one trial to its end and returns its record."""


async def play_in_process(
    launch: Launch, sweep_id: str | None = None, epoch: int | None = None
) -> RunRecord:
    """Play the trial in this process as a ``simulate`` subflow of its planned config.

    An interrupted run (``launch.resume_url``) continues in place as a ``resume`` subflow.
    The run is marked starting until it plays its first round (``RUN_STARTS``): the runs
    already playing in this process hold their next round meanwhile.
    Given the sweep's id and epoch, a run the Prefect API refused to start
    (:func:`tasks.sweep.refused_before_start`) is launched again, up to
    :data:`LAUNCH_ATTEMPTS` times, after a jittered exponential wait (tenacity; 1 to 20 s).
    """
    from tenacity import (
        AsyncRetrying,
        retry_if_exception,
        stop_after_attempt,
        wait_random_exponential,
    )

    def retryable(exc: BaseException) -> bool:
        if sweep_id is None or epoch is None:
            return False
        return refused_before_start(exc, launch, sweep_id, epoch)

    async for attempt in AsyncRetrying(
        retry=retry_if_exception(retryable),
        stop=stop_after_attempt(LAUNCH_ATTEMPTS),
        wait=wait_random_exponential(multiplier=1, max=20),
        reraise=True,
    ):
        with attempt, RUN_STARTS.starting():  # the runs playing here hold their rounds
            if launch.resume_url is None:
                result = await simulate(launch.config, runs_dir=launch.request.runs_dir)
            else:
                result = await resume(run_dir=launch.resume_url)
    return read_trial(launch, result.run_id, result.run_url)


async def launch_all(
    run: SweepRun,
    keys: list[TrialKey],
    play: Play,
    publish: Callable[[SweepSummary], Awaitable[None]] | None = None,
) -> None:
    """Launch every key ``run`` still lacks, in order, at most ``concurrency`` at once.

    Each launch is admitted by :meth:`SweepRun.admit` (the spend cap, the trial claims); the
    first refused by the cap stops launching and leaves the rest ``incomplete``. Runs in flight
    are awaited; on an interrupt each is cancelled and given :data:`CANCEL_WAIT_SECONDS` to seal
    its log.
    """
    slots = asyncio.Semaphore(run.plan.options.concurrency)
    flying: list[asyncio.Task[None]] = []
    pending = run.missing(keys)
    try:
        for index, key in enumerate(pending):
            await slots.acquire()
            launch = run.admit(key, len(pending) - index)
            if launch is None:
                slots.release()
                if run.aborted is not None:
                    run.not_launched(pending[index:])
                    break
                continue
            flying.append(asyncio.create_task(_play(run, launch, play, slots, publish)))
        if flying:
            await asyncio.gather(*flying)
    except BaseException:
        for task in flying:
            task.cancel()
        if flying:
            await asyncio.wait(flying, timeout=CANCEL_WAIT_SECONDS)
        raise


async def _play(
    run: SweepRun,
    launch: Launch,
    play: Play,
    slots: asyncio.Semaphore,
    publish: Callable[[SweepSummary], Awaitable[None]] | None,
) -> None:
    try:
        record = await play(launch)
    except (KeyboardInterrupt, asyncio.CancelledError):
        run.cut_off(launch)
        raise
    except Exception as exc:  # noqa: BLE001 (one run's failure is recorded, the sweep goes on)
        run.failed(launch, exc)
    else:
        run.finished(launch, record)
    finally:
        slots.release()
    if publish is not None:
        await publish(run.summary())


def _run_name() -> str:
    """``sweep-<spec path>``, from the flow run's request (an object, or a deployment's dict)."""
    from prefect.runtime import flow_run

    request = flow_run.parameters.get("request")
    if isinstance(request, dict):
        return f"sweep-{request.get('spec_path', '')}"
    return f"sweep-{getattr(request, 'spec_path', '')}"


@flow(name="sweep", flow_run_name=_run_name)
async def sweep(request: SweepRequest, plan: SweepPlan | None = None) -> SweepSummary:
    """Play every (cell, trial) of the spec that has no run yet, and write ``run_summary.json``.

    ``plan`` is ``request`` planned (:func:`glossogen.sweep.prepare_sweep`), taken whole;
    without it (a deployment's flow run) the request is planned here, once.

    A cell whose provider has a ``simulate-<provider>`` deployment with a worker online runs
    there (``launch_trial``, idempotency key ``<sweep>/<cell>/<trial>@<claim nonce>``); the
    others play in this process as ``simulate`` subflows. The summary's ``exit_code`` is the
    sweep's (0, 1 a run failed, 20 not measured, 65 qualification failed, 130 interrupted).

    Raises:
        SweepError: the spec or a cell is refused (nothing launched or written).
    """
    sweep_plan = plan if plan is not None else planned(request)
    options = sweep_plan.options
    served = set(await find_workers([c.cell.provider for c in sweep_plan.cells]))
    providers = {c.cell.provider for c in sweep_plan.cells}
    mode: SweepMode = (
        "deployments" if providers <= served else "mixed" if providers & served else "in-process"
    )
    run = SweepRun(sweep_plan, mode)

    async def play(launch: Launch) -> RunRecord:
        if launch.request.provider in served:
            record = await launch_trial(launch, sweep_plan.sweep_id, run.epoch)
            if record is not None:
                return record
        return await play_in_process(launch, sweep_plan.sweep_id, run.epoch)

    # The runs played here share this process. A full collection of its heap (Prefect,
    # pydantic-ai and the provider SDKs: hundreds of thousands of objects) held up every run
    # for a large fraction of a second at a time on 2 cores (bench/sweep_throughput.py). What
    # exists now (modules, classes, clients) mostly outlives the sweep: leave it out of
    # collections until the sweep ends, then hand it back to the collector.
    frozen = mode != "deployments"
    if frozen:
        gc.freeze()
    try:
        if options.qualification:
            await launch_all(run, sweep_plan.qualification_keys(), play, publish_census)
        if not options.qualification or run.qualified():
            await launch_all(run, sweep_plan.main_keys(), play, publish_census)
            if options.stability_retry == "agent_rerun":
                await launch_all(run, run.rerun_keys(), play, publish_census)
            elif options.stability_retry == "judge_replay":
                await run.replay_judges()
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
