"""``glossogen run``: validate a launch, then play it as the Prefect ``simulate`` flow."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING

import typer

from glossogen import exit_codes
from glossogen.cli._numbers import FLOAT, finite
from glossogen.cli._refusals import FLAGS, error, said
from glossogen.derive import DeriveError
from glossogen.engine import INTERNAL_FAULT
from glossogen.launch import (
    DEFAULT_MAX_AGENT_TURNS,
    LaunchError,
    ResumeRequest,
    RunConfig,
    RunCostEstimate,
    RunRequest,
    RunResult,
    apply_prefect_defaults,
    check_credentials,
    check_launch,
    check_limits,
    check_model_settings,
    check_runs_dir,
    check_spend_cap,
    estimate_cost,
    observing,
    placeholder_keys,
    plan_resume,
    plan_run,
    turn_cap_warning,
    uncosted_models,
)
from glossogen.storage import LeaseSettingError, StorageError, WriteConflictError, lease_seconds

if TYPE_CHECKING:
    from glossogen.cli._server import DetachedServer

EXIT_TRANSPORT = int(exit_codes.TRANSPORT)
EXIT_INTERNAL = int(exit_codes.INTERNAL)
EXIT_INTERRUPTED = int(exit_codes.INTERRUPTED)


INTERRUPTED = "interrupted; the run's log ends with simulation_ended status 'interrupted'"
"""Why a run stopped by Ctrl-C or SIGTERM ends short (its log sealed ``interrupted``)."""


def _error(message: str) -> None:
    error(message)


def _usd(value: float | None) -> str:
    return "not costed" if value is None else f"${value:.4f}"


def _print_dry_run(config: RunConfig, estimate: RunCostEstimate) -> None:
    """Print each seat's resolved model and settings, the estimated cost and its assumptions."""
    limits = config.limits
    timeout = "none" if limits.run_timeout_seconds is None else f"{limits.run_timeout_seconds:g} s"
    cap = "none" if limits.spend_cap_usd is None else f"${limits.spend_cap_usd:.6f}"
    print(
        f"dry run: {config.scenario}, {config.config_source}, "
        f"{config.knobs.round_count} rounds, max_agent_turns {limits.max_agent_turns}, "
        f"run timeout {timeout}, spend cap {cap}"
    )
    by_seat = {s.agent_id: s for s in estimate.seats}
    for seat in config.seats:
        settings = json.dumps(seat.model_settings, sort_keys=True)
        e = by_seat[seat.agent_id]
        capped = ", turn cap reached" if e.turn_capped else ""
        print(
            f"agent {seat.agent_id}: {seat.provider}:{seat.model} settings={settings} "
            f"~{_usd(e.usd)} ({e.requests} requests{capped})"
        )
    if config.judge:
        print(
            f"judge: {config.judge.provider}:{config.judge.model} ~{_usd(estimate.judge_usd)} "
            f"({estimate.judge_calls} call{'' if estimate.judge_calls == 1 else 's'})"
        )
    played = estimate.rounds_played
    within = (
        f"about {played:.1f} played within the turn cap, {_usd(estimate.per_round_usd)} per round "
        "played"
        if estimate.seats and played < estimate.rounds
        else f"{_usd(estimate.per_round_usd)} per round"
    )
    print(f"estimated cost: {_usd(estimate.total_usd)} for {estimate.rounds} rounds ({within})")
    for line in estimate.assumptions:
        print(f"  assuming {line}")


