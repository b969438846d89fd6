"""``glossogen export``: CSV tables (and optionally the raw zip) of a selection of runs.

Reads the runs directory directly: no server, no database, no Prefect. Bad input gives one
line ``glossogen: error: ...`` on stderr and a DESIGN §9 exit code before anything is written:
64 for usage (``--run-id`` mixed with a filter, a knob condition with no operator, an unknown
table), 65 for a refusal (a knob value that cannot be read as the recorded type, a selection
over ``--max-runs``, a raw zip over its ceiling), 66 for explicit run ids that no longer
resolve, 69 for unreachable storage.
"""

from __future__ import annotations

import sys

import typer

from glossogen import exit_codes


def _error(message: str, code: int) -> int:
    print(f"glossogen: error: {message}", file=sys.stderr, flush=True)
    return code


def export(
    out: str = typer.Option(..., "--out", help="Folder or fsspec URL (s3://...) to write to."),
    runs_dir: str = typer.Option("./runs", "--runs-dir", help="Runs folder or fsspec URL."),
    scenario: list[str] = typer.Option([], "--scenario", help="Only these scenarios."),
    label: list[str] = typer.Option([], "--label", help="Only runs carrying every label."),
    run_id_contains: str | None = typer.Option(
        None, "--run-id-contains", help="Substring of scenario/run_dir_name."
    ),
    contains_agent_id: str | None = typer.Option(
        None, "--contains-agent-id", help="Only runs that registered this agent."
    ),
    knob: list[str] = typer.Option(
        [], "--knob", help="Condition <knob><op><value> on the recorded config (AND-matched)."
    ),
    status: str | None = typer.Option(
        None, "--status", help="Only runs in this state (status or status detail)."
    ),
    run_id: list[str] = typer.Option([], "--run-id", help="Exactly these runs (no filters)."),
    frames: str = typer.Option(
        "run_level,round_level,agent_level",
        "--frames",
        help="Tables, comma-separated: run_level, round_level, agent_level, message_level, "
        "round_context.",
    ),
    include_metric_summaries: bool = typer.Option(
        False, "--include-metric-summaries", help="Add metric units, summaries and notes."
    ),
    repeat_run_columns: bool = typer.Option(
        True,
        "--repeat-run-columns/--no-repeat-run-columns",
        help="Copy run context onto round, agent and message rows.",
    ),
    raw: bool = typer.Option(False, "--raw", help="Also write runs.zip."),
    include_logs: bool = typer.Option(False, "--include-logs", help="Keep logs in runs.zip."),
    include_atif: bool = typer.Option(
        False, "--include-atif", help="With --raw, add ATIF trajectories per agent."
    ),
    max_runs: int = typer.Option(5000, "--max-runs", help="Override the 5000-run ceiling."),
) -> int:
    """Export runs as CSV tables: the default set is run_level, round_level, agent_level."""
    from glossogen.export import (
        FilterSelection,
        RunIdSelection,
        SelectionError,
        check_frames,
        parse_conditions,
        select_runs,
        write_tables,
    )
    from glossogen.storage import StorageError, join

    filters = bool(scenario or label or run_id_contains or contains_agent_id or knob or status)
    if run_id and filters:
        return _error("--run-id cannot be combined with filter flags", exit_codes.USAGE)
    if (include_atif or include_logs) and not raw:
        return _error("--include-logs and --include-atif apply to --raw", exit_codes.USAGE)
    if max_runs < 1:
        return _error("--max-runs must be at least 1", exit_codes.USAGE)
    try:
        names = check_frames([f.strip() for f in frames.split(",") if f.strip()])
        parse_conditions(knob)
    except SelectionError as exc:
        return _error(exc.message, exit_codes.USAGE)
    except ValueError as exc:
        return _error(f"--frames: {exc}", exit_codes.USAGE)
    selection = (
        RunIdSelection(run_ids=run_id)
        if run_id
        else FilterSelection(
            scenario=scenario or None,
            labels=label or None,
            run_id_contains=run_id_contains,
            status=status,
            contains_agent_id=contains_agent_id,
            knob=knob or None,
        )
    )
    try:
        selected = select_runs(runs_dir, selection, max_runs=max_runs)
        if selected.missing_run_ids:
            missing = ", ".join(selected.missing_run_ids)
            return _error(f"run ids that no longer resolve: {missing}", exit_codes.UNREADABLE)
        if raw:
            from glossogen.export import check_raw_size, estimate_raw_bytes

            check_raw_size(estimate_raw_bytes(selected.records, include_logs=include_logs))
        counts = write_tables(
            selected.records,
            names,
            out,
            repeat_run_columns=repeat_run_columns,
            include_metric_summaries=include_metric_summaries,
        )
        if raw:
            from glossogen.export import publish, write_raw_zip

            with publish(join(out, "runs.zip")) as f:
                write_raw_zip(
                    selected.records, f, include_logs=include_logs, include_atif=include_atif
                )
    except SelectionError as exc:
        return _error(exc.message, exit_codes.REFUSED)
    except StorageError as exc:
        return _error(str(exc), exit_codes.TRANSPORT)
    except FileNotFoundError as exc:
        return _error(f"not found: {exc.filename or exc}", exit_codes.UNREADABLE)
    except ValueError as exc:  # the raw ceiling (RawZipTooLarge) and unreadable run files
        return _error(str(exc).splitlines()[0], exit_codes.REFUSED)
    for name in selected.unreadable:
        print(f"skipped {name}: {selected.unreadable[name]}", file=sys.stderr)
    print(f"exported {len(selected.records)} runs to {out}")
    for name, rows in counts.items():
        print(f"{name}.csv: {rows} rows")
    if len(counts) > 1:
        print("columns.csv: the legend")
    if raw:
        print("runs.zip: the run folders")
    return 0
