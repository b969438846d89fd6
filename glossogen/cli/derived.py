"""``fork-at-round``, ``replace-agent`` and ``cross-run-replace-agent``: derived runs.

Each prepares a fresh run folder from a source run's log (the source is only read), then plays
it as a resumed run: detached by default (``new_run_id=`` is printed and the command returns;
the run writes ``<scenario>_stdout.log`` in its folder), or in the foreground with ``--wait``.
The three commands share one module because they differ only in which flags they take.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import typer

from glossogen.cli._numbers import FLOAT, finite
from glossogen.cli._refusals import error, said
from glossogen.derive import DeriveError, ForkRequest, PreparedFork, prepare_fork
from glossogen.scenario import UnknownScenarioError, load_scenario
from glossogen.storage import LeaseSettingError, StorageError, lease_seconds


def _error(message: str) -> None:
    error(message)


def interpreter() -> str:
    """Return the interpreter a detached run starts under, spelled ``python`` when possible.

    ``sys.executable`` may end in ``python3`` or ``python3.11``; a ``python`` beside it is the
    same interpreter (a virtual environment has all three), and the name the process patterns
    of the reference pages match.
    """
    beside = os.path.join(os.path.dirname(sys.executable), "python")
    if os.path.basename(sys.executable) != "python" and os.access(beside, os.X_OK):
        return beside
    return sys.executable


def _launch(prepared: PreparedFork, scenario: str, wait: bool) -> int:
    """Play the prepared run as a resumed run, detached unless ``wait``.

    The run goes on under what its own log and ``config.json`` record (knobs, default model,
    limits): the detached command names the recorded default model and provider (for the
    process patterns users count runs with) and the folder.
    """
    folder = prepared.folder
    print(f"new_run_id={folder.run_id}", flush=True)
    print(f"new_run_dir={folder.url}", flush=True)
    if wait:
        from glossogen.cli.run import play

        # new_run_id= is printed above, before any check of the run can fail; the run's own
        # progress must not print it again.
        return play(scenario, [], "", "", "", "", resume_dir=folder.url, announce=False)
    # The reference pages count live runs with ``pgrep -f "python -m glossogen run <scenario>
    # --model M"`` and ``... run <scenario> .* --resume``: the default model and provider (as
    # the folder records them, so no config change) come first, --resume last.
    args = ["run", scenario, "--model", prepared.model, "--provider", prepared.provider]
    args += ["--resume", folder.url]
    log_path = folder.local_path(folder.stdout_log_name) or os.devnull
    with open(log_path, "ab") as log:
        subprocess.Popen(  # noqa: S603 (our own CLI, no shell)
            [interpreter(), "-m", "glossogen", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return 0


def _derive(request: ForkRequest, wait: bool) -> int:
    try:
        load_scenario(request.scenario)
    except UnknownScenarioError as exc:
        _error(str(exc))
        return 64
    # The run will need the API: 69 before the folder is made. The variable, not Prefect's
    # settings, decides whether to look: importing Prefect is a large share of a detached
    # fork's start-up.
    if os.environ.get("PREFECT_API_URL"):
        from glossogen.cli._prefect_api import refuse_unreachable_api

        refused = refuse_unreachable_api()
        if refused is not None:
            return refused
    cap = request.spend_cap_usd
    if cap is not None and not (math.isfinite(cap) and cap > 0):
        _error(f"--spend-cap-usd must be a number of USD above 0, got {cap:g}")
        return 64
    try:  # read by the derived run's writer lease: bad input, refused before the folder
        lease_seconds()
    except LeaseSettingError as exc:
        _error(str(exc))
        return exc.exit_code
    from glossogen.launch import LaunchError, derived_run_check
    from glossogen.replay import replayed_rounds

    try:
        prepared = prepare_fork(
            request, check=derived_run_check(request.scenario), replay_check=replayed_rounds
        )
    except (DeriveError, LaunchError) as exc:
        _error(said(exc))
        return exc.exit_code
    except StorageError as exc:
        _error(str(exc))
        return 69
    refused = _refuse_spend_cap(prepared)
    if refused is not None:
        return refused
    if prepared.replayed is not None:
        print(prepared.replayed.said(), flush=True)
    _warn_knobs(prepared, request.scenario)
    return _launch(prepared, request.scenario, wait)


def _warn_knobs(prepared: PreparedFork, scenario: str) -> None:
    """Print the warnings of the derived run's knobs and its turn cap, as ``glossogen run``.

    The scenario's own (``--knobs`` may drop some), then the launch's shared turn-cap check
    (:func:`~glossogen.launch.turn_cap_warning`) over the whole run: the copied rounds' turns
    count toward the cap.
    """
    from glossogen.cli._refusals import FLAGS
    from glossogen.launch import ResumeRequest, plan_resume, turn_cap_warning

    plan, _ = plan_resume(ResumeRequest(run_dir=prepared.folder.url))
    for line in load_scenario(scenario)(plan.knobs).launch_warnings():
        print(f"glossogen: warning: {line}", file=sys.stderr, flush=True)
    warning = turn_cap_warning(plan)
    if warning is not None:
        print(f"glossogen: warning: {warning.worded(FLAGS['max_agent_turns'])}", file=sys.stderr,
              flush=True)  # fmt: skip


def _refuse_spend_cap(prepared: PreparedFork) -> int | None:
    """Refuse a derived run whose spend cap its dry-run estimate passes (65), before it plays.

    The library removes the refused folder (made a moment ago, never played); this says so.
    """
    from glossogen.launch import LaunchError, check_derived_spend_cap

    try:
        check_derived_spend_cap(prepared.folder)
    except LaunchError as exc:
        _error(f"{said(exc)} (the derived folder {prepared.folder.url} was removed)")
        return exc.exit_code
    return None


SOURCE = typer.Option(..., "--source-run-dir", help="The run to derive from (only read).")
AFTER = typer.Option(..., "--after-round", help="Keep rounds 1..N; play N+1 onward.")
ROUNDS_AFTER = typer.Option(
    None, "--rounds-after", help="Rounds to play after N (default: the source's)."
)
RUNS_DIR = typer.Option(..., "--runs-dir", help="Root folder or fsspec URL for the new run.")
KNOBS = typer.Option(
    None, "--knobs", help="JSON file (or preset) whose knobs replace the source's."
)
WAIT = typer.Option(False, "--wait", help="Play in the foreground instead of detached.")
TURNS = typer.Option(
    None,
    "--max-agent-turns",
    help="Model requests per agent in the whole run.",
    show_default="as the source recorded",
)
TIMEOUT = typer.Option(
    None,
    "--run-timeout",
    parser=finite,
    metavar=FLOAT,
    help="Wall-clock limit of the derived run in seconds.",
    show_default="as the source recorded",
)
SPEND_CAP = typer.Option(
    None,
    "--spend-cap-usd",
    parser=finite,
    metavar=FLOAT,
    help="USD the derived run's own calls may spend (its copied rounds do not count); "
    "refused when the dry-run estimate passes it; once reached the run ends incomplete.",
    show_default="as the source recorded",
)
SEAT = typer.Option(..., "--replaced-agent-id", help="The seat that moves to another model.")
MODEL = typer.Option(..., "--model", help="The replaced seat's model.")
PROVIDER = typer.Option(..., "--provider", help="The replaced seat's provider.")
VISIBILITY = typer.Option("full", "--channel-visibility", help="full | none | from_round:R")
REPLAY = typer.Option(
    False,
    "--replay",
    help="Play rounds 1..N again from the source's tape (no provider, $0) instead of copying "
    "them; refused at the first request or event that differs (exit 1), else the new run's "
    "rounds 1..N are the replay's and N+1 onward play live.",
)


def fork_at_round(
    scenario: str = typer.Argument(..., help="Scenario of the source run."),
    source_run_dir: str = SOURCE,
    after_round: int = AFTER,
    rounds_after: int | None = ROUNDS_AFTER,
    runs_dir: str = RUNS_DIR,
    knobs: str | None = KNOBS,
    max_agent_turns: int | None = TURNS,
    run_timeout: float | None = TIMEOUT,
    spend_cap_usd: float | None = SPEND_CAP,
    wait: bool = WAIT,
    replay: bool = REPLAY,
) -> int:
    """Copy (--replay: replay) rounds 1..N of a run into a fresh folder and play N+1 onward."""
    request = ForkRequest(
        scenario, source_run_dir, after_round, runs_dir, rounds_after, knobs,
        max_agent_turns=max_agent_turns, run_timeout_seconds=run_timeout,
        spend_cap_usd=spend_cap_usd, replay=replay,
    )  # fmt: skip
    return _derive(request, wait)


def replace_agent(
    scenario: str = typer.Argument(..., help="Scenario of the source run."),
    source_run_dir: str = SOURCE,
    after_round: int = AFTER,
    replaced_agent_id: str = SEAT,
    model: str = MODEL,
    provider: str = PROVIDER,
    rounds_after: int | None = ROUNDS_AFTER,
    runs_dir: str = RUNS_DIR,
    knobs: str | None = KNOBS,
    channel_visibility: str = VISIBILITY,
    max_agent_turns: int | None = TURNS,
    run_timeout: float | None = TIMEOUT,
    spend_cap_usd: float | None = SPEND_CAP,
    wait: bool = WAIT,
    replay: bool = REPLAY,
) -> int:
    """Fork after round N with one seat on another model (history per --channel-visibility)."""
    request = ForkRequest(
        scenario, source_run_dir, after_round, runs_dir, rounds_after, knobs,
        replaced_agent_id, model, provider, channel_visibility,
        max_agent_turns=max_agent_turns, run_timeout_seconds=run_timeout,
        spend_cap_usd=spend_cap_usd, replay=replay,
    )  # fmt: skip
    return _derive(request, wait)


def cross_run_replace_agent(
    scenario: str = typer.Argument(..., help="Scenario of the source run."),
    source_run_dir: str = SOURCE,
    after_round: int = AFTER,
    replaced_agent_id: str = SEAT,
    donor_run_dir: str = typer.Option(
        ..., "--donor-run-dir", help="Run the incoming agent comes from."
    ),
    donor_agent_id: str = typer.Option(..., "--donor-agent-id", help="The donor run's agent id."),
    model: str = MODEL,
    provider: str = PROVIDER,
    rounds_after: int | None = ROUNDS_AFTER,
    runs_dir: str = RUNS_DIR,
    knobs: str | None = KNOBS,
    max_agent_turns: int | None = TURNS,
    run_timeout: float | None = TIMEOUT,
    spend_cap_usd: float | None = SPEND_CAP,
    wait: bool = WAIT,
    replay: bool = REPLAY,
) -> int:
    """Fork after round N with one seat taken by an agent that brings its donor-run history."""
    request = ForkRequest(
        scenario, source_run_dir, after_round, runs_dir, rounds_after, knobs,
        replaced_agent_id, model, provider, "full", donor_run_dir, donor_agent_id,
        max_agent_turns, run_timeout, spend_cap_usd, replay,
    )  # fmt: skip
    return _derive(request, wait)
