"""The simulate and resume flows: the whole life of a run as a dozen task calls."""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from prefect.exceptions import TerminationSignal

from glossogen.concurrency import current_gate
from glossogen.engine import STOP_SETTLE_SECONDS
from glossogen.eventlog import EndStatus
from glossogen.launch import (
    ResumeRequest,
    RunConfig,
    RunRequest,
    RunResult,
    RunSession,
    plan_resume,
    plan_run,
)
from glossogen.launch import price_spend as price
from glossogen.refusals import LimitReached
from glossogen.storage import RunFolder
from orchestration import glossogen_flow
from orchestration.gate import install_call_gate
from tasks.config import check_credentials
from tasks.resume import finish_round, open_resume_point, reopen_run
from tasks.rounds import (
    claim_run_dir,
    finalize,
    play_round,
    price_spend,
    publish_run_table,
    record_own_flow_run,
    start_run,
)


@glossogen_flow(name="simulate", flow_run_name="{config.scenario}")
async def simulate(
    config: RunConfig | RunRequest, runs_dir: str = "", run_dir: str = ""
) -> RunResult:
    """Play ``config.scenario`` for its ``round_count`` rounds and return how it ended.

    Args:
        config: The run as planned (:func:`glossogen.launch.plan_run`, as the CLI and the
            sweep do before they launch), or a request, planned here once.
        runs_dir: Runs root under which a fresh folder is claimed (default: the request's).
        run_dir: A folder the launcher already claimed (instead of ``runs_dir``).

    Status is ``completed``; ``error`` when every agent was taken out by failures (a provider
    refusing every call) or the flow crashed; ``incomplete`` when every agent reached
    ``max_agent_turns`` before the last round; ``interrupted`` on Ctrl-C or cancellation.
    """
    install_call_gate()
    if isinstance(config, RunRequest):
        runs_dir = runs_dir or config.runs_dir
        config = plan_run(config)
    await check_credentials(config)
    folder = await claim_run_dir(config, runs_dir, run_dir)
    session = await start_run(config, folder)
    return await stop_cancels(play_rounds(config, folder, session), folder)


def _resumed_run_id() -> str:
    """Name a resume flow run after the run it continues (``<scenario>/<unix_ts>``)."""
    from prefect.runtime import flow_run

    try:
        return RunFolder.at(str(flow_run.parameters.get("run_dir", ""))).run_id
    except ValueError:
        return "resume"


@glossogen_flow(name="resume", flow_run_name=_resumed_run_id)
async def resume(
    config: RunConfig | None = None, run_dir: str = "", allow_config_change: bool = False
) -> RunResult:
    """Continue the run in ``run_dir`` in place, appending to its log, to ``round_count``.

    Args:
        config: The run as it goes on (:func:`glossogen.launch.plan_resume`: its recorded
            config with the changes asked for); None: as the run recorded it, planned here.
        run_dir: The run folder.
        allow_config_change: Accept a ``config`` that differs from the record (the difference
            is logged in ``run_resumed``).

    The round that never finished reopens (``run_resumed``); a finished run is refused.
    """
    install_call_gate()
    if config is None:
        config, _ = plan_resume(ResumeRequest(run_dir=run_dir))
    await check_credentials(config)
    point = await open_resume_point(config, run_dir, allow_config_change)
    await record_own_flow_run(point.folder)
    session = await reopen_run(config, point)
    return await stop_cancels(play_rounds(config, point.folder, session), point.folder)


class RunStarts:
    """The runs of this process still starting, and the rounds held while they do.

    A sweep plays its in-process runs as tasks of one event loop. A run's start (its flow run
    created on the Prefect API, its folder claimed, its session opened) is hundreds of awaits,
    and each waits one turn of the loop, in which every run already playing takes its own step:
    with three scripted runs playing flat out, the fourth started about a minute after the
    others on 2 loaded cores (the sweep's SIGTERM test: logs at 15, 20, 39 and 76 s). So a run
    is marked starting from its launch (:meth:`starting`) until it plays its first round
    (:meth:`started`), and a playing run waits before each round until no run is starting
    (:meth:`quiet`): every start runs alone, and then all play.
    """

    def __init__(self) -> None:
        """No run starting."""
        self._starting: set[object] = set()
        self._quiet: list[asyncio.Future[None]] = []
        self.holding = 0
        """How many runs hold their next round now, waiting for the starts to end."""
        self._mine: contextvars.ContextVar[object | None] = contextvars.ContextVar(
            "run_start", default=None
        )

    @contextmanager
    def starting(self) -> Iterator[None]:
        """Mark the run launched in this context starting, until it plays or this ends."""
        start = object()
        self._starting.add(start)
        token = self._mine.set(start)
        try:
            yield
        finally:
            self._mine.reset(token)
            self._done(start)

    def started(self) -> None:
        """The run of this context has started (no-op for a run no launch marked)."""
        start = self._mine.get()
        if start is not None:
            self._done(start)

    def _done(self, start: object) -> None:
        self._starting.discard(start)
        if not self._starting:
            quiet, self._quiet = self._quiet, []
            for fut in quiet:
                if not fut.done():
                    fut.set_result(None)

    async def quiet(self) -> None:
        """Return once no run of this process is starting."""
        while self._starting:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._quiet.append(fut)
            self.holding += 1
            try:
                await fut
            finally:
                self.holding -= 1