def run(
    scenario: str = typer.Argument(
        ..., help="Installed scenario name (see `glossogen scenarios`)."
    ),
    overrides: list[str] = typer.Argument(None, help="key=value knob overrides, parsed as JSON."),
    model: str | None = typer.Option(
        None, "--model", help="Default model of every agent (with --resume: as recorded)."
    ),
    provider: str | None = typer.Option(
        None, "--provider", help="Default provider of every agent (with --resume: as recorded)."
    ),
    runs_dir: str | None = typer.Option(
        None, "--runs-dir", help="Root folder or fsspec URL for run output (not with --resume)."
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        help="Preset name (knobs_default) or JSON file path (with --resume: as recorded).",
    ),
    max_agent_turns: int | None = typer.Option(
        None,
        "--max-agent-turns",
        help="Model requests per agent in the whole run (1 or more).",
        show_default=f"{DEFAULT_MAX_AGENT_TURNS}; with --resume: as recorded",
    ),
    run_timeout: float | None = typer.Option(
        None,
        "--run-timeout",
        parser=finite,
        metavar=FLOAT,
        help="Wall-clock limit of the run in seconds; past it the run ends between rounds, "
        "incomplete.",
        show_default="no limit; with --resume: as recorded",
    ),
    spend_cap_usd: float | None = typer.Option(
        None,
        "--spend-cap-usd",
        parser=finite,
        metavar=FLOAT,
        help="USD the run's own model calls may spend; refused at launch when the dry-run "
        "estimate passes it; once reached no new call is made and the run ends incomplete "
        "(exit 20).",
        show_default="no cap; with --resume: as recorded",
    ),
    group_slug: str = typer.Option(
        "",
        "--group-slug",
        help="Tenant group that owns the run.",
        show_default="local; with --resume: as recorded",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Resolve and check, print models and estimated cost; claim nothing.",
    ),
    resume_dir: str = typer.Option(
        "", "--resume", help="An existing run folder to continue in place (a crashed run)."
    ),
    allow_config_change: bool = typer.Option(
        False, "--allow-config-change", help="With --resume: accept a config that differs."
    ),
    judge_cache: str | None = typer.Option(
        None,
        "--judge-cache",
        metavar="DIR",
        help="Judge cache folder (path or fsspec URL), shared across runs: a ruling it holds "
        "is logged cached at $0; one it lacks is asked, priced and kept.",
    ),
) -> int:
    """Play SCENARIO end to end and write <runs-dir>/<scenario>/<unix_ts>/<scenario>.jsonl."""
    for value, flag in ((runs_dir, "--runs-dir"), (model, "--model"),
                        (provider, "--provider"), (config, "--config")):  # fmt: skip
        if value is not None and not value.strip():  # given, but empty: not a missing option
            _error(f"{flag} {value!r} is empty: give it a value")
            return 64
    return play(
        scenario=scenario,
        overrides=list(overrides or []),
        model=model or "",
        provider=provider or "",
        runs_dir=runs_dir or "",
        config=config or "",
        max_agent_turns=max_agent_turns,
        run_timeout=run_timeout,
        spend_cap_usd=spend_cap_usd,
        group_slug=group_slug,
        dry_run=dry_run,
        resume_dir=resume_dir,
        allow_config_change=allow_config_change,
        judge_cache=judge_cache,
    )


