"""``glossogen export``: CSV tables (and optionally the raw zip) of a selection of runs.

Reads the runs directory directly: no server, no database, no Prefect. Bad input gives a
line ``glossogen: error: ...`` on stderr for each value refused (in the request's order: ``--out``,
the selection's flags, ``--frames``, ``--max-runs``, ``--raw``, ``--include-logs``) and the first
one's DESIGN §9 exit code before anything is written:
64 for usage (``--run-id`` mixed with a filter, an empty ``--run-id``, a knob condition with no
operator, an unknown table or none, an ``--out`` that is a file or lies under one), 65 for a
refusal (a knob value that cannot be read as the recorded type, a selection over
``--max-runs``, a raw zip over its ceiling), 66 for a ``--runs-dir`` that is not a folder or
explicit run ids that no longer resolve, 69 for unreachable storage. A ``--scenario`` no run
under ``--runs-dir`` has is refused (65, naming the scenarios there); any other filter matching
no run is not an error: the tables are written header-only and a note says ``0 runs matched``.
Notes (runs skipped, damaged log lines) go to stderr as ``glossogen: note: ...``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from glossogen.cli._refusals import error, said, said_of_selection

if TYPE_CHECKING:
    from glossogen.export import ExportRefused, SelectedRuns

_NOTE = "glossogen: note: "


def _note(message: str) -> None:
    print(f"{_NOTE}{message}", file=sys.stderr, flush=True)


class _NoteHandler(logging.Handler):
    """Writes a record as a note to whatever ``sys.stderr`` is when it is emitted."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:  # logging's contract: a handler never raises
            self.handleError(record)


@contextmanager
def _notes_to_stderr() -> Iterator[None]:
    """Print the export library's warnings (damaged lines, unrebuilt scenarios) as notes.

    Only while this command runs: a handler left on the logger would print every later
    in-process reader's warnings too (an analysis's, whose notes are its answer's).
    """
    logger = logging.getLogger("glossogen.export")
    handler = _NoteHandler()
    handler.setFormatter(logging.Formatter(f"{_NOTE}%(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def export(
    out: str = typer.Option(
        ..., "--out", metavar="DIR", help="Folder or fsspec URL (s3://...) to write to."
    ),
    runs_dir: str = typer.Option(
        "./runs", "--runs-dir", metavar="DIR", help="Runs folder or fsspec URL."
    ),
    scenario: list[str] = typer.Option(
        [], "--scenario", metavar="NAME", help="Only these scenarios (repeatable)."
    ),
    label: list[str] = typer.Option(
        [], "--label", metavar="LABEL", help="Only runs carrying every label (repeatable)."
    ),
    run_id_contains: str | None = typer.Option(
        None, "--run-id-contains", metavar="SUB", help="Substring of scenario/run_dir_name."
    ),
    contains_agent_id: str | None = typer.Option(
        None, "--contains-agent-id", metavar="ID", help="Only runs that registered this agent."
    ),
    knob: list[str] = typer.Option(
        [],
        "--knob",
        metavar="COND",
        help="Condition <knob><op><value> on the recorded config (repeatable, AND-matched).",
    ),
    status: str | None = typer.Option(
        None, "--status", metavar="STATE", help="Only runs in this state (status or detail)."
    ),
    run_id: list[str] | None = typer.Option(  # None when not given: [] would be refused
        None, "--run-id", metavar="ID", help="Exactly these runs (repeatable; no filters)."
    ),
    frames: str = typer.Option(
        "run_level,round_level,agent_level",
        "--frames",
        metavar="TABLES",
        help="Tables, comma-separated: run_level, round_level, agent_level, message_level, "
        "round_context, call_level.",
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
    max_runs: int = typer.Option(
        5000, "--max-runs", metavar="N", help="Override the 5000-run ceiling."
    ),
) -> int:
    """Export runs as CSV tables: the default set is run_level, round_level, agent_level."""
    from glossogen.export import (
        ExportRefused,
        ExportRunsRequest,
        SelectionError,
        plan_export,
        refused_with_selection,
        selection_of,
        write_export,
    )

    request = ExportRunsRequest(
        runs_dir=runs_dir, out=out, frames=_tables(frames), raw=raw,
        include_logs=include_logs, include_atif=include_atif, max_runs=max_runs,
        repeat_run_columns=repeat_run_columns, include_metric_summaries=include_metric_summaries,
    )  # fmt: skip
    try:  # the knob conditions' syntax is the plan's, named beside the request's other values
        selection = selection_of(run_id, scenario, label, run_id_contains, status,
                                 contains_agent_id, knob, entry_checks=True)  # fmt: skip
    except SelectionError as exc:
        return _refused(refused_with_selection(request, exc), frames)
    request = request.model_copy(update={"selection": selection})
    with _notes_to_stderr():
        try:
            plan = plan_export(request)
            _note_selected(plan.selected)
            result = write_export(plan)
        except ExportRefused as exc:
            return _refused(exc, frames)
    _print_exported(result.runs, out, result.rows, raw)
    return 0


def _refused(exc: ExportRefused, frames: str) -> int:
    """Print every value of the request refused, one line each in the request's order.

    Returns:
        The first refusal's exit code.
    """
    from glossogen.export import RunsUnreadable

    for each in exc.every:  # a named run's file is quoted as it is, \udcff kept
        error(_said(each, frames), quotes_a_file=isinstance(each.cause, RunsUnreadable))
    return exc.exit_code


def _said(exc: ExportRefused, frames: str) -> str:
    """An export's refusal in the flags' words (``--frames``, ``--out``, ``--runs-dir``, ...).

    A refusal of the whole ``--frames`` list (an empty name, a table named twice) shows the
    value as typed: ``--frames 'run_level,': a table name is empty``.
    """
    from glossogen.export import TablesMisnamed
    from glossogen.refusals import shown

    if exc.field == "frames":
        value = f" {shown(frames)}" if isinstance(exc.cause, TablesMisnamed) else ""
        return f"--frames{value}: {exc}"
    if exc.field == "out":
        return f"--out {exc}"
    if exc.field == "runs_dir":
        return f"--runs-dir {exc}"
    if exc.field == "selection":
        return said_of_selection(exc)
    return said(exc)


def _tables(frames: str) -> list[str]:
    """The tables ``--frames`` names, comma-separated; ``[]`` when it names none.

    The export plan refuses an empty name or a table named twice, for every surface alike.
    """
    names = [f.strip() for f in frames.split(",")]
    return names if any(names) else []


def _note_selected(selected: SelectedRuns) -> None:
    """Note the runs skipped as unreadable, the damaged logs, and a selection that matched none.

    A selection whose runs were all skipped as unreadable matched them: their notes say so,
    and no ``0 runs matched`` follows.
    """
    from glossogen.export import damaged_line_notes

    for name, reason in selected.unreadable.items():
        _note(f"skipped {name}: {reason}")
    for note in damaged_line_notes(selected.records):
        _note(note)
    if not selected.records and not selected.unreadable:
        _note("0 runs matched")


def _print_exported(exported: int, out: str, counts: dict[str, int], raw: bool) -> None:
    """Print how many runs went where, each table's rows, and the legend and zip written."""
    print(f"exported {exported} run{'' if exported == 1 else 's'} to {out}")
    for name, rows in counts.items():
        print(f"{name}.csv: {rows} row{'' if rows == 1 else 's'}")
    if len(counts) > 1:
        print("columns.csv: the legend")
    if raw:
        print("runs.zip: the run folders")