RUN_STARTS = RunStarts()
"""The starts of this process's runs (:class:`RunStarts`)."""


INTERRUPTED_PUBLISH_SECONDS = 10.0
"""How long an interrupted run waits to publish its table artifact (the log is sealed first)."""


async def publish_after_interrupt(folder: RunFolder) -> None:
    """Publish an interrupted run's table, giving up after :data:`INTERRUPTED_PUBLISH_SECONDS`.

    Never raises: a second interrupt or cancellation while publishing only loses the table
    (the log is already sealed, and the caller re-raises the first one).
    """
    try:
        async with asyncio.timeout(INTERRUPTED_PUBLISH_SECONDS):
            await publish_run_table(folder)
    except (Exception, KeyboardInterrupt, asyncio.CancelledError, TerminationSignal):
        return


async def settle_after_interrupt(session: RunSession) -> None:
    """Wait up to :data:`STOP_SETTLE_SECONDS` for the answers of requests already sent.

    Never raises: a second interrupt or cancellation ends the wait, and the requests still
    open are then logged with their cost unknown when the run ends.
    """
    try:
        await session.settle_requests(STOP_SETTLE_SECONDS)
    except (Exception, KeyboardInterrupt, asyncio.CancelledError, TerminationSignal):
        return


def answer_a_stop(folder: RunFolder) -> None:
    """Raise ``KeyboardInterrupt`` when a stop was recorded for this process.

    ``glossogen stop`` (the page's Stop, MCP ``stop_run``) records the stop in the folder before
    it sends SIGINT (:meth:`RunFolder.request_stop`); a process that could not answer the
    signal (it came while the process started: coverage's ``.pth`` wraps its import in a bare
    ``except:``, which swallows the ``KeyboardInterrupt``) answers it here, before its next
    round, and the run ends ``interrupted`` as on the signal.
    """
    if folder.stop_requested():
        raise KeyboardInterrupt


STOPPED = "glossogen stop: the run ended 'interrupted' (resumable)"
"""The message of the ``Cancelled`` state a stopped run's flow run ends in."""


async def stop_cancels(playing: Awaitable[RunResult], folder: RunFolder) -> Any:
    """Play, and end the flow run ``Cancelled`` when ``glossogen stop`` stopped the run.

    A stop (the page's Stop, MCP ``stop_run``) records itself in the folder and sends SIGINT;
    the run seals its log ``interrupted`` and raises what the signal raised in it (asyncio's
    cancellation of the main task under ``asyncio.run``, or ``KeyboardInterrupt``), which
    Prefect records as a crash (``Crashed``: "Execution was cancelled by the runtime
    environment"). A stop is a user's cancel, so the flow returns Prefect's ``Cancelled`` state
    instead, carrying that exception as its data: Prefect raises it again to the flow's
    caller, which leaves ``interrupted`` as before (exit 130). A Ctrl-C or a cancellation no
    stop recorded stays Prefect's to record.
    """
    from prefect.states import Cancelled

    try:
        return await playing
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        if not folder.stop_requested():
            raise
        return Cancelled(message=STOPPED, data=exc)


