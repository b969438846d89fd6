"""``glossogen evaluate``: score one run (``--run-dir``) or a cohort of runs (``--runs-dir``).

One run is scored by the library's entry ``launch.evaluate_planned``, as MCP's
``evaluate_run`` scores it: in this process, server or not (importing Prefect would cost more
than the scoring; the report is the record and its own cache), unless its request calls a
model (judged metrics, the probe) and a Prefect API is configured: then through the
``evaluate`` flow, so it shows in the Prefect UI and its judge calls share the
``llm:<provider>`` limits. A cohort is one ``evaluate-cohort`` flow, one task
per run, with the export's selection flags.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import typer

from glossogen import exit_codes
from glossogen.cli import _selection as options
from glossogen.cli._numbers import finite
from glossogen.cli._refusals import FLAGS, error, said, said_of_selection


def _error(message: str) -> None:
    error(message)


def _note(message: str) -> None:
    print(f"glossogen: note: {message}", file=sys.stderr, flush=True)


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _usd(value: float | None) -> str:
    return "not costed" if value is None else f"${value:.6f}"


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


def _prefect_defaults() -> int | None:
    """Set our Prefect defaults and refuse an unreachable API (69); None when it answers."""
    from glossogen.cli._prefect_api import refuse_unreachable_api
    from glossogen.launch import apply_prefect_defaults

    apply_prefect_defaults()
    return refuse_unreachable_api()


def evaluate(
    scenario: str = typer.Argument(
        None, help="The run's scenario (see `glossogen scenarios`); with --runs-dir, a filter."
    ),
    run_dir: str = typer.Option(None, "--run-dir", help="One run folder (path or fsspec URL)."),
    runs_dir: str = typer.Option(
        None, "--runs-dir", metavar="DIR", help="Evaluate the selected runs under this folder."
    ),
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
    scenario_filter: list[str] = options.SCENARIO,
    label: list[str] = options.LABEL,
    knob: list[str] = options.KNOB,
    status: str | None = options.STATUS,
    run_id: list[str] | None = options.RUN_ID,
    run_id_contains: str | None = options.RUN_ID_CONTAINS,
    contains_agent_id: str | None = options.CONTAINS_AGENT_ID,
    spend_cap_usd: float | None = typer.Option(
        None,
        "--spend-cap-usd",
        metavar="USD",
        parser=finite,
        help="--runs-dir: start no run whose estimated judge spend would pass this cap (exit 20).",
    ),
    judge_cache: str | None = typer.Option(
        None,
        "--judge-cache",
        metavar="DIR",
        help="Judge cache folder (path or fsspec URL): answers it holds cost $0, others are "
        "asked and kept.",
    ),
) -> int:
    """Score a run into <run-dir>/<scenario>_report.json, or every selected run of --runs-dir."""
    from glossogen.evaluation import EvaluationError, check_request

    filters = {
        "--scenario": scenario_filter,
        "--label": label,
        "--knob": knob,
        "--status": status,
        "--run-id": run_id,
        "--run-id-contains": run_id_contains,
        "--contains-agent-id": contains_agent_id,
    }
    given = [flag for flag, value in filters.items() if value not in (None, [], "")]
    if run_dir is not None and runs_dir is not None:
        _error("--run-dir and --runs-dir exclude each other: one run, or a cohort")
        return int(exit_codes.USAGE)
    if run_dir is None and runs_dir is None:
        _error("name the run with --run-dir, or a cohort with --runs-dir")
        return int(exit_codes.USAGE)
    if run_dir is not None and given:
        _error(f"{', '.join(given)} select runs of --runs-dir, not --run-dir")
        return int(exit_codes.USAGE)
    if run_dir is not None and spend_cap_usd is not None:
        _error(f"--spend-cap-usd {spend_cap_usd:g} caps a cohort's judge spend: it goes with "
               "--runs-dir, not --run-dir")  # fmt: skip
        return int(exit_codes.USAGE)
    if run_dir is not None and scenario is None:
        _error("name the run's scenario (glossogen evaluate SCENARIO --run-dir DIR)")
        return int(exit_codes.USAGE)
    items = [pair for value in judge_settings or [] for pair in value.split()]
    try:
        request = check_request(metrics, model, provider, items, judge_replicas, probe_replicas,
                                allow_incomplete, plot, judge_cache)  # fmt: skip
    except EvaluationError as exc:
        _error(said(exc))
        return exc.exit_code
    if runs_dir is not None:
        selection: dict[str, Any]
        if run_id:
            clashing = [f for f in given if f != "--run-id"]
            if clashing or scenario is not None:
                _error(f"--run-id cannot be combined with {', '.join(clashing) or 'a scenario'}")
                return int(exit_codes.USAGE)
            selection = {"kind": "run_ids", "run_ids": run_id}
        else:
            selection = {
                "kind": "filters",
                "scenario": [*([scenario] if scenario else []), *scenario_filter] or None,
                "labels": label or None,
                "knob": knob or None,
                "status": status,
                "run_id_contains": run_id_contains,
                "contains_agent_id": contains_agent_id,
            }
        return _evaluate_cohort(runs_dir, selection, request, spend_cap_usd)
    return _evaluate_one(scenario, run_dir, request)


def _evaluate_one(scenario: str, run_dir: str, request: Any) -> int:
    """Evaluate one run, in this process or through the ``evaluate`` flow, and print its report.

    Returns:
        The exit code (``glossogen.exit_codes``).
    """
    from glossogen.evaluation import EvaluationError, plan_request, refusal, report_name
    from glossogen.storage import join

    try:
        plan = plan_request(run_dir, scenario, request)
    except EvaluationError as exc:
        _error(refusal(run_dir, scenario, exc, FLAGS))  # a report of another log is set aside
        return exc.exit_code
    run_dir = plan.run.run_dir  # absolute for a local folder: the flow may run elsewhere
    report_url = join(run_dir, report_name(plan.run.scenario))
    refused = _keep_foreign_report(run_dir, plan.run.scenario, report_url)
    if refused is not None:
        return refused
    done = _score_run(plan, request, report_url)
    if isinstance(done, int):
        return done
    return _print_evaluation(plan, done, request, report_url)


def _keep_foreign_report(run_dir: str, scenario: str, report_url: str) -> int | None:
    """Set aside a report glossogen did not write, saying where it went.

    Returns:
        The exit code when it could not be kept, else None.
    """
    from glossogen.evaluation._report import keep_foreign_report
    from glossogen.storage import StorageError

    try:  # a report we did not write is never lost (write_report keeps it too, silently)
        kept = keep_foreign_report(run_dir, scenario)
    except StorageError as exc:
        _error(f"cannot keep the report already there: {exc}")
        return int(exit_codes.TRANSPORT)
    if kept:
        _note(f"{report_url} was not written by glossogen evaluate: kept byte for byte as {kept}")
    return None


def _score_run(plan: Any, request: Any, report_url: str) -> Any:
    """Score the planned run with the library's entry, ``evaluate_planned`` (MCP's too).

    It goes through the ``evaluate`` flow only when it calls a model and a Prefect API is
    configured (docs/architecture.md, "Evaluating runs"); that API is checked first.

    Returns:
        The ``Evaluation``, or the exit code of a refusal, a fault or an interruption.
    """
    from glossogen.evaluation import EvaluationError
    from glossogen.launch import evaluate_planned, through_flow
    from glossogen.storage import StorageError

    try:
        if through_flow(plan):
            refused = _prefect_defaults()  # a PREFECT_API_URL with no server: 69, nothing spent
            if refused is not None:
                return refused
        return asyncio.run(evaluate_planned(plan, request))
    except EvaluationError as exc:  # the run changed between the check and the flow
        _error(said(exc))
        return exc.exit_code
    except StorageError as exc:
        _error(f"cannot write the report: {exc}")
        return int(exit_codes.TRANSPORT)
    except KeyboardInterrupt:
        _error(
            f"interrupted after the report was written: {report_url}"
            if _report_written(plan)
            else f"interrupted before the report was written: {report_url} is unchanged"
        )
        return int(exit_codes.INTERRUPTED)
    except Exception as exc:  # a fault: one line (with a flow, Prefect has the traceback)
        _error(f"evaluation failed: {type(exc).__name__}: {exc}")
        return int(exit_codes.INTERNAL)


def _report_written(plan: Any) -> bool:
    """True when the run's report differs from the one there before (False when unreadable)."""
    from glossogen.evaluation import read_report
    from glossogen.storage import StorageError

    try:
        return bool(read_report(plan.run.run_dir, plan.run.scenario) != plan.previous)
    except (StorageError, OSError):
        return False


