"""``glossogen sweep``: check a sweep spec, then play it as the Prefect ``sweep`` flow."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from functools import partial
from types import FrameType
from typing import Any, TypeVar

import typer

from glossogen import exit_codes
from glossogen.cli._numbers import FLOAT, finite
from glossogen.cli._refusals import FLAGS, error
from glossogen.launch import observing
from glossogen.sweep import SweepError, SweepRequest, prepare_sweep, sweep_url

STABILITY_MODES = ("judge_replay", "agent_rerun")
T = TypeVar("T")


class _Launches:
    """Print one line per run this process starts, or hands to a deployment and sees end."""

    def run_claimed(self, run_id: str, run_url: str, round_count: int) -> None:
        rounds = f"{round_count} round{'' if round_count == 1 else 's'}"
        print(f"run {run_id} started ({rounds}) in {run_url}", flush=True)

    def run_queued(self, trial: str, deployment: str, flow_run_id: str, run_id: str) -> None:
        print(
            f"trial {trial} queued on {deployment} as run {run_id} (flow run {flow_run_id})",
            flush=True,
        )

    def run_returned(self, trial: str, run_id: str, status: str) -> None:
        print(f"trial {trial} ended {status}: run {run_id}", flush=True)

    def run_relaunched(self, trial: str, why: str) -> None:
        print(f"trial {trial}: {why} (nothing was played); launching it again", flush=True)


class Terminated(BaseException):
    """SIGTERM (``timeout``, ``kill``) ended the flow as Ctrl-C does; the command ends by it."""


WAKE_SECONDS = 0.2
"""How often the main thread wakes while a sweep's flow plays in its thread, to run a signal's
handler the kernel delivered to another thread (:func:`play_until_interrupted`)."""


def play_until_interrupted(flow_run: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Play ``flow_run()`` on an event loop of its own thread; SIGINT or SIGTERM cancels it.

    The main thread, which alone takes signals, only waits: a SIGINT or SIGTERM cancels the
    flow's task, the flow's cancellation path cancels each run and awaits its
    ``simulation_ended`` (bounded), and then ``KeyboardInterrupt`` (SIGINT) or
    :class:`Terminated` (a SIGTERM among the signals) is raised, whatever the flow raised
    (Ctrl-C also reaches a temporary Prefect server in the same process group, so reporting the
    flow's state may fail with a connection error). Off the main thread neither Prefect's
    engine nor a run installs its SIGTERM handler, which raises ``TerminationSignal`` in
    whatever task the main thread runs: with several runs' subflows in flight, each entering
    and leaving Prefect's handler, a SIGTERM landed in one run's task, froze it unsealed and
    left the sweep playing. The flow's thread runs in a copy of this context (the API URL).
    """
    started = threading.Event()
    flying: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[T]]] = []
    ended: list[T | BaseException] = []
    signals: list[int] = []

    async def play() -> T:
        task = asyncio.ensure_future(flow_run())
        flying.append((asyncio.get_running_loop(), task))
        started.set()
        return await task

    def in_thread() -> None:
        try:
            ended.append(context.run(asyncio.run, play()))
        except BaseException as exc:  # noqa: BLE001 (handed to the main thread as is)
            ended.append(exc)
        finally:
            started.set()

    def on_signal(signum: int, _: FrameType | None) -> None:
        signals.append(signum)
        started.wait()  # a signal before the task exists cancels it once it does
        for loop, task in flying:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(task.cancel)

    context = contextvars.copy_context()
    thread = threading.Thread(target=in_thread, name="glossogen-sweep-flow")
    try:
        before = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (the first install refused): signals stay as is
        before = {}
    try:
        thread.start()
        # Timed waits, not one untimed join: CPython runs a signal's handler in the main thread
        # only, and when the kernel hands a Ctrl-C or SIGTERM to the flow's thread (any thread
        # may take a process's signal) nothing wakes an untimed wait: the handler never ran
        # and the sweep played on (ci49b: a Ctrl-C test hung 600 s in this join). A timed wait
        # returns to the interpreter, which runs the pending handler within WAKE_SECONDS.
        while thread.is_alive():
            thread.join(WAKE_SECONDS)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    (outcome,) = ended
    if signal.SIGTERM in signals:
        raise Terminated
    if signals:
        raise KeyboardInterrupt
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _summary_mode(runs_dir: str, sweep_id: str) -> str | None:
    """The ``mode`` the sweep's ``run_summary.json`` records (None: not readable)."""
    from glossogen.storage import RunStore
    from glossogen.sweep import sweep_url

    try:
        return RunStore(runs_dir).read_json(sweep_url(runs_dir, sweep_id), "run_summary.json")[
            "mode"
        ]
    except Exception:  # noqa: BLE001 (already on the interrupt's path: say the general line)
        return None