def play(
    scenario: str,
    overrides: list[str],
    model: str,
    provider: str,
    runs_dir: str,
    config: str,
    max_agent_turns: int | None = None,
    run_timeout: float | None = None,
    spend_cap_usd: float | None = None,
    group_slug: str = "",
    dry_run: bool = False,
    resume_dir: str = "",
    allow_config_change: bool = False,
    announce: bool = True,
    judge_cache: str | None = None,
) -> int:
    """Check a launch and play it as ``glossogen run`` does (the arguments are its flags).

    Args:
        scenario: Installed scenario name.
        overrides: ``key=value`` knob overrides.
        model: Default model of every agent.
        provider: Default provider of every agent.
        runs_dir: Root folder or fsspec URL for a new run ("" with ``resume_dir``).
        config: Preset name or JSON file path.
        max_agent_turns: Model requests per agent (1 or more; None: 200, or as recorded).
        run_timeout: Wall-clock limit of the run, seconds (None: none, or as recorded).
        spend_cap_usd: USD the run's own calls may spend (None: no cap; resume: as recorded).
        group_slug: Tenant group that owns the run ("": ``local``, or as recorded).
        dry_run: Resolve, check and print the estimate; claim nothing.
        resume_dir: An existing run folder to continue in place ("" for a new run).
        allow_config_change: With ``resume_dir``, accept a config that differs.
        announce: Print ``new_run_id=``/``new_run_dir=`` when the run is claimed; False when
            the caller has printed them already (a derived run played with ``--wait``).
        judge_cache: A judge cache folder the in-run judge asks first (None: none).

    Returns:
        The exit code (``glossogen.exit_codes``); refusals print one ``glossogen: error:`` line.
    """
    refused = _refuse_bad_input(
        max_agent_turns, run_timeout, spend_cap_usd, runs_dir, resume_dir, model, provider, config
    )
    if refused is not None:
        return refused
    try:
        if resume_dir:
            plan, done = _plan_resume(
                ResumeRequest(
                    run_dir=resume_dir,
                    scenario=scenario,
                    model=model or None,
                    provider=provider or None,
                    config=config or None,
                    overrides=overrides,
                    max_agent_turns=max_agent_turns,
                    run_timeout_seconds=run_timeout,
                    spend_cap_usd=spend_cap_usd,
                    group_slug=group_slug or None,
                    allow_config_change=allow_config_change,
                    judge_cache=judge_cache,
                )
            )
        else:
            plan, done = (
                plan_run(
                    RunRequest(
                        scenario=scenario,
                        model=model,
                        provider=provider,
                        runs_dir=runs_dir,
                        config=config,
                        overrides=overrides,
                        max_agent_turns=max_agent_turns or DEFAULT_MAX_AGENT_TURNS,
                        run_timeout_seconds=run_timeout,
                        spend_cap_usd=spend_cap_usd,
                        group_slug=group_slug or "local",
                        judge_cache=judge_cache,
                    )
                ),
                0,
            )
        estimate = _check_launch(plan, done, dry_run, new_runs_dir=runs_dir)
    except (LaunchError, DeriveError, StorageError) as exc:
        _error(said(exc))
        return getattr(exc, "exit_code", EXIT_TRANSPORT)
    _warn_about(plan, resuming=bool(resume_dir))
    if dry_run:
        _print_dry_run(plan, estimate or estimate_cost(plan, done))
        return 0
    apply_prefect_defaults()
    from glossogen.cli._prefect_api import refuse_unreachable_api

    refused = refuse_unreachable_api()  # a PREFECT_API_URL with no server: 69 before the claim
    if refused is not None:
        return refused
    _print_launch_line(plan)
    from glossogen.cli._server import stopped_on_sigterm

    # its temporary server is stopped too, before the process ends; the line a Ctrl-C prints
    with stopped_on_sigterm(INTERRUPTED):
        played = _play_flow(plan, runs_dir, resume_dir, allow_config_change, announce)
    if isinstance(played, int):
        return played
    return _report_result(played)


def _refuse_bad_input(
    max_agent_turns: int | None,
    run_timeout: float | None,
    spend_cap_usd: float | None,
    runs_dir: str,
    resume_dir: str,
    model: str,
    provider: str,
    config: str,
) -> int | None:
    """Print the first flag that is out of bounds, missing or excluded, and return its exit code.

    Returns:
        The exit code of the refusal, or None when every flag is acceptable.
    """
    # Checked here, not with typer's ``min=``: its message does not repeat the value typed.
    try:
        check_limits(max_agent_turns, run_timeout, spend_cap_usd)
    except LaunchError as exc:
        _error(said(exc))
        return exc.exit_code
    if resume_dir and runs_dir:
        _error("--runs-dir and --resume exclude each other (--resume names the run folder)")
        return 64
    try:  # a setting the run's writer lease reads: bad input, refused before anything is written
        lease_seconds()
    except LeaseSettingError as exc:
        _error(str(exc))
        return exc.exit_code
    if resume_dir:
        return None
    for value, flag in ((runs_dir, "--runs-dir"), (model, "--model"),
                        (provider, "--provider"), (config, "--config")):  # fmt: skip
        if not value:
            _error(f"Missing option '{flag}'.")
            return 64
    return None