def _print_evaluation(plan: Any, done: Any, request: Any, report_url: str) -> int:
    """Print each metric scored or kept, the notes on the run, and the report's place and cost.

    Returns:
        ``EVALUATIONS_FAILED`` when a metric failed, else ``OK``.
    """
    from glossogen.evaluation import REPORT_HTML
    from glossogen.pricing import add_costs
    from glossogen.storage import join

    report = done.report
    for name in done.scored:
        entry = report.metrics[name]
        print(f"{name}\t{_score(entry.score)}\t{entry.unit}\t{entry.summary}")
    for name in done.reused:
        entry = report.metrics[name]
        print(f"{name}\t{_score(entry.score)}\t{entry.unit}\t{entry.summary} (kept: up to date)")
    _note_on_report(plan, done)
    # This evaluation's spend: the metrics scored now (an entry kept up to date cost nothing
    # now; the report's own evaluation_cost still totals every entry it holds).
    cost = add_costs([report.metrics[name].cost_usd for name in done.scored])
    print(f"report: {report_url} · evaluation cost {_usd(cost)}", flush=True)
    if request.plot:
        print(f"plot: {join(plan.run.run_dir, REPORT_HTML)}", flush=True)
    if done.failed:
        _error(
            "metrics failed: "
            + "; ".join(f"{name} ({error})" for name, error in done.failed.items())
        )
        return int(exit_codes.EVALUATIONS_FAILED)
    return int(exit_codes.OK)