def _interrupted(runs_dir: str, sweep_id: str) -> str:
    """What an interrupted sweep says (Ctrl-C, SIGTERM) of its runs, by where they played."""
    if _summary_mode(runs_dir, sweep_id) in ("deployments", "mixed"):
        return (
            "interrupted; runs played in this process end with simulation_ended "
            "(interrupted), runs on workers play on (the next launch counts them), "
            "run_summary.json says what ran"
        )
    return (
        "interrupted; every run's log ends with simulation_ended (interrupted), "
        "run_summary.json says what ran"
    )


def _error(message: str) -> None:
    error(message)


def _usage_error(
    stability_retry: str, concurrency: int, run_timeout: float, max_turns: int
) -> str | None:
    """Return the line refusing the first flag out of bounds, or None when all are in bounds."""
    if stability_retry and stability_retry not in STABILITY_MODES:
        return f"--stability-retry {stability_retry!r}: use judge_replay or agent_rerun"
    # Bounds are checked here, not with typer's ``min=``: its message omits the value typed.
    if concurrency < 1:
        return f"--concurrency {concurrency}: use 1 or more"
    if not math.isfinite(run_timeout) or run_timeout < 0:
        return (
            f"--run-timeout must be a finite number of seconds, 0 or more (0: none), "
            f"got {run_timeout:g}"
        )
    if max_turns < 0:
        return f"--max-turns must be at least 0 (0: the spec's or 200), got {max_turns}"
    return None