def _plan_resume(request: ResumeRequest) -> tuple[RunConfig, int]:
    """Plan a resume.

    Returns:
        The run's config and the number of rounds already played.
    """
    plan, point = plan_resume(request)
    return plan, point.state.after_round


def _check_launch(
    plan: RunConfig, done: int, dry_run: bool, new_runs_dir: str
) -> RunCostEstimate | None:
    """Run the launch checks: credentials, model settings, spend cap, and a new run's folder.

    A launch takes them from the library's one ``check_launch`` (MCP's order too). A dry run
    without a key is told what a launch would refuse and estimated all the same.

    Returns:
        The spend cap's dry-run estimate (None when the run has no cap).
    """
    if not dry_run:
        return check_launch(plan, done, new_runs_dir)
    try:
        check_credentials(plan)
    except LaunchError as exc:
        # an estimate needs no key: say what a launch would refuse, and estimate; the
        # settings a model would drop are refused all the same (built with placeholders)
        print(f"glossogen: warning: {said(exc)} (a launch would be refused)", file=sys.stderr)
        with placeholder_keys(plan):
            check_model_settings(plan)
    else:
        check_model_settings(plan)  # building a model needs its key
    estimate = check_spend_cap(plan, max(0, plan.knobs.round_count - done))
    if new_runs_dir:
        check_runs_dir(new_runs_dir)
    return estimate


def _warn_about(plan: RunConfig, resuming: bool) -> None:
    """Warn of models without a price and, for a new run, of a turn cap below the rounds."""
    for name in uncosted_models(plan):
        print(
            f"glossogen: warning: {name} is not in the price catalogue; "
            "its spend is recorded as null",
            file=sys.stderr,
        )
    warning = None if resuming else turn_cap_warning(plan)
    if warning is not None:
        print(f"glossogen: warning: {warning.worded(FLAGS['max_agent_turns'])}", file=sys.stderr,
              flush=True)  # fmt: skip


def _print_launch_line(plan: RunConfig) -> None:
    """Print the launch line the reference pages quote, then the knobs it resolved to."""
    origin = plan.config_source
    print(f"Scenario knobs {'' if origin.startswith('recorded') else 'from '}{origin}", flush=True)
    print(
        f"resolved_config={plan.config_source} "
        + json.dumps(plan.recorded_knobs, sort_keys=True, separators=(",", ":")),
        flush=True,
    )


def _start_temporary_server() -> DetachedServer | None:
    """Start our own temporary Prefect server, saying so on stderr.

    Returns:
        The server, or None when it did not start (the reason printed).
    """
    from glossogen.cli._server import DetachedServer

    timeout = os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]
    print(
        "No PREFECT_API_URL set: waiting for a temporary local Prefect server to start "
        f"(up to a minute or more; timeout {timeout} s)...",
        file=sys.stderr,
        flush=True,
    )
    waited = time.monotonic()
    try:
        server = DetachedServer.start(float(timeout))
    except RuntimeError as exc:
        _error(str(exc))
        return None
    print(f"Prefect server ready after {time.monotonic() - waited:.1f} s", file=sys.stderr)
    return server


