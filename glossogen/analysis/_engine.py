"""Answering a :class:`~glossogen.analysis.Query`: select, build the grain's rows, filter, group.

The runs are the export's selection (:func:`glossogen.export.select_runs`), and the rows are
the export's own tables (``run_level``, ``round_level``, ``agent_level``, ``message_level``,
``call_level``, each with the run's context joined), so an analysis and an export of the same
selection read the same numbers. The ``observation`` grain is one metric's observations as its
report writes them (``per_round``, one per team where a metric is per team; else
``per_agent``).

A blank cell is never a value: a measure's blank rows are dropped and counted as ``missing``;
a group with no value has value None (never 0); a blank group key is a group of its own,
keyed None (null in JSON; :data:`~glossogen.analysis.BLANK` on the terminal and in a CSV); a
filter never matches a blank cell, and a comparison's text arm never names the blank group
(an empty arm does).

The parts: the grain's rows and the names a query uses (``_rows.py``), the query checked
against them (``_checks.py``), each group's cells with their intervals (``_cells.py``; money
added exactly, ``_money.py``), the comparison of two arms (``_compare.py``) and the selected
runs with their notes (``_select.py``); this module answers a query with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from glossogen.analysis._cells import (
    INTERVALLED,
    finite_only,
    group_cell,
    overflow_notes,
    single_values,
)
from glossogen.analysis._checks import (
    check_query,
    filter_expr,
    refused_after,
    sort_apart,
    typed_compare,
    unheld_filter_notes,
)
from glossogen.analysis._compare import compare_arms
from glossogen.analysis._query import Query
from glossogen.analysis._result import Comparison, Dimension, Fields, Group, Result
from glossogen.analysis._rows import (
    TABLES,
    VALUES_LISTED,
    check_metric,
    grain_frame,
    key_label,
    number_or_text,
    resolve,
    sort_key,
    unscored_notes,
)
from glossogen.analysis._select import library_notes, runs_dir_root, select_rows
from glossogen.analysis._terms import Grain, QueryError
from glossogen.export import RunRecord
from glossogen.export._tables import family
from glossogen.refusals import shown


def answer_records(
    records: list[RunRecord],
    query: Query,
    frame: pl.DataFrame | None = None,
    skipped: Sequence[str] = (),
    scored: set[str] | None = None,
) -> Result:
    """Answer ``query`` over already selected ``records`` (see :func:`answer`).

    ``frame``: the grain's rows of ``records`` when already built (from the projection cache);
    else they are built from the records. ``skipped``: notes of the runs the selection could
    not read (:func:`skipped_notes`), first among the answer's notes. ``scored``: the runs
    that have a report, when known (as :func:`fields_of`).

    Where a report gives the rows or a measured, grouped or filtered field (the round and
    observation grains; a ``metric.`` field), a note says how many selected runs have no
    report yet, so an empty or thin answer says why.

    With no run selected there are no rows to check the query's names against: the answer has
    no group and says so (as an export of no run writes header-only tables).
    """
    if not records:
        return Result(query=query, runs=0, rows=0, runs_after_filters=0, run_ids=[], groups=[],
                      notes=[*skipped, "no run matched the selection"])  # fmt: skip
    if query.grain == "observation":
        check_metric(records, query.metric or "")
    scored = _scored_runs(records, frame, scored)
    read_notes: list[str] = []
    if frame is None:
        with library_notes(read_notes):  # the logs' damaged lines, as the export notes them
            frame = grain_frame(records, query.grain, query.metric)
    columns, keys, compare_column = check_query(frame, query)
    frame, unfinite = finite_only(frame, sorted(set(columns.values())))
    compare = typed_compare(frame, query.compare, compare_column)
    filtered = [resolve(frame, cond.field, "", "filters") for cond in query.filters]
    unheld = unheld_filter_notes(frame, query.filters, filtered)
    for cond, column in zip(query.filters, filtered, strict=True):
        frame = frame.filter(filter_expr(frame, cond, column))
    parts = frame.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): frame}
    if not keys and frame.height == 0:
        parts = {(): frame}
    groups = []
    overflowed: list[str] = []  # intervals, then differences, past the float's limit
    blanked: list[str] = []  # aggregates past it
    for key, part in sorted(parts.items(), key=lambda kv: sort_key(kv[0])):
        cells = [group_cell(query.grain, m, columns[m.label], part, query, overflowed, blanked)
                 for m in query.measures]  # fmt: skip
        groups.append(
            Group(keys={k: key_label(v) for k, v in zip(query.by, key, strict=True)}, cells=cells)
        )
    groups = _sorted(groups, query)
    comparisons: list[Comparison] = []
    used = [*columns.values(), *keys, compare_column or "", *filtered]
    reported = query.grain in ("round", "observation") or any(c.startswith("metric.") for c in used)
    unscored = unscored_notes(sum(r.run_id not in scored for r in records), len(records))
    notes: list[str] = [*skipped, *read_notes, *(unscored if reported else []), *unfinite,
                        *unheld, *single_values(groups, query),
                        *overflow_notes(blanked)]  # fmt: skip
    if compare and compare_column:
        within = {k: c for k, c in zip(query.by, keys, strict=True) if c != compare_column}
        by_id = {r.run_id: r for r in records}
        comparisons = compare_arms(query, compare, frame, columns, compare_column, within, by_id,
                               overflowed)  # fmt: skip
        if any(m.agg not in INTERVALLED for m in query.measures):
            notes.append("comparisons are of means and rates only")
    notes += [f"{what} overflows a float (beyond 1.8e308): left blank"
              for what in dict.fromkeys(overflowed)]  # fmt: skip
    return Result(
        query=query, runs=len(records), rows=frame.height,
        runs_after_filters=frame.get_column("run_id").n_unique() if frame.height else 0,
        run_ids=[r.run_id for r in records],
        groups=groups, comparisons=comparisons, notes=notes,
    )  # fmt: skip


def _sorted(groups: list[Group], query: Query) -> list[Group]:
    if query.sort:
        name = query.sort.removeprefix("-")
        reverse = query.sort.startswith("-")
        labels = [m.label for m in query.measures]
        if name in labels:
            at = labels.index(name)
            present = [g for g in groups if g.cells[at].value is not None]
            blank = [g for g in groups if g.cells[at].value is None]
            present.sort(key=lambda g: g.cells[at].value or 0.0, reverse=reverse)
            groups = present + blank
        elif name in query.by:
            present = [g for g in groups if g.keys[name] is not None]
            present.sort(key=lambda g: sort_key([number_or_text(g.keys[name] or "")]),
                         reverse=reverse)  # fmt: skip
            groups = present + [g for g in groups if g.keys[name] is None]
        else:
            raise QueryError(
                f"{shown(query.sort)} is neither a measure ({', '.join(labels)}) nor a key",
                "sort",
            )
    return groups[: query.limit] if query.limit else groups


def answer(
    runs_dir: str,
    query: Query,
    cache: bool = True,
    group: str | None = None,
    load: Callable[[Any, str], RunRecord] | None = None,
) -> Result:
    """Answer ``query`` over the runs under ``runs_dir``: the one entry of every surface.

    ``cache``: use the projection cache at the grains it serves (:func:`select_rows`); the
    answer is the same either way. ``group``: only that group's runs (REST's ``{slug}``, as
    the export's routes: :func:`~glossogen.analysis._select.select_named`); ``load``: how a
    run is read (a server's cache of records); None each: every group, read as the export.

    Raises:
        QueryError: a name or aggregate the selection's rows cannot answer; a ``sort`` that
            names neither a measure nor a key, carrying the query's other refused values
            (:func:`~glossogen.analysis._checks.refused_after`).
        RunsDirError, SelectionError, StorageError: from the selection.
    """
    query, sort = sort_apart(query)
    try:
        records, frame, notes, scored = select_rows(
            runs_dir, query.selection, query.max_runs, query.grain, cache,
            check=lambda rows: check_query(rows, query), group=group, load=load,
        )  # fmt: skip
        result = answer_records(records, query, frame, notes, scored)
    except (ValueError, OSError) as exc:  # a query's, the selection's, the storage's refusal
        if sort is None:
            raise
        raise refused_after(sort, exc) from None
    if sort is not None:
        raise sort
    root = runs_dir_root(runs_dir)
    result.notes = [note.replace(root, "") for note in result.notes]
    return result


def fields_of(
    records: list[RunRecord],
    grain: Grain,
    metric: str | None = None,
    frame: pl.DataFrame | None = None,
    skipped: Sequence[str] = (),
    scored: set[str] | None = None,
) -> Fields:
    """Describe the fields of ``grain``'s rows over ``records``: coverage and distinct values.

    ``frame``: those rows when already built (from the projection cache); ``scored``: the
    runs that have a report, when known (the cache's run table; see :func:`_scored_runs`).

    Raises:
        QueryError: (field ``metric``) at the observation grain, a metric no selected run's
            report holds (as :func:`answer_records` refuses it).
    """
    if grain == "observation" and records:
        check_metric(records, metric or "")
    scored = _scored_runs(records, frame, scored)
    if frame is None:
        frame = grain_frame(records, grain, metric)
    out = []
    for column in frame.columns:
        series = frame.get_column(column)
        present = frame.filter(pl.col(column).is_not_null())
        labels = sorted(
            {str(key_label(v)) for v in present.get_column(column).unique().to_list()},
            key=lambda s: sort_key([number_or_text(s)]),
        )
        out.append(
            Dimension(
                name=column,
                family=family(column, TABLES.get(grain, "")),
                dtype=_held(column, series.dtype),
                rows=present.height,
                runs=present.get_column("run_id").n_unique(),
                distinct=len(labels),
                values=labels[:VALUES_LISTED],
            )  # fmt: skip
        )
    unscored = sum(1 for r in records if r.run_id not in scored)
    notes = [*skipped, *unscored_notes(unscored, len(records))]
    return Fields(grain=grain, runs=len(records), rows=frame.height, fields=out, notes=notes)


def _held(column: str, dtype: pl.DataType) -> str:
    """The type ``column``'s values are held as: money's numbers as its decimals (``_money``)."""
    from glossogen.analysis import _money as money

    held = money.HELD if dtype.is_numeric() and money.is_money(column) else dtype
    return str(held)


def _scored_runs(
    records: Sequence[RunRecord], frame: pl.DataFrame | None, scored: set[str] | None
) -> set[str]:
    """The runs of ``records`` that have a report.

    ``scored`` when the caller knows it (the cache's run table); else each record's report,
    unless the rows came from the cache (``frame`` given), whose records carry no report: then
    its rows' ``has_evaluation``.
    """
    if scored is not None:
        return scored
    if frame is None:
        return {r.run_id for r in records if r.report is not None}
    return _scored(frame)


def _scored(frame: pl.DataFrame) -> set[str]:
    """The runs of ``frame`` whose rows say they have a report (``has_evaluation``)."""
    if "has_evaluation" not in frame.columns or not frame.height:
        return set()
    flagged = pl.col("has_evaluation").cast(pl.Boolean).fill_null(False)
    return set(frame.filter(flagged).get_column("run_id").unique().to_list())


def fields(
    runs_dir: str,
    selection: Any,
    grain: Grain,
    metric: str | None = None,
    max_runs: int = 5000,
    cache: bool = True,
    group: str | None = None,
    load: Callable[[Any, str], RunRecord] | None = None,
) -> Fields:
    """:func:`fields_of` the runs ``selection`` picks under ``runs_dir``.

    ``cache``, ``group``, ``load``: as :func:`answer`.
    """
    records, frame, notes, scored = select_rows(
        runs_dir, selection, max_runs, grain, cache, group=group, load=load
    )
    return fields_of(records, grain, metric, frame, notes, scored)


__all__ = ["answer", "answer_records", "fields", "fields_of"]