def sweep(
    spec_path: str = typer.Argument(
        ..., metavar="SPEC_PATH", help="Sweep spec (YAML): scenario, grid, trials, cap."
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Start over: relaunch every trial (earlier runs stay on disk)."
    ),
    concurrency: int = typer.Option(4, "--concurrency", help="Runs in flight at once (1 or more)."),
    run_timeout: float = typer.Option(
        0.0,
        "--run-timeout",
        parser=finite,
        metavar=FLOAT,
        help="Seconds per run; a run out of time ends between rounds, incomplete (0: none).",
    ),
    max_turns: int = typer.Option(
        0, "--max-turns", help="Model requests per agent per run (0: the spec's or 200)."
    ),
    qualification: bool = typer.Option(
        False,
        "--qualification",
        help="First one short run per model set; stop (65) if one does not complete.",
    ),
    stability_retry: str = typer.Option(
        "",
        "--stability-retry",
        metavar="[judge_replay|agent_rerun]",
        help="Second sample of each failed trial: judge_replay or agent_rerun.",
    ),
) -> int:
    """Play every (cell, trial) of SPEC_PATH not yet run; write its run_summary.json.

    The summary goes to <runs_dir>/sweeps/<sweep id>/run_summary.json.
    """
    usage = _usage_error(stability_retry, concurrency, run_timeout, max_turns)
    if usage is not None:
        _error(usage)
        return int(exit_codes.USAGE)
    request = SweepRequest(
        spec_path=spec_path,
        replace=replace,
        concurrency=concurrency,
        run_timeout_seconds=run_timeout or None,
        max_turns=max_turns or None,
        qualification=qualification,
        stability_retry=stability_retry or None,  # type: ignore[arg-type]  # pydantic checks the CLI's string against the Literal
    )
    from glossogen.storage import LeaseSettingError

    try:
        planned = prepare_sweep(request)  # the one plan: the flow takes it whole
    except (SweepError, LeaseSettingError) as exc:
        _error(str(exc))
        return exc.exit_code
    spec, sweep_id = planned.spec, planned.sweep_id
    from glossogen.cli._prefect_api import cannot_reach, refuse_unreachable_api, unreachable_reason
    from glossogen.launch import apply_prefect_defaults

    apply_prefect_defaults()
    refused = refuse_unreachable_api()  # a PREFECT_API_URL with no server: 69, nothing launched
    if refused is not None:
        return refused
    print(
        f"sweep {sweep_id}: {len(planned.cells)} cell(s) x {spec.trials} trial(s) of "
        f"{spec.scenario}, runs in {spec.runs_dir}",
        flush=True,
    )
    from flows.sweep import sweep as sweep_flow
    from glossogen.cli._server import DetachedServer, stopped_on_sigterm
    from orchestration.runtime import TerminationSignal, api_url, api_url_configured, using_api_url

    # SIGTERM (timeout, kill): its temporary server is stopped too, before the process ends
    with stopped_on_sigterm(partial(_interrupted, spec.runs_dir, sweep_id)), ExitStack() as stack:
        server: DetachedServer | None = None
        if not api_url_configured():
            print(
                "No PREFECT_API_URL set: every cell plays in this process, on a temporary local "
                "Prefect server (it can take a minute or more to start)...",
                file=sys.stderr,
                flush=True,
            )
            timeout = float(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"])
            try:
                server = DetachedServer.start(timeout)
            except RuntimeError as exc:
                _error(str(exc))
                return int(exit_codes.INTERNAL)
            stack.callback(server.stop)
            stack.enter_context(using_api_url(server.api_url))
        try:
            with observing(_Launches()):
                summary = play_until_interrupted(lambda: sweep_flow(request, planned))
        except SweepError as exc:
            _error(str(exc))
            return exc.exit_code
        except Terminated:
            # The runs' logs are sealed: SIGTERM again, now to stopped_on_sigterm's handler,
            # which prints the line, stops the server and ends the process by the signal.
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()  # the handler runs at once and does not return
            raise
        except (KeyboardInterrupt, TerminationSignal):
            _error(_interrupted(spec.runs_dir, sweep_id))
            sys.stdout.flush()
            if server is not None:
                server.stop(send_queued=False)
            # The runs' logs are sealed (the flow awaited them); Prefect's shutdown would only
            # retry sending queued events, so leave at once.
            os._exit(int(exit_codes.INTERRUPTED))
        except Exception as exc:  # the flow failed: one line, Prefect's log has the rest
            reason = unreachable_reason(exc)
            if reason is not None:  # the server went away during the sweep
                return cannot_reach(api_url() or "the temporary server", reason)
            _error(f"sweep failed: {type(exc).__name__}: {_first_line(exc)}")
            return int(exit_codes.INTERNAL)
    c = summary.census
    print(
        f"sweep {sweep_id}: done {c.done} · failed {c.failed} · incomplete {c.incomplete} · "
        f"running {c.running} · planned {c.planned} · spent ${summary.spend.spent_usd:.6f}"
        + ("" if summary.spend.cap_usd is None else f" of ${summary.spend.cap_usd:.6f}"),
        flush=True,
    )
    if summary.aborted is not None:
        _error(f"sweep stopped early ({summary.aborted.reason}): {summary.aborted.said(FLAGS)}")
    print(f"summary: {sweep_url(spec.runs_dir, sweep_id)}/run_summary.json", flush=True)
    return int(summary.exit_code if summary.exit_code is not None else exit_codes.INTERNAL)
