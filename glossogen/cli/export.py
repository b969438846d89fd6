"""``glossogen export``: CSV tables (and optionally the raw zip) of a selection of runs.

Reads the runs directory directly: no server, no database, no Prefect. Bad input gives one
line ``glossogen: error: ...`` on stderr and a DESIGN §9 exit code before anything is written:
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

from glossogen import exit_codes
from glossogen.cli._refusals import error, said_of_selection

if TYPE_CHECKING:
    from glossogen.export import SelectedRuns

_NOTE = "glossogen: note: "


def _error(message: str, code: int) -> int:
    error(message)
    return code


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
    run_id: list[str] = typer.Option(
        [], "--run-id", metavar="ID", help="Exactly these runs (repeatable; no filters)."
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
        SelectionError,
        check_frames,
        select_runs,
        selection_of,
        write_tables,
    )
    from glossogen.storage import StorageError

    if (include_atif or include_logs) and not raw:
        return _error("--include-logs and --include-atif apply to --raw", exit_codes.USAGE)
    if max_runs < 1:
        return _error(f"--max-runs must be at least 1, got {max_runs}", exit_codes.USAGE)
    try:
        selection = selection_of(run_id, scenario, label, run_id_contains, status,
                                 contains_agent_id, knob)  # fmt: skip
        names = check_frames(_tables(frames))
    except SelectionError as exc:
        return _error(said_of_selection(exc), exit_codes.USAGE)
    except ValueError as exc:  # the value first when the line names it: --frames 'a,': ...
        said = f" {exc}" if str(exc).startswith("'") else f": {exc}"
        return _error(f"--frames{said}", exit_codes.USAGE)
    refused = _check_places(out, runs_dir)
    if refused is not None:
        return refused
    with _notes_to_stderr():
        try:
            selected = select_runs(runs_dir, selection, max_runs=max_runs)
            if selected.missing_run_ids:
                missing = ", ".join(selected.missing_run_ids)
                return _error(f"run ids that no longer resolve: {missing}", exit_codes.UNREADABLE)
            if raw:
                from glossogen.export import check_raw_size, estimate_raw_bytes

                check_raw_size(estimate_raw_bytes(selected.records, include_logs=include_logs))
            _note_selected(selected)
            counts = write_tables(
                selected.records,
                names,
                out,
                repeat_run_columns=repeat_run_columns,
                include_metric_summaries=include_metric_summaries,
            )
            if raw:
                from glossogen.export import write_raw_export

                write_raw_export(
                    selected.records, out, include_logs=include_logs, include_atif=include_atif
                )
        except SelectionError as exc:
            return _error(said_of_selection(exc), exit_codes.REFUSED)
        except StorageError as exc:
            return _error(str(exc), exit_codes.TRANSPORT)
        except FileNotFoundError as exc:
            return _error(f"not found: {exc.filename or exc}", exit_codes.UNREADABLE)
        except OSError as exc:  # a local write failing after the checks (disk full, a race)
            return _error(f"cannot write to {out}: {exc}", exit_codes.TRANSPORT)
        except ValueError as exc:  # the raw ceiling (RawZipTooLarge) and unreadable run files
            return _error(str(exc).splitlines()[0], exit_codes.REFUSED)
    _print_exported(len(selected.records), out, counts, raw)
    return 0


def _tables(frames: str) -> list[str]:
    """The tables ``--frames`` names, as ``--by`` reads its keys: none empty, none twice.

    Raises:
        ValueError: ``'run_level,': a table name is empty``, or a table named twice.
    """
    from glossogen.refusals import shown

    names = [f.strip() for f in frames.split(",")]
    if not any(names):
        return []  # no table named: check_frames says which there are
    if not all(names):
        raise ValueError(f"{shown(frames)}: a table name is empty")
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise ValueError(f"{shown(frames)}: the table {shown(twice[0])} is named twice")
    return names


def _check_places(out: str, runs_dir: str) -> int | None:
    """Check the export's destination and the runs folder before anything is read.

    Returns:
        The exit code of the refusal (its line printed), or None.
    """
    from glossogen.export import RunsDirError, check_out, check_runs_dir
    from glossogen.storage import StorageError

    try:
        check_out(out)
    except ValueError as exc:
        return _error(f"--out {exc}", exit_codes.USAGE)
    try:
        check_runs_dir(runs_dir)
    except RunsDirError as exc:
        return _error(f"--runs-dir {exc}", exit_codes.UNREADABLE)
    except StorageError as exc:
        return _error(str(exc), exit_codes.TRANSPORT)
    return None


def _note_selected(selected: SelectedRuns) -> None:
    """Note the runs skipped as unreadable, the damaged logs, and an empty selection."""
    from glossogen.export import damaged_line_notes

    for name, reason in selected.unreadable.items():
        _note(f"skipped {name}: {reason}")
    for note in damaged_line_notes(selected.records):
        _note(note)
    if not selected.records:
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
