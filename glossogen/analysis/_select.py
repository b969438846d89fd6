"""The selected runs of a query, the rows the projection cache keeps of them, and notes.

The runs are the export's selection (:func:`glossogen.export.select_runs`), refused as the
export refuses it; the notes name what the selection skipped or found stale, with paths
relative to the runs dir (a server's own folder is never shown to its callers).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import polars as pl

from glossogen.analysis._rows import NAMED_RUNS
from glossogen.analysis._terms import Grain
from glossogen.export import (
    RunRecord,
    damaged_line_notes,
    label_notes,
    select_runs,
)
from glossogen.export._knobfilter import NamedRunsRefused, RunsMissing
from glossogen.export._select import SelectedRuns, named_refusals, of_group
from glossogen.export._select import _check_limit as check_limit


def runs_dir_root(runs_dir: str) -> str:
    """The runs dir's path as a note's file path starts with it (cut from notes)."""
    from glossogen.storage import RunStore

    try:
        return RunStore(runs_dir).runs_dir.rstrip("/") + "/"
    except Exception:  # noqa: BLE001 - only a prettier path: the reason stands as it is
        return runs_dir.rstrip("/") + "/"


def skipped_notes(runs_dir: str, unreadable: dict[str, str]) -> list[str]:
    """One note per run the selection skipped as unreadable, its files named within the dir.

    As the export names them (``skipped <run id>: <reason>``); a reason's path is shown
    relative to ``runs_dir`` (a server's own folder is not shown to its callers).
    """
    root = runs_dir_root(runs_dir)
    return [
        f"skipped {run_id}: {reason.replace(root, '')}"
        for run_id, reason in sorted(unreadable.items())
    ]


@contextmanager
def library_notes(notes: list[str]) -> Iterator[None]:
    """Collect the export library's warnings (a log's damaged lines) into ``notes``.

    They become the answer's notes (the CLI prints each as ``glossogen: note: ...``; REST and
    MCP answer them), not bare lines on stderr.
    """

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notes.append(record.getMessage())

    logger = logging.getLogger("glossogen.export")
    handler = _Collect(logging.WARNING)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def stale_notes(runs_dir: str, records: Sequence[RunRecord]) -> list[str]:
    """A note naming the runs whose log changed after their report was written (a local dir).

    A log newer than its report whose sha256 is not the one the report was scored from
    (``log_sha256``) means the report's metrics describe an earlier log. Only a run whose log
    is newer than its report is hashed.
    """
    from glossogen.analysis._dashboard import _sha256
    from glossogen.storage import RunStore

    store = RunStore(runs_dir)
    if not store.local:
        return []
    stale = []
    for record in records:
        scenario = record.run_id.split("/", 1)[0]
        base = os.path.join(store.runs_dir, record.run_id, scenario)
        try:
            if os.stat(f"{base}.jsonl").st_mtime_ns <= os.stat(f"{base}_report.json").st_mtime_ns:
                continue
            folder = store.open_run(record.run_id)
            scored = (folder.read_object(f"{scenario}_report.json") or {}).get("log_sha256")
        except (OSError, ValueError):
            continue
        if scored and scored != _sha256(folder, f"{scenario}.jsonl"):
            stale.append(record.run_id)
    if not stale:
        return []
    named = ", ".join(stale[:NAMED_RUNS])
    more = f" and {len(stale) - NAMED_RUNS} more" if len(stale) > NAMED_RUNS else ""
    return [
        f"the log of {named}{more} changed after its report was written: its metrics are of "
        "the earlier log (glossogen evaluate scores it again)"
    ]


def selection_notes(
    runs_dir: str, unreadable: dict[str, str], records: Sequence[RunRecord]
) -> list[str]:
    """The notes of a selection read as the export reads it, for every surface alike.

    The runs skipped as unreadable (:func:`skipped_notes`), the logs' damaged lines, and the
    runs whose log changed after their report was written (:func:`stale_notes`), in that
    order: the CLI, MCP and REST say the same of the same runs.
    """
    return [*skipped_notes(runs_dir, unreadable), *damaged_line_notes(list(records)),
            *stale_notes(runs_dir, records), *label_notes(records)]  # fmt: skip


def refuse_named(selection: Any, selected: Any) -> None:
    """Refuse a selection naming runs that no longer resolve or cannot be read (as the export).

    Raises:
        NamedRunsRefused: the first of :func:`~glossogen.export.named_refusals`.
    """
    refused = named_refusals(selection, selected)
    if refused:
        raise refused[0]


def select(runs_dir: str, query_selection: Any, max_runs: int) -> list[RunRecord]:
    """The selected runs (the export's :func:`~glossogen.export.select_runs`).

    Raises:
        RunsDirError, SelectionError, StorageError: as ``select_runs``.
    """
    return select_runs(runs_dir, query_selection, max_runs=max_runs).records


def select_named(
    runs_dir: str,
    query_selection: Any,
    max_runs: int,
    group: str | None = None,
    load: Callable[[Any, str], RunRecord] | None = None,
) -> SelectedRuns:
    """The runs the selection picks (of ``group``), refused as the export refuses them.

    ``group``: only that group's runs, an explicit id of another group's run counted as one
    that no longer resolves, ``max_runs`` applied to what remains (the export's rule,
    :func:`~glossogen.export.of_group`; REST's ``{slug}``); None: every group. ``load``: how
    a run is read (``select_runs``' loader: the projection cache's, a server's cache of
    records); None: as the export reads it.

    Raises:
        NamedRunsRefused: an explicit run id that no longer resolves or cannot be read.
        RunsDirError, SelectionError, StorageError: as ``select_runs``.
    """
    ceiling = max_runs if group is None else sys.maxsize  # the group first, then the ceiling
    selected = select_runs(runs_dir, query_selection, max_runs=ceiling, load=load)
    if group is not None:
        selected = of_group(selected, query_selection, group)
    refuse_named(query_selection, selected)
    if group is not None:
        check_limit(len(selected.records), max_runs)
    return selected


def select_rows(
    runs_dir: str,
    query_selection: Any,
    max_runs: int,
    grain: Grain,
    cache: bool = True,
    check: Callable[[pl.DataFrame], object] | None = None,
    group: str | None = None,
    load: Callable[[Any, str], RunRecord] | None = None,
) -> tuple[list[RunRecord], pl.DataFrame | None, list[str], set[str] | None]:
    """The selected runs, at a cached grain of a local runs dir their grain's rows, and notes.

    Fourth, with the cache's rows, the runs that have a report (its records carry none);
    else None (the records' own reports say).

    The runs are :func:`select_named`'s (``group``, ``load``): an explicit run id that no
    longer resolves refuses the selection (:class:`RunsMissing`), as ``glossogen export``
    refuses it.

    The notes name each run skipped as unreadable (:func:`skipped_notes`) and anything the
    cache could not do.

    With ``cache`` (and a grain in :data:`~glossogen.analysis._projection.CACHED_GRAINS` of a
    local folder, and no ``load`` of the caller's) the runs are selected through the
    projection cache, which reads only the runs whose files changed and is written back; the
    rows are the cache's. Otherwise the runs are read by ``load`` (as the export reads them
    when None) and the rows are None (built from the records).

    ``check``: called with the cached rows before the cache is written; what it raises (a
    query the rows refuse) leaves the cache as it was.

    Raises:
        NamedRunsRefused: an explicit run id that no longer resolves or cannot be read.
        RunsDirError, SelectionError, StorageError: as ``select_runs``.
    """
    from glossogen.analysis._projection import (
        CACHED_GRAINS,
        Projection,
        with_damaged_lines,
        with_not_labels,
    )
    from glossogen.storage import RunStore

    store = RunStore(runs_dir)
    if load is not None or not cache or grain not in CACHED_GRAINS or not store.local:
        selected = select_named(runs_dir, query_selection, max_runs, group, load)
        notes = selection_notes(runs_dir, selected.unreadable, selected.records)
        return selected.records, None, notes, None
    projection = Projection.open(store.runs_dir)  # a folder path (a file:// URL's, too)
    selected = select_named(runs_dir, query_selection, max_runs, group, projection.load)
    records = selected.records
    frame = projection.grain_frame(records, grain) if records else None
    if check is not None and frame is not None:
        check(frame)  # a refused query writes no cache
    notes = [
        *skipped_notes(runs_dir, selected.unreadable),
        *damaged_line_notes(with_damaged_lines(records)),
        *stale_notes(runs_dir, records),
        *label_notes(with_not_labels(records)),
        *projection.save(),
    ]
    return records, frame, notes, projection.scored(records)


__all__ = [
    "NamedRunsRefused",
    "RunsMissing",
    "selection_notes",
    "library_notes",
    "refuse_named",
    "runs_dir_root",
    "select",
    "select_named",
    "select_rows",
    "skipped_notes",
    "stale_notes",
]