_terminated: dict[asyncio.Task[Any], bool] = {}
"""The tasks playing rounds in this process, each with whether a SIGTERM cancelled it."""
_handler_before: Any = None
"""The SIGTERM handler :func:`sigterm_cancels_rounds` replaced (Prefect's), restored after."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    for task in _terminated:
        _terminated[task] = True
        task.get_loop().call_soon_threadsafe(task.cancel)


def started_by_prefect() -> bool:
    """Whether Prefect started this process to play a flow run (a worker's, a runner's).

    Such a process is handed its flow run in ``PREFECT__FLOW_RUN_ID``: a worker sets it in
    the environment of every flow-run process it starts, a deployment's runner in its
    ``prefect.engine`` child, and Prefect's engine entry reads the flow run from it. A process
    of our own (``glossogen run``, a sweep or a script playing the flow in-process) creates its
    flow run itself and is never handed one. The variable is read, not the runner's control
    channel: Prefect consumes that channel's variables when the engine starts and keeps it
    only in private state.
    """
    return bool(os.environ.get("PREFECT__FLOW_RUN_ID"))


@contextmanager
def sigterm_cancels_rounds() -> Iterator[Callable[[], bool]]:
    """While rounds play, make SIGTERM cancel the task playing them; yield "was it SIGTERM?".

    Prefect's own handler raises ``TerminationSignal`` in whatever the main thread runs: in a
    seat's task (a tool call) it only ended that task, the round waited for a seat that would
    never answer and the run hung, its log unsealed. Cancelling the playing task, as asyncio
    answers Ctrl-C, always reaches the run. Off the main thread signals stay Prefect's.

    In a process Prefect started (:func:`started_by_prefect`) SIGTERM stays Prefect's too:
    there it is the worker's or runner's way to stop the flow run, and its cancellation
    (``glossogen stop``, ``reconcile``) is acknowledged to the runner only while Prefect's own
    handler is the one installed (unacknowledged, the runner kills the process as a crash).
    """
    global _handler_before
    task = asyncio.current_task()
    assert task is not None
    if started_by_prefect():
        # Read from how the process was started (a public variable Prefect hands its flow-run
        # processes), not from the runner's control channel, which only Prefect's private
        # state holds once its engine has started.
        yield lambda: False
        return
    if not _terminated:
        try:
            _handler_before = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread
            yield lambda: False
            return
    _terminated[task] = False
    try:
        yield lambda: _terminated[task]
    finally:
        del _terminated[task]
        if not _terminated:
            before, _handler_before = _handler_before, None
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)


async def play_rounds(
    config: RunConfig,
    folder: RunFolder,
    session: RunSession,
    clock: Callable[[], float] = time.monotonic,
) -> RunResult:
    """Play the session's remaining rounds, then price the run and log how it ended.

    With ``config.limits.run_timeout_seconds``, a run whose wall-clock time has passed it
    stops between rounds, ``incomplete``: the seconds of the processes that played it before
    (``session.earlier_seconds``) plus this one's (``clock``, seconds, counted from here).

    A SIGTERM (``timeout``, ``kill``) ends the run ``interrupted`` as Ctrl-C does, its log
    sealed, then raises ``TerminationSignal`` for Prefect to end the flow run; in a process a
    Prefect worker started, SIGTERM is left to Prefect (:func:`sigterm_cancels_rounds`).
    """
    with sigterm_cancels_rounds() as terminated:
        try:
            return await _play_rounds(config, folder, session, clock)
        except asyncio.CancelledError as exc:
            if not terminated():
                raise
            cancelled = exc
    task = asyncio.current_task()
    assert task is not None
    task.uncancel()  # the cancel was the signal's, raised as Prefect's own
    raise TerminationSignal(signal=signal.SIGTERM) from cancelled


async def _play_rounds(
    config: RunConfig, folder: RunFolder, session: RunSession, clock: Callable[[], float]
) -> RunResult:
    """Play, price and log the run for :func:`play_rounds`."""
    status: EndStatus = "completed"
    error: str | LimitReached | None = None
    timeout = config.limits.run_timeout_seconds
    # The limit is the run's: the seconds earlier processes played it count against it.
    deadline = None if timeout is None else clock() + timeout - session.earlier_seconds
    RUN_STARTS.started()
    try:
        answer_a_stop(folder)
        first = session.first_round
        if session.postmortem_only:
            await finish_round(session, first)
            first += 1
        last = config.knobs.round_count
        for round_number in range(first, last + 1):
            await RUN_STARTS.quiet()  # a run starting in this process goes first
            answer_a_stop(folder)
            if session.spend_capped:  # a resumed run whose logged spend reached the cap
                status, error = "incomplete", session.spend_cap_reason(round_number - 1, last)
                break
            await play_round(session, round_number)
            if session.spend_capped:  # checked first: the cap is why its agents are out
                status, error = "incomplete", session.spend_cap_reason(round_number, last)
                break
            if ended := session.ended_early():
                status, error = ended
                break
            if deadline is not None and round_number < last and clock() >= deadline:
                status = "incomplete"
                error = f"run timeout: {timeout:g} s passed after round {round_number} of {last}"
                break
        if status == "completed" and (void := session.void_rounds_error()):
            status, error = "error", void
    except BaseException as exc:
        # Ctrl-C and ``glossogen stop`` (SIGINT), a Prefect cancellation (the flow's task
        # cancelled, or the worker's SIGTERM raised as TerminationSignal): one path.
        interrupted = isinstance(
            exc, KeyboardInterrupt | asyncio.CancelledError | TerminationSignal
        )
        status = "interrupted" if interrupted else "error"
        error = "interrupted" if interrupted else f"{type(exc).__name__}: {exc}"[:300]
        if interrupted:
            # The answers the provider is already giving are waited for, a bounded time, so
            # they are priced (a second interrupt stops the wait; the rest are logged with
            # their cost unknown). Ctrl-C reaches a temporary Prefect server too (same process
            # group): the log is ended with the library's plain calls, which need no API, so it
            # is always sealed; only then is the table published, bounded, as a display that
            # may not make it.
            await settle_after_interrupt(session)
            session.finish(price(folder), status, error)
            await publish_after_interrupt(folder)
        else:
            await session.settle_requests()
            await finalize(session, await price_spend(folder), status, error)
            await publish_run_table(folder)
        raise
    finally:
        await current_gate().release_idle()  # slots kept for a next call go back at once
    await session.settle_requests()  # abandoned requests are priced before the run's total
    result = await finalize(session, await price_spend(folder), status, error)
    await publish_run_table(folder)  # the run's rounds in the Prefect UI, linked to its page
    return result