def _kept(done: Any) -> str:
    """``, K kept`` when some answers asked were not written to the judge cache, else ``""``."""
    kept = done.judge_cache_kept
    if kept is None or kept == done.judge_cache_misses:
        return ""
    return f" ({kept} answers kept; a failed or unusable answer is not cached)"


def _note_on_report(plan: Any, done: Any) -> None:
    """Note the metrics left blank, skipped log lines, dropped entries, status and books."""
    from glossogen.eventlog import RunView
    from glossogen.verify import books_of

    report = done.report
    if done.judge_cache_hits is not None:
        _note(
            f"judge cache: {done.judge_cache_hits} answered from the cache ($0), "
            f"{done.judge_cache_misses} asked of the judge{_kept(done)}"
        )
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
    run = plan.run
    view = run.view if run.whole else RunView.load(run.folder.log_url)  # every event: the books
    for rule in books_of(view, run.folder):  # its figures rest on its books
        # damaged lines and a log with no ending: the skipped-lines and status notes say them
        if rule.rule not in ("log", "ended"):
            _note(f"books do not balance: {rule.text}")


class CohortProgress:
    """Observer of a cohort: its estimate at once, then a rich bar (runs, metrics, spend).

    The bar is drawn on stderr when it is a terminal; otherwise only the estimate is said.
    """

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.console = Console(file=sys.stderr)
        self.progress = Progress(
            TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(),
            TextColumn("runs · {task.fields[metrics]} metrics · {task.fields[spend]}"),
            console=self.console, transient=True, disable=not self.console.is_terminal,
        )  # fmt: skip
        self.task = self.progress.add_task("runs", total=None, metrics=0, spend="$0.000000")
        self.metrics = 0
        self.spend: float | None = 0.0

    def cohort_estimated(self, runs: int, estimate_usd: float | None) -> None:
        """Say the estimated judge spend before any call, then start the bar."""
        if estimate_usd is None or estimate_usd > 0:
            _note(f"estimated judge spend: {_usd(estimate_usd)} over {runs} runs (assumed tokens)")
        self.progress.update(self.task, total=runs)
        self.progress.start()

    def run_evaluated(self, outcome: Any) -> None:
        """Advance the bar by one run."""
        from glossogen.pricing import add_costs

        self.metrics += len(outcome.scored)
        self.spend = add_costs([self.spend, outcome.cost_usd])
        self.progress.update(self.task, advance=1, metrics=self.metrics, spend=_usd(self.spend))

    def close(self) -> None:
        """Remove the bar."""
        self.progress.stop()


def _naming(run_id: str, error: str) -> str:
    """Return ``error`` naming ``run_id`` once: prefixed, unless it already begins with it."""
    return error if error.startswith(f"{run_id} ") else f"{run_id}: {error}"