def _play_flow(
    plan: RunConfig, runs_dir: str, resume_dir: str, allow_config_change: bool, announce: bool
) -> RunResult | int:
    """Play the planned run as the ``simulate`` (or ``resume``) flow, showing its progress.

    Returns:
        The run's result, or the exit code of a run that failed, was refused or interrupted.
    """
    from glossogen.cli._startup import loading_modules

    with loading_modules():
        from flows.simulate import resume, simulate
        from glossogen.cli._prefect_api import cannot_reach, unreachable_reason
        from glossogen.cli._progress import RunProgress
        from orchestration.runtime import (
            TerminationSignal,
            api_url,
            api_url_configured,
            using_api_url,
        )

    ephemeral = not api_url_configured()
    server: DetachedServer | None = None
    stack = ExitStack()
    if ephemeral:
        # Our own temporary server, in a session of its own and stopped on every way out (an
        # interrupted run leaves with os._exit, which Prefect's own temporary server outlived;
        # SIGTERM: glossogen.cli._server.stopped_on_sigterm).
        server = _start_temporary_server()
        if server is None:
            return EXIT_INTERNAL
        stack.enter_context(using_api_url(server.api_url))
    progress = RunProgress(announce=announce)
    try:
        with stack, observing(progress):
            if resume_dir:
                return asyncio.run(resume(plan, resume_dir, allow_config_change))
            return asyncio.run(simulate(plan, runs_dir=runs_dir))
    except (LaunchError, DeriveError, WriteConflictError) as exc:
        _error(said(exc))  # a write conflict: another writer shipped the log; nothing overwritten
        return exc.exit_code
    except (KeyboardInterrupt, TerminationSignal):
        progress.close()
        if server is not None:
            server.stop(send_queued=False)
        _error(INTERRUPTED)
        # Prefect's shutdown would retry sending queued events to a temporary server that is
        # already gone (tens of seconds); the run's own log is closed, so leave at once.
        sys.stdout.flush()
        os._exit(EXIT_INTERRUPTED)
    except Exception as exc:  # the flow failed: report one line, the log has the rest
        reason = unreachable_reason(exc)
        if reason is not None and not ephemeral:  # the server went away during the run
            progress.close()
            return cannot_reach(str(api_url()), reason)
        _error(f"run failed: {type(exc).__name__}: {exc}")
        return EXIT_INTERNAL
    finally:
        progress.close()
        if server is not None:  # the interrupted path stopped it before leaving
            server.stop()


def _report_result(result: RunResult) -> int:
    """Print the run's summary line and, when it ended short, why.

    Returns:
        The exit code of the run's final status.
    """
    from glossogen.cli._progress import counted

    cost = "not costed" if result.total_cost_usd is None else f"${result.total_cost_usd:.6f}"
    if result.total_cost_usd is None and result.cost_note:
        cost = f"cost unknown ({result.cost_note})"
    capped = result.spend_capped and result.total_cost_usd is not None
    if capped:  # beside the cap's figures below, say which figure this one is
        cost = f"{cost} spent in all (every request logged)"
    errors = ", ".join(f"{n} {kind}" for kind, n in sorted(result.model_errors.items()))
    included = " (postmortems included)" if result.postmortem_messages else ""
    print(
        f"{result.run_id} {result.status}: {result.rounds_won}/{result.rounds_played} rounds won · "
        f"{counted(result.total_messages, 'message')} · {counted(result.total_chars, 'character')}"
        f"{included} · {cost} · {result.tokens.summary()} · "
        f"{result.duration_seconds:.1f} s" + (f" · model errors: {errors}" if errors else ""),
        flush=True,
    )
    internal = result.model_errors.get(INTERNAL_FAULT, 0) if result.status == "error" else 0
    if internal:  # a bug of ours took an agent out, not the provider: 70, said so
        _error(
            f"run error: {result.error}; {internal} of the failures were internal faults of "
            "glossogen (error_kind internal), not the provider's"
        )
        return EXIT_INTERNAL
    if result.status != "completed":
        limit = result.limit
        why = result.error if limit is None else limit.worded(FLAGS.get(limit.field))
        if capped:
            why = (
                f"{why} (spent and in flight as the cap refused that request; what was in "
                "flight then is in the spend in all above)"
            )
        _error(f"run {result.status}: {why}")
    if result.spend_capped:
        return int(exit_codes.NOT_MEASURED)
    return exit_codes.of_run_status(result.status)
