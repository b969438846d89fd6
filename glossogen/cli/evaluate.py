"""``glossogen evaluate``: check the request, then score the run with the ``evaluate`` flow."""

from __future__ import annotations

import asyncio
import os
import sys

import typer

from glossogen import exit_codes


def _error(message: str) -> None:
    print(f"glossogen: error: {message}", file=sys.stderr, flush=True)


def _note(message: str) -> None:
    print(f"glossogen: note: {message}", file=sys.stderr, flush=True)


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def skipped_note(invalid: int, unknown: int, truncated_tail: bool) -> str | None:
    """Return the one-line note on skipped log lines (None when none was skipped)."""
    parts = [f"{invalid} invalid"] if invalid else []
    if unknown:
        parts.append(f"{unknown} of unknown event types")
    if truncated_tail:
        parts.append("a truncated last line")
    if not parts:
        return None
    return (
        f"skipped log lines: {', '.join(parts)}; the metrics describe the rest "
        "(report: log_lines_skipped)"
    )


def evaluate(
    scenario: str = typer.Argument(..., help="The run's scenario (see `glossogen scenarios`)."),
    run_dir: str = typer.Option(..., "--run-dir", help="The run folder (path or fsspec URL)."),
    metrics: str = typer.Option(
        "all", "--metrics", help="Comma-separated metric names, or 'all' (every one that applies)."
    ),
    model: str = typer.Option(None, "--model", help="Judge model (judged metrics)."),
    provider: str = typer.Option(
        None, "--provider", help="Judge provider: anthropic, huggingface or openai."
    ),
    judge_settings: list[str] = typer.Option(
        None,
        "--judge-settings",
        help="Judge settings as key=value (same as judge_model_settings), e.g. temperature=0.",
    ),
    judge_replicas: int = typer.Option(1, "--judge-replicas", help="Judge calls per item."),
    probe_replicas: int = typer.Option(
        1, "--probe-replicas", help="protocol_probe calls per (agent, question)."
    ),
    allow_incomplete: bool = typer.Option(
        False, "--allow-incomplete", help="Score a run whose log has no simulation_ended."
    ),
    plot: bool = typer.Option(False, "--plot", help="Also write report.html with charts."),
) -> int:
    """Score a run into <run-dir>/<scenario>_report.json (exit 1 when some metric failed)."""
    from glossogen.evaluation import (
        REPORT_HTML,
        EvaluationError,
        plan_evaluation,
        read_report,
        report_name,
    )
    from glossogen.storage import StorageError, join

    items = [pair for value in judge_settings or [] for pair in value.split()]
    try:
        plan = plan_evaluation(
            run_dir,
            metrics,
            model,
            provider,
            items,
            judge_replicas,
            probe_replicas,
            allow_incomplete,
            scenario=scenario,
            plot=plot,
        )
    except EvaluationError as exc:
        _error(str(exc))
        return exc.exit_code
    from glossogen.cli.run import PREFECT_DEFAULTS

    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    from glossogen.cli._prefect_api import refuse_unreachable_api

    refused = refuse_unreachable_api()  # a PREFECT_API_URL with no server: 69, nothing spent
    if refused is not None:
        return refused
    from flows.evaluate import evaluate as evaluate_flow
    from flows.runtime import api_url_configured

    if not api_url_configured():
        print(
            "No PREFECT_API_URL set: waiting for a temporary local Prefect server to start "
            "(10-60 s on a fresh 2-core machine)...",
            file=sys.stderr,
            flush=True,
        )

    settings = plan.judge.settings if plan.judge is not None else None
    run_dir = plan.run.run_dir  # absolute for a local folder: the flow may run elsewhere
    report_url = join(run_dir, report_name(plan.run.scenario))
    from glossogen.evaluation._report import keep_foreign_report

    try:  # a report we did not write is never lost (write_report keeps it too, silently)
        kept = keep_foreign_report(run_dir, plan.run.scenario)
    except StorageError as exc:
        _error(f"cannot keep the report already there: {exc}")
        return int(exit_codes.TRANSPORT)
    if kept:
        _note(f"{report_url} was not written by glossogen evaluate: kept byte for byte as {kept}")
    try:
        done = asyncio.run(
            evaluate_flow(
                run_dir,
                [m.name for m in plan.metrics] or metrics,
                model,
                provider,
                settings,
                judge_replicas,
                probe_replicas,
                allow_incomplete,
                plot,
                scenario=plan.run.scenario,
            )
        )
    except EvaluationError as exc:  # the run changed between the check and the flow
        _error(str(exc))
        return exc.exit_code
    except StorageError as exc:
        _error(f"cannot write the report: {exc}")
        return int(exit_codes.TRANSPORT)
    except KeyboardInterrupt:
        try:
            written = read_report(run_dir, plan.run.scenario) != plan.previous
        except (StorageError, OSError):
            written = False
        _error(
            f"interrupted after the report was written: {report_url}"
            if written
            else f"interrupted before the report was written: {report_url} is unchanged"
        )
        return int(exit_codes.INTERRUPTED)
    except Exception as exc:  # a fault of the flow: one line, Prefect has the traceback
        _error(f"evaluation failed: {type(exc).__name__}: {exc}")
        return int(exit_codes.INTERNAL)
    report = done.report
    for name in done.scored:
        entry = report.metrics[name]
        print(f"{name}\t{_score(entry.score)}\t{entry.unit}\t{entry.summary}")
    for name, reason in (dict(plan.blank) | done.blank).items():
        _note(f"{name} left blank: {reason}")
    skipped = report.log_lines_skipped
    note = skipped_note(skipped.invalid, skipped.unknown, skipped.truncated_tail)
    if note:
        _note(note)
    if done.dropped:
        _note(
            f"dropped the report's entries for {', '.join(done.dropped)}: the log changed since "
            f"they were scored (sha256 {(done.dropped_log_sha256 or '')[:12]}, now "
            f"{report.log_sha256[:12]}); evaluate them again to restore them"
        )
    if report.run_status != "completed":
        _note(f"run status: {report.run_status or 'no simulation_ended'} (report: run_status)")
    cost = report.evaluation_cost.total_usd
    print(
        f"report: {report_url} · evaluation cost "
        + ("not costed" if cost is None else f"${cost:.6f}"),
        flush=True,
    )
    if plot:
        print(f"plot: {join(run_dir, REPORT_HTML)}", flush=True)
    if done.failed:
        _error(
            "metrics failed: "
            + "; ".join(f"{name} ({error})" for name, error in done.failed.items())
        )
        return int(exit_codes.EVALUATIONS_FAILED)
    return int(exit_codes.OK)