def _evaluate_cohort(
    runs_dir: str, selection: dict[str, Any], request: Any, spend_cap_usd: float | None
) -> int:
    """Evaluate the selected runs under ``runs_dir`` with the ``evaluate-cohort`` flow.

    Checked once by the library (``launch.check_cohort``: the cap, the knob conditions, the
    runs folder, the judge's key), then the Prefect API, then played (``launch.evaluate_cohort``),
    as MCP's ``evaluate_runs`` plays it.
    """
    from glossogen.evaluation import EvaluationError
    from glossogen.launch import check_cohort

    try:
        cohort = check_cohort(runs_dir, selection, request, spend_cap_usd)
    except EvaluationError as exc:  # each value refused, one line each, the first's code
        for each in exc.every:  # 66 with no field: named runs, a file's \udcff quoted
            quoted = each.exit_code == exit_codes.UNREADABLE and not each.refusal
            error(said(each), quotes_a_file=quoted)
        return exc.exit_code
    refused = _prefect_defaults()
    if refused is not None:
        return refused
    done = _run_cohort(cohort)
    if isinstance(done, int):
        return done
    return _print_cohort(done, runs_dir, spend_cap_usd)


def _run_cohort(cohort: Any) -> Any:
    """Play the cohort (``launch.evaluate_cohort``) with its progress bar.

    Returns:
        The cohort's outcome, or the exit code of a refusal, a fault or an interruption.
    """
    from glossogen.evaluation import EvaluationError
    from glossogen.launch import evaluate_cohort, observing
    from orchestration.runtime import api_url_configured

    if not api_url_configured():
        _note("no PREFECT_API_URL set: a temporary local Prefect server starts for the cohort")
    progress = CohortProgress()
    gc.freeze()  # what the imports built is never garbage: a cohort's collections skip it
    try:
        with observing(progress):
            return asyncio.run(evaluate_cohort(cohort))
    except EvaluationError as exc:
        _error(said_of_selection(exc) if exc.refusal is not None else said(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted: the reports written so far are kept")
        return int(exit_codes.INTERRUPTED)
    finally:
        progress.close()


def _print_cohort(done: Any, runs_dir: str, spend_cap_usd: float | None) -> int:
    """Print each run's notes and errors, then the cohort's summary line.

    Returns:
        ``NOT_MEASURED`` when the cap left runs unmeasured, ``EVALUATIONS_FAILED`` when a run
        was not evaluated or a metric failed, else ``OK``.
    """
    for outcome in done.outcomes:  # a report counting skipped lines says so, as for one run
        skipped = outcome.log_lines_skipped
        note = skipped_note(skipped.invalid, skipped.unknown, skipped.truncated_tail)
        if note:
            _note(f"{outcome.run_id}: {note}")
    from glossogen.launch import cohort_summary

    short = _print_cohort_errors(done, runs_dir)
    print(cohort_summary(done, runs_dir), flush=True)
    if done.not_measured:
        n = len(done.not_measured)
        shown = ", ".join(done.not_measured[:5]) + (" ..." if n > 5 else "")
        why = done.capped.worded(FLAGS) if done.capped else f"--spend-cap-usd {spend_cap_usd:g}"
        _error(f"{why}; {n} run{'' if n == 1 else 's'} not measured ({shown})")
        return int(exit_codes.NOT_MEASURED)
    return int(exit_codes.EVALUATIONS_FAILED if short else exit_codes.OK)


def _print_cohort_errors(done: Any, runs_dir: str) -> bool:
    """Print one error line per run not evaluated or with a failed metric.

    Returns:
        True when any run fell short.
    """
    short = False
    for run_id, reason in done.unreadable.items():  # a file's escape stays as the file has it
        error(f"{run_id}: not evaluated: {reason}", quotes_a_file=True)
        short = True
    for run_id in done.missing_run_ids:
        _error(f"{run_id}: no such run under {runs_dir}")
        short = True
    for outcome in done.outcomes:
        if outcome.state in ("refused", "failed"):
            _error(_naming(outcome.run_id, outcome.said(FLAGS)))
            short = True
        elif outcome.failed:
            failed = "; ".join(f"{n} ({e})" for n, e in outcome.failed.items())
            _error(f"{outcome.run_id}: metrics failed: {failed}")
            short = True
    return short
