"""``glossogen run``: validate a launch, then play it as the Prefect ``simulate`` flow."""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time
from contextlib import ExitStack

import typer

from glossogen import exit_codes
from glossogen.derive import DeriveError
from glossogen.engine import INTERNAL_FAULT
from glossogen.launch import (
    DEFAULT_MAX_AGENT_TURNS,
    LaunchError,
    ResumeRequest,
    RunConfig,
    RunCostEstimate,
    RunRequest,
    check_credentials,
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

EXIT_TRANSPORT = int(exit_codes.TRANSPORT)
EXIT_INTERNAL = int(exit_codes.INTERNAL)
EXIT_INTERRUPTED = int(exit_codes.INTERRUPTED)
EXIT_CODES = {
    "completed": 0,
    "incomplete": 1,
    "error": EXIT_TRANSPORT,
    "interrupted": EXIT_INTERRUPTED,
}
"""Exit code per final run status (``glossogen.exit_codes``; 1 = ended short of its rounds)."""

PREFECT_DEFAULTS = {
    # A temporary server on a small, loaded machine can take longer than Prefect's default 20 s.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The console shows our progress and one-line errors; Prefect's own lines (tracebacks
    # included) still reach its API and UI. Set it to INFO to see them on the terminal.
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
}


def _error(message: str) -> None:
    print(f"glossogen: error: {message}", file=sys.stderr, flush=True)


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
        help="Wall-clock limit of the run in seconds; past it the run ends between rounds, "
        "incomplete.",
        show_default="no limit; with --resume: as recorded",
    ),
    spend_cap_usd: float | None = typer.Option(
        None,
        "--spend-cap-usd",
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

    Returns:
        The exit code (``glossogen.exit_codes``); refusals print one ``glossogen: error:`` line.
    """
    # Checked here, not with typer's ``min=``: its message does not repeat the value typed.
    if max_agent_turns is not None and max_agent_turns < 1:
        _error(f"--max-agent-turns must be at least 1, got {max_agent_turns}")
        return 64
    if run_timeout is not None and not (math.isfinite(run_timeout) and run_timeout > 0):
        _error(f"--run-timeout must be a number of seconds above 0, got {run_timeout:g}")
        return 64
    if spend_cap_usd is not None and not (math.isfinite(spend_cap_usd) and spend_cap_usd > 0):
        _error(f"--spend-cap-usd must be a number of USD above 0, got {spend_cap_usd:g}")
        return 64
    if resume_dir and runs_dir:
        _error("--runs-dir and --resume exclude each other (--resume names the run folder)")
        return 64
    try:  # a setting the run's writer lease reads: bad input, refused before anything is written
        lease_seconds()
    except LeaseSettingError as exc:
        _error(str(exc))
        return exc.exit_code
    if not resume_dir:
        for value, flag in ((runs_dir, "--runs-dir"), (model, "--model"),
                            (provider, "--provider"), (config, "--config")):  # fmt: skip
            if not value:
                _error(f"Missing option '{flag}'.")
                return 64
    try:
        done = 0  # rounds already played (a resume's)
        if resume_dir:
            plan, point = plan_resume(
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
                )
            )
            done = point.state.after_round
        else:
            plan = plan_run(
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
                )
            )
        try:
            check_credentials(plan)
        except LaunchError as exc:
            if not dry_run:
                raise
            # an estimate needs no key: say what a launch would refuse, and estimate; the
            # settings a model would drop are refused all the same (built with placeholders)
            print(f"glossogen: warning: {exc} (a launch would be refused)", file=sys.stderr)
            with placeholder_keys(plan):
                check_model_settings(plan)
        else:
            check_model_settings(plan)  # building a model needs its key
        estimate = check_spend_cap(plan, max(0, plan.knobs.round_count - done))
        if not resume_dir:
            check_runs_dir(runs_dir)
    except (LaunchError, DeriveError, StorageError) as exc:
        _error(str(exc))
        return getattr(exc, "exit_code", EXIT_TRANSPORT)
    for name in uncosted_models(plan):
        print(
            f"glossogen: warning: {name} is not in the price catalogue; "
            "its spend is recorded as null",
            file=sys.stderr,
        )
    warning = None if resume_dir else turn_cap_warning(plan)
    if warning is not None:
        print(f"glossogen: warning: {warning}", file=sys.stderr, flush=True)
    if dry_run:
        _print_dry_run(plan, estimate or estimate_cost(plan, done))
        return 0
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    from glossogen.cli._prefect_api import cannot_reach, refuse_unreachable_api, unreachable_reason

    refused = refuse_unreachable_api()  # a PREFECT_API_URL with no server: 69 before the claim
    if refused is not None:
        return refused
    # The launch line the reference pages quote, then the knobs it resolved to.
    origin = plan.config_source
    print(f"Scenario knobs {'' if origin.startswith('recorded') else 'from '}{origin}", flush=True)
    print(
        f"resolved_config={plan.config_source} "
        + json.dumps(plan.recorded_knobs, sort_keys=True, separators=(",", ":")),
        flush=True,
    )
    from flows.simulate import resume, simulate
    from glossogen.cli._progress import RunProgress, counted
    from glossogen.cli._server import DetachedServer
    from orchestration.runtime import TerminationSignal, api_url, api_url_configured, using_api_url

    ephemeral = not api_url_configured()
    server: DetachedServer | None = None
    stack = ExitStack()
    if ephemeral:
        # Our own temporary server, in a session of its own and stopped on every way out (an
        # interrupted run leaves with os._exit, which Prefect's own temporary server outlived).
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
            return EXIT_INTERNAL
        print(f"Prefect server ready after {time.monotonic() - waited:.1f} s", file=sys.stderr)
        stack.enter_context(using_api_url(server.api_url))
    progress = RunProgress(announce=announce)
    try:
        with stack, observing(progress):
            if resume_dir:
                result = asyncio.run(resume(plan, resume_dir, allow_config_change))
            else:
                result = asyncio.run(simulate(plan, runs_dir=runs_dir))
    except (LaunchError, DeriveError, WriteConflictError) as exc:
        _error(str(exc))  # a write conflict: another writer shipped the log; nothing overwritten
        return exc.exit_code
    except (KeyboardInterrupt, TerminationSignal):
        progress.close()
        if server is not None:
            server.stop(send_queued=False)
        _error("interrupted; the run's log ends with simulation_ended status 'interrupted'")
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
        why = result.error
        if capped:
            why = (
                f"{why} (spent and in flight as the cap refused that request; what was in "
                "flight then is in the spend in all above)"
            )
        _error(f"run {result.status}: {why}")
    if result.spend_capped:
        return int(exit_codes.NOT_MEASURED)
    return EXIT_CODES.get(result.status, EXIT_INTERNAL)
