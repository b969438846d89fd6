"""``glossogen rejudge --runs-dir R --judge-cache C``: re-judge a cohort's in-run rulings.

Every ruling of the selected runs (the export's selection flags) is asked again of the new judge
(``--model``/``--provider``, ``--judge-settings``, ``--judge-prompt``; by default each ruling's
own model and provider) through the judge cache (:mod:`glossogen.rejudge`). Printed: per run
whose verdicts flipped, ``<run id>: F of N rulings flipped``, one line per flip
(``  round R ruling K: passed -> failed``) and the derived runs it affects; then
``rejudged N runs, M rulings: F flipped in K runs; judge cache H hits, X misses; cost $C``
(``; R failed`` when the judge gave no answer to R rulings, its last error then on stderr) and
where the cohort summary went. Each run's flip report is its ``judge_flips.json``.

Exit codes: 0 rejudged (flips are findings, not failures); 1 rejudged, but some rulings got no
answer from the judge (not compared); 64 usage (a judge half given, a bad setting, a provider
that cannot judge, a ``--judge-cache`` that is a file, a selection flag misused); 65 a selection
that matches no run, a selected run still playing (a live writer) or whose log holds an event
twice (named by its line; the others are rejudged);
66 a runs dir that is not a folder, a prompt file that cannot be read, a
run that cannot be read; 69 unreachable storage; 77 the key of a judge the rulings go to is
missing (the new judge's, or else each recorded judge's), before anything is written.
"""

from __future__ import annotations

from typing import Any

import typer

from glossogen import exit_codes
from glossogen.cli import _selection as options
from glossogen.cli._refusals import error, said, selection_refused
from glossogen.refusals import validator_line


def _error(message: str, code: int) -> int:
    error(message)
    return int(code)


def _count(n: int, noun: str) -> str:
    """``1 run``, ``10 runs``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def rejudge(
    runs_dir: str = typer.Option(
        ..., "--runs-dir", metavar="DIR", help="Rejudge the selected runs under this folder."
    ),
    judge_cache: str = typer.Option(
        ...,
        "--judge-cache",
        metavar="DIR",
        help="Judge cache folder (path or fsspec URL): answers it holds cost $0.",
    ),
    model: str | None = typer.Option(None, "--model", help="New judge model (with --provider)."),
    provider: str | None = typer.Option(
        None, "--provider", help="New judge provider: anthropic, huggingface or openai."
    ),
    judge_settings: list[str] = typer.Option(
        None, "--judge-settings", help="New judge settings as key=value (temperature=0)."
    ),
    judge_prompt: str | None = typer.Option(
        None, "--judge-prompt", metavar="FILE", help="A file whose text is the judge's new prompt."
    ),
    scenario: list[str] = options.SCENARIO,
    label: list[str] = options.LABEL,
    knob: list[str] = options.KNOB,
    status: str | None = options.STATUS,
    run_id: list[str] | None = options.RUN_ID,
    run_id_contains: str | None = options.RUN_ID_CONTAINS,
    contains_agent_id: str | None = options.CONTAINS_AGENT_ID,
) -> int:
    """Re-judge the selected runs' rulings with a new judge; write a flip report per run."""
    from pydantic import ValidationError

    from glossogen.export import SelectionError, selection_of
    from glossogen.rejudge import RejudgeError, RejudgeRequest, flip_lines, rejudge_runs
    from glossogen.storage import StorageError

    items = [pair for value in judge_settings or [] for pair in value.split()]
    try:
        selection = selection_of(run_id, scenario, label, run_id_contains, status,
                                 contains_agent_id, knob)  # fmt: skip
        request = RejudgeRequest(
            runs_dir=runs_dir, selection=selection, judge_cache=judge_cache, model=model,
            provider=provider, judge_settings=items, judge_prompt_file=judge_prompt,
        )  # fmt: skip
    except SelectionError as exc:  # every value refused, a line each
        return selection_refused(exc, exit_codes.USAGE)
    except ValidationError as exc:
        return _error(validator_line(exc.errors()[0]), exit_codes.USAGE)
    try:
        done = rejudge_runs(request)
    except RejudgeError as exc:
        return _error(said(exc), exc.exit_code)
    except SelectionError as exc:  # every value refused, a line each
        return selection_refused(exc, exit_codes.REFUSED)
    except StorageError as exc:
        return _error(str(exc), exit_codes.TRANSPORT)
    for run in done.runs:
        if not run.flips:
            continue
        print(f"{run.run_id}: {len(run.flips)} of {run.rulings} rulings flipped", flush=True)
        for line in flip_lines(run):
            print(f"  {line}", flush=True)
        if run.derived_runs:
            print(f"  affected derived runs: {', '.join(run.derived_runs)}", flush=True)
    summary = done.summary
    if summary is None:  # no selected run could be rejudged: nothing was written
        if done.unreadable or not (done.playing or done.twice):  # (refused by name alone)
            print("rejudged 0 runs: none could be read; no summary written", flush=True)
    else:
        cost = "not costed" if summary.cost_usd is None else f"${summary.cost_usd:.6f}"
        failed = f"; {summary.failed} failed" if summary.failed else ""
        kept = f" ({summary.cache_kept} answers kept)"  # a failed answer is not cached
        kept = "" if summary.cache_kept == summary.cache_misses else kept
        print(
            f"rejudged {_count(summary.runs, 'run')}, {_count(summary.rulings, 'ruling')}: "
            f"{summary.flips} flipped in {_count(len(summary.flipped_runs), 'run')}; judge "
            f"cache {summary.cache_hits} hits, {summary.cache_misses} misses{kept}; cost {cost}"
            f"{failed}",
            flush=True,
        )
        print(f"summary: {done.summary_url}", flush=True)
        if summary.failed:
            _error(f"the judge gave no answer to {summary.failed} of {summary.rulings} rulings "
                   f"(not compared); its last error: {summary.last_failure}",
                   exit_codes.EVALUATIONS_FAILED)  # fmt: skip
    return _not_rejudged(done)


def _not_rejudged(done: Any) -> int:
    """Name each selected run not rejudged (still playing, unreadable); return the exit code."""
    for live in done.playing:
        error(f"run {live} has not ended (still playing): only an ended run is rejudged")
    for line in done.twice:
        error(line)
    for where, reason in done.unreadable.items():
        error(f"{where}: cannot be read: {reason}")
    if done.unreadable:
        return int(exit_codes.UNREADABLE)
    if done.playing or done.twice:
        return int(exit_codes.REFUSED)
    failed_rulings = done.summary is not None and done.summary.failed
    return int(exit_codes.EVALUATIONS_FAILED if failed_rulings else exit_codes.OK)
