"""``glossogen run``: validate a launch, then play it as the Prefect ``simulate`` flow."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import typer

from glossogen.launch import LaunchError, RunRequest, check_credentials, observing, plan_run

EXIT_TRANSPORT = 69
EXIT_INTERNAL = 70

PREFECT_DEFAULTS = {
    # The temporary server needs 12-22 s on a 2-core machine (STACK.md); Prefect's default is 20 s.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The console shows our progress; Prefect's INFO lines still reach its API and UI.
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
}


def _error(message: str) -> None:
    print(f"glossogen: error: {message}", file=sys.stderr, flush=True)


def run(
    scenario: str = typer.Argument(
        ..., help="Installed scenario name (see `glossogen scenarios`)."
    ),
    overrides: list[str] = typer.Argument(None, help="key=value knob overrides, parsed as JSON."),
    model: str = typer.Option(..., "--model", help="Default model of every agent."),
    provider: str = typer.Option(..., "--provider", help="Default provider of every agent."),
    runs_dir: str = typer.Option(
        ..., "--runs-dir", help="Root folder or fsspec URL for run output."
    ),
    config: str = typer.Option(
        ..., "--config", help="Preset name (knobs_default) or JSON file path."
    ),
    max_agent_turns: int = typer.Option(
        200, "--max-agent-turns", min=1, help="Model requests per agent."
    ),
    group_slug: str = typer.Option("local", "--group-slug", help="Tenant group that owns the run."),
) -> int:
    """Play SCENARIO end to end and write <runs-dir>/<scenario>/<unix_ts>/<scenario>.jsonl."""
    request = RunRequest(
        scenario=scenario,
        model=model,
        provider=provider,
        runs_dir=runs_dir,
        config=config,
        overrides=list(overrides or []),
        max_agent_turns=max_agent_turns,
        group_slug=group_slug,
    )
    try:
        plan = plan_run(request)
        check_credentials(plan)
    except LaunchError as exc:
        _error(str(exc))
        return exc.exit_code
    print(
        f"resolved_config={plan.config_source} "
        + json.dumps(plan.knobs, sort_keys=True, separators=(",", ":")),
        flush=True,
    )
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    from prefect.settings import get_current_settings

    from flows.simulate import simulate
    from glossogen.cli._progress import RunProgress

    ephemeral = not get_current_settings().api.url
    if ephemeral:
        timeout = os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]
        print(
            "No PREFECT_API_URL set: waiting for a temporary local Prefect server to start "
            f"(10-60 s on a fresh 2-core machine, timeout {timeout} s)...",
            file=sys.stderr,
            flush=True,
        )
    progress = RunProgress(waiting_for_server=ephemeral)
    try:
        with observing(progress):
            result = asyncio.run(simulate(request))
    except LaunchError as exc:
        _error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as exc:  # the flow failed: report one line, the log has the rest
        _error(f"run failed: {type(exc).__name__}: {exc}")
        return EXIT_INTERNAL
    finally:
        progress.close()
    cost = "not costed" if result.total_cost_usd is None else f"${result.total_cost_usd:.6f}"
    print(
        f"{result.run_id} {result.status}: {result.rounds_won}/{result.rounds_played} rounds won · "
        f"{result.total_messages} messages · {result.total_chars} characters · {cost} · "
        f"{result.duration_seconds:.1f} s",
        flush=True,
    )
    return 0 if result.status == "completed" else EXIT_TRANSPORT
