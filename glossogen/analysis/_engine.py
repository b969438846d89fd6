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
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from glossogen.analysis._query import (
    Cell,
    Compare,
    Comparison,
    Dimension,
    Fields,
    Grain,
    Group,
    Interval,
    Measure,
    Query,
    QueryError,
    Result,
    RowFilter,
    key_shown,
    shown,
)
from glossogen.analysis._stats import (
    cluster_bootstrap,
    paired_bootstrap,
    unpaired_bootstrap,
    wilson,
)
from glossogen.export import (
    RunRecord,
    SelectionError,
    build_frames,
    damaged_line_notes,
    select_runs,
)
from glossogen.export._frames import context_columns, context_frame, run_context, with_context
from glossogen.export._knobfilter import RunsMissing
from glossogen.export._tables import family

_TABLES = {
    "run": "run_level",
    "round": "round_level",
    "agent": "agent_level",
    "message": "message_level",
    "call": "call_level",
}
_PREFIXES = ("metric.", "knob.", "label.", "label_flag.", "lineage.", "agent_model.")
"""Families a bare name is looked up in when no column has the name itself."""
_INTERVALLED = ("mean", "rate")
UNSCORED = (
    "no run of this selection has a report yet: metrics and the round grain's rows come from "
    "scoring them (glossogen evaluate)"
)
"""The hint where no selected run is scored (a refused name, ``--list-fields``, an answer)."""
REPORTED_GRAINS = ("run", "round", "agent")
"""The grains a report adds fields to (metrics; the round grain's rows): a name refused at
one of them over runs not yet scored says why. The message and call grains come from the
log alone."""


def unscored_notes(unscored: int, runs: int) -> list[str]:
    """The note saying that ``unscored`` of the ``runs`` selected have no report yet (or none)."""
    if not unscored:
        return []
    if unscored == runs:
        return [UNSCORED]
    return [
        f"{unscored} of {runs} runs of this selection have no report yet: their metrics and "
        "round rows come from scoring them (glossogen evaluate)"
    ]


_VALUES_LISTED = 20


def grain_frame(records: list[RunRecord], grain: Grain, metric: str | None = None) -> pl.DataFrame:
    """Return the rows of ``grain`` over ``records``, the run context joined to each row.

    Text is kept as recorded (a label ``=HYPERLINK(...)`` is itself in JSON and in filters);
    only the CSV an answer is written as guards it (:func:`~glossogen.analysis._render.csv_text`).
    """
    if grain == "observation":
        return _observations(records, metric or "")
    table = _TABLES[grain]
    return build_frames(records, [table], repeat_run_columns=True, safe=False)[table]


def _observations(records: list[RunRecord], metric: str) -> pl.DataFrame:
    from glossogen.export._cells import frame_from_rows
    from glossogen.export._frames import metrics_of, reported_number

    rows: list[dict[str, Any]] = []
    for record in records:
        entry = metrics_of(record, {metric}).get(metric)
        if entry is None:
            continue
        base = {"run_id": record.run_id, "scenario_name": record.scenario, "metric": metric}
        for obs in entry.get("per_round") or []:
            rows.append({**base, "observation": "round", "round_number": obs.get("round_number"),
                         "team_id": obs.get("team_id"), "agent_id": None,
                         "value": reported_number(obs.get("value"))})  # fmt: skip
        if not entry.get("per_round"):
            for obs in entry.get("per_agent") or []:
                rows.append({**base, "observation": "agent", "round_number": None,
                             "team_id": None, "agent_id": obs.get("agent_id"),
                             "value": reported_number(obs.get("value"))})  # fmt: skip
    own = ["run_id", "scenario_name", "metric", "observation", "round_number", "team_id"]
    frame = frame_from_rows(rows, [*own, "agent_id", "value"])
    contexts = [run_context(r) for r in records]
    columns = [c for c in context_columns(contexts) if c not in frame.columns]
    return with_context(frame, context_frame(records, columns))


def resolve(frame: pl.DataFrame, name: str, grain: str, what: str) -> str:
    """Return the column ``name`` means: itself, else the one family column ending in it.

    Raises:
        QueryError: (field ``what``) no such column at this grain, or several families hold it.
    """
    if name in frame.columns:
        return name
    found = [f"{p}{name}" for p in _PREFIXES if f"{p}{name}" in frame.columns]
    if len(found) == 1:
        return found[0]
    if found:
        raise QueryError(f"{shown(name)} is ambiguous: {', '.join(found)}", what)
    unscored = (
        grain in REPORTED_GRAINS
        and "has_evaluation" in frame.columns
        and not frame.get_column("has_evaluation").any()
    )
    hint = f"; {UNSCORED}" if unscored else ""
    raise QueryError(
        f"{shown(name)}: no such field at the {grain} grain of this selection "
        f"(list the grain's fields){hint}",
        what,
    )


def _numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric()


_BOOLEANS = {"true": 1, "1": 1, "false": 0, "0": 0}
"""What a filter on a boolean field takes, as the 0/1 a rate reads."""


def _filter_expr(frame: pl.DataFrame, cond: RowFilter, column: str) -> pl.Expr:
    """The rows ``cond`` keeps; a blank cell is never kept, under any operator."""
    dtype = frame.schema[column]
    col = pl.col(column)
    if dtype == pl.Null:  # every cell blank: nothing matches
        return pl.lit(False)
    if dtype == pl.Boolean:  # a 0/1 number to a rate: true/false or 1/0, under every operator
        bit = _BOOLEANS.get(cond.value.strip().lower())
        if bit is None:
            raise QueryError(f"{shown(str(cond))}: {column} is true or false; write true, false, "
                             "1 or 0", "filters")  # fmt: skip
        col, cond = col.cast(pl.Int8), RowFilter(field=cond.field, op=cond.op, value=str(bit))
        dtype = pl.Int8()
    if _numeric(dtype):
        try:
            number = float(cond.value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):  # nan and inf compare with nothing as a user means
            raise QueryError(
                f"{shown(str(cond))}: {column} is a number, {shown(cond.value)} is not",
                "filters",
            )
        ops = {"=": col == number, "!=": col != number, ">": col > number,
               ">=": col >= number, "<": col < number, "<=": col <= number}  # fmt: skip
        expr = ops[cond.op]
    else:
        if cond.op not in ("=", "!="):
            raise QueryError(f"{shown(cond)}: {column} is text; only = and != apply", "filters")
        text = col.cast(pl.String).str.to_lowercase()
        wanted = cond.value.casefold()
        expr = text == wanted if cond.op == "=" else text != wanted
    return col.is_not_null() & expr.fill_null(False)


def key_labels(frame: pl.DataFrame, column: str) -> pl.Series:
    """The group labels of ``column``, as groups are labelled (:func:`_label`; null if none)."""
    return pl.Series(column, [_label(v) for v in frame.get_column(column).to_list()], pl.String)


@dataclass
class _Values:
    """One measure's values in one group: the values and the run of each."""

    values: list[Any]
    """Floats, except for a ``count`` of a text field (its texts)."""
    runs: list[str]
    missing: int

    def exponent(self) -> int:
        """The power of two every value's magnitude is below (:func:`_exponent`)."""
        return _exponent(self.values)

    def clusters(self, exponent: int = 0) -> tuple[list[str], list[float], list[int]]:
        """Per run (sorted by run id): the sum and the count of its values.

        Each run's values are added in row order (``numpy.bincount`` adds its weights in input
        order), so a sum is the one a running total would give. ``exponent``: each value is
        first scaled by ``2 ** -exponent`` (exactly: a power of two), so that sums of values
        near the float's limit do not overflow.
        """
        if not self.runs:
            return [], [], []
        order, codes = np.unique(np.asarray(self.runs, dtype=str), return_inverse=True)
        values = np.ldexp(np.asarray(self.values, dtype=float), -exponent)
        sums = np.bincount(codes, weights=values)
        counts = np.bincount(codes)
        return [str(r) for r in order], sums.tolist(), counts.tolist()


def _number(value: object) -> float:
    """A polars aggregate of a non-empty Float64 series without nulls, as a float."""
    if not isinstance(value, (int, float)):
        raise TypeError(f"an aggregate of numbers gave {value!r}")
    return float(value)


_SCALABLE = ("mean", "rate", "median", "stddev", "sem")
"""Aggregates that scale with their values: computed again on the values scaled by a power of
two when a sum or square inside overflowed (the true value may still be a float)."""


def _exponent(values: Sequence[float]) -> int:
    """The least ``e`` with every finite value's magnitude below ``2 ** e`` (0 for none)."""
    return max((math.frexp(v)[1] for v in values if math.isfinite(v)), default=0)


def _ldexp(value: float, exponent: int) -> float:
    """``value * 2 ** exponent``; infinite where that overflows a float."""
    try:
        return math.ldexp(value, exponent)
    except OverflowError:
        return math.copysign(math.inf, value)


def _aggregate(agg: str, values: list[Any]) -> float | None:
    """``agg`` of ``values`` (None: no value, or too few for a spread).

    A mean, median or spread of finite values whose computation overflowed (a sum past
    1.8e308: ``1e308, 1e308, 40, 40``) is computed on the values scaled by ``2 ** -e`` and
    scaled back, so it is the float it is whenever that fits (``5e307 + 20``); a sum that
    overflows stays infinite (blanked with a note, :func:`_overflowed`).
    """
    value = _plain_aggregate(agg, values)
    if value is None or math.isfinite(value) or agg not in _SCALABLE:
        return value
    exponent = _exponent(values)
    scaled = _plain_aggregate(agg, [math.ldexp(v, -exponent) for v in values])
    return None if scaled is None else _ldexp(scaled, exponent)


def _plain_aggregate(agg: str, values: list[Any]) -> float | None:
    n = len(values)
    if n == 0:
        return None  # blank under every aggregate, count too (its n says 0)
    if agg == "count":
        return float(n)
    series = pl.Series(values, dtype=pl.Float64)
    if agg in ("mean", "rate"):
        return _number(series.mean())
    if agg == "median":
        return _number(series.median())
    if agg == "sum":
        return float(series.sum())
    if agg == "min":
        return _number(series.min())
    if agg == "max":
        return _number(series.max())
    if n < 2:
        return None
    stddev = _number(series.std(ddof=1))
    return stddev if agg == "stddev" else stddev / math.sqrt(n)


def _no_interval() -> Interval:
    return Interval(low=None, high=None, method="none")


def _interval(grain: str, agg: str, data: _Values, seed: int, resamples: int) -> Interval | None:
    """The cell's interval: ``none`` with too few values or runs; None when it overflows."""
    if grain == "run" and agg == "rate":
        bounds = wilson(int(sum(data.values)), len(data.values))
        method = "wilson"
    else:
        if len(set(data.runs)) < 2:
            return _no_interval()
        bounds = _scaled_bounds(
            lambda e: cluster_bootstrap(*data.clusters(e)[1:], seed, resamples), data.exponent()
        )
        method = "bootstrap"
        if bounds is None:  # two runs or more, and still no interval: it overflowed
            return None
    if bounds is None:
        return _no_interval()
    return Interval(low=bounds[0], high=bounds[1], method=method)


def _scaled_bounds(
    bounds_at: Callable[[int], tuple[float, float] | None], exponent: int
) -> tuple[float, float] | None:
    """``bounds_at(0)``, or where a draw's sum overflowed, ``bounds_at(exponent)`` scaled back.

    ``bounds_at(e)`` is the interval of the values scaled by ``2 ** -e`` (the same draws, from
    the same seed). None when even those overflow (a difference past 1.8e308), or when there
    are too few values for an interval.
    """
    plain = bounds_at(0)
    if plain is not None or not exponent:
        return plain
    bounds = bounds_at(exponent)
    if bounds is None:
        return None
    low, high = _ldexp(bounds[0], exponent), _ldexp(bounds[1], exponent)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _values(part: pl.DataFrame, column: str) -> _Values:
    present = part.filter(pl.col(column).is_not_null())
    series = present.get_column(column)
    numeric = series.dtype.is_numeric() or series.dtype == pl.Boolean
    values = series.cast(pl.Float64).to_list() if numeric else series.to_list()
    runs = present.get_column("run_id").to_list()
    return _Values(values, runs, part.height - present.height)


def _cell(
    grain: str, measure: Measure, column: str, part: pl.DataFrame, query: Query,
    overflowed: list[str], blanked: list[str],
) -> Cell:  # fmt: skip
    """One group's cell.

    Its label is added to ``blanked`` when its aggregate overflowed a float (the value is left
    blank), and ``<label>: its interval`` to ``overflowed`` when its interval did.
    """
    data = _values(part, column)
    value = _aggregate(measure.agg, data.values)
    interval = None
    if value is not None and not math.isfinite(value):  # JSON has no infinity: blank, noted
        blanked.append(measure.label)
        value = None
    elif measure.agg in _INTERVALLED:
        interval = _interval(grain, measure.agg, data, query.seed, query.resamples)
        if interval is None:
            overflowed.append(f"{measure.label}: its interval")
            interval = _no_interval()
    return Cell(
        measure=measure.label, value=value, n=len(data.values), missing=data.missing,
        runs=len(set(data.runs)), interval=interval,
    )  # fmt: skip


def _check_measure(frame: pl.DataFrame, measure: Measure, column: str) -> None:
    dtype = frame.schema[column]
    if measure.agg == "count":
        return
    if dtype == pl.String:  # what a text field takes instead
        raise QueryError(
            f"{shown(measure.typed)}: {column} is text, not a number: count it "
            f"({shown(measure.field + ':count')}) or group by it ({{by}} {measure.field})",
            "measures",
            ("by",),
        )
    if not _numeric(dtype) and dtype not in (pl.Boolean, pl.Null):  # Null: every cell blank
        raise QueryError(
            f"{shown(measure.typed)}: {column} is not a number (it holds {dtype})", "measures"
        )


def _check_rate(kept: pl.DataFrame, measure: Measure, column: str) -> None:
    """Refuse a rate over ``kept`` (the rows left after the filters) holding a value not 0/1."""
    if measure.agg != "rate":
        return
    values = kept.get_column(column).drop_nulls().cast(pl.Float64)
    odd = values.filter(~values.is_in([0.0, 1.0]))
    if odd.len():
        raise QueryError(
            f"{shown(measure.label)}: a rate needs 0/1 values; {column} holds {odd[0]}",
            "measures",
        )


def _pairing(
    records: dict[str, RunRecord], a_runs: set[str], b_runs: set[str]
) -> tuple[list[tuple[str, str]], str]:
    """Pair the arms' runs: a fork with its source, else the same recorded seed, one to one.

    Returns:
        The pairs ``(a_run, b_run)`` and how they were paired, or no pair and why not.
    """
    sources = {
        r: str((records[r].lineage or {}).get("source_run_id") or "") for r in a_runs | b_runs
    }
    forks = [(sources[b], b) for b in sorted(b_runs) if sources[b] in a_runs]
    forks += [(a, sources[a]) for a in sorted(a_runs) if sources[a] in b_runs]
    if forks and len(forks) == len(a_runs) == len(b_runs):
        if len({a for a, _ in forks}) == len(forks) == len({b for _, b in forks}):
            return sorted(forks), "fork of its source"
    if not a_runs or not b_runs:
        return [], "unpaired: an arm has no value"
    seeds = {r: records[r].config.get("seed") for r in a_runs | b_runs}
    a_seeds = [seeds[r] for r in a_runs]
    b_seeds = [seeds[r] for r in b_runs]
    if None in a_seeds or None in b_seeds:
        return [], "unpaired: a run records no seed"
    if len(set(a_seeds)) != len(a_seeds) or len(set(b_seeds)) != len(b_seeds):
        return [], "unpaired: an arm repeats a seed"
    if set(a_seeds) != set(b_seeds):
        return [], "unpaired: the arms' seeds differ"
    by_seed = {seeds[b]: b for b in b_runs}
    return sorted((a, by_seed[seeds[a]]) for a in a_runs), "seed"


def _compare(
    query: Query,
    compare: Compare,
    frame: pl.DataFrame,
    columns: dict[str, str],
    key_column: str,
    within: dict[str, str],
    records: dict[str, RunRecord],
    overflowed: list[str],
) -> list[Comparison]:
    """B - A of each mean and rate measure, within each group of the ``within`` keys.

    ``within`` maps each other key's name in the query to its column. A difference or an
    interval past the float's limit is blank, and what it is of is added to ``overflowed``.
    """
    labels = key_labels(frame, key_column)
    frame = frame.with_columns(labels.alias("__arm"))
    columns_within = list(within.values())
    parts = (
        frame.partition_by(columns_within, as_dict=True, maintain_order=True)
        if within
        else {(): frame}
    )
    out = []
    for key, part in sorted(parts.items(), key=lambda kv: _sort_key(kv[0])):
        names = {w: _label(v) for w, v in zip(within, key, strict=True)}
        arms = {arm: part.filter(pl.col("__arm").is_null() if arm is None else
                                 pl.col("__arm") == arm)
                for arm in (compare.a, compare.b)}  # fmt: skip
        for measure in query.measures:
            if measure.agg not in _INTERVALLED:
                continue
            data = {arm: _values(arms[arm], columns[measure.label]) for arm in arms}
            a, b = data[compare.a], data[compare.b]
            pairs, pairing = _pairing(records, set(a.runs), set(b.runs))
            exponent = max(a.exponent(), b.exponent())
            bounds = _scaled_bounds(partial(_difference, a, b, pairs, query), exponent)
            method = "paired bootstrap" if pairs else "bootstrap"
            enough = len(pairs) >= 2 if pairs else min(len(set(a.runs)), len(set(b.runs))) >= 2
            a_value = _aggregate("mean", a.values)
            b_value = _aggregate("mean", b.values)
            diff = None if a_value is None or b_value is None else b_value - a_value
            what = (f"{measure.label}: the difference {compare.key} {key_shown(compare.b)} - "
                    f"{key_shown(compare.a)}"
                    + "".join(f" within {k} {key_shown(v)}" for k, v in names.items()))  # fmt: skip
            if diff is not None and not math.isfinite(diff):
                overflowed.append(what)
                diff = None
            if enough and bounds is None:
                overflowed.append(f"{what}: its interval")
            out.append(
                Comparison(
                    measure=measure.label,
                    key=compare.key,
                    a=compare.a,
                    b=compare.b,
                    within=names,
                    a_value=a_value,
                    b_value=b_value,
                    difference=diff,
                    interval=Interval(
                        low=bounds[0] if bounds else None,
                        high=bounds[1] if bounds else None,
                        method=method if bounds else "none",
                    ),
                    paired=bool(pairs),
                    pairing=pairing,
                    n_a=len(a.values),
                    n_b=len(b.values),
                    pairs=len(pairs),
                )  # fmt: skip
            )
    return out


def _difference(
    a: _Values, b: _Values, pairs: list[tuple[str, str]], query: Query, exponent: int
) -> tuple[float, float] | None:
    """The interval of B - A (paired when ``pairs``), values scaled by ``2 ** -exponent``."""
    a_runs, a_sums, a_counts = a.clusters(exponent)
    b_runs, b_sums, b_counts = b.clusters(exponent)
    if not pairs:
        return unpaired_bootstrap(
            (a_sums, a_counts), (b_sums, b_counts), query.seed, query.resamples
        )
    ai = {r: i for i, r in enumerate(a_runs)}
    bi = {r: i for i, r in enumerate(b_runs)}
    pa = ([a_sums[ai[x]] for x, _ in pairs], [a_counts[ai[x]] for x, _ in pairs])
    pb = ([b_sums[bi[y]] for _, y in pairs], [b_counts[bi[y]] for _, y in pairs])
    return paired_bootstrap(pa, pb, query.seed, query.resamples)


def _label(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _sort_key(key: Sequence[Any]) -> tuple[Any, ...]:
    """Order groups by their keys' values: numbers as numbers, text as text, blank last."""
    out: list[Any] = []
    for value in key:
        if value is None:
            out.append((2, 0, ""))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((0, value, ""))
        else:
            out.append((1, 0, str(_label(value))))
    return tuple(out)


def check_query(frame: pl.DataFrame, query: Query) -> tuple[dict[str, str], list[str], str | None]:
    """Resolve the query's names against the grain's columns.

    Returns:
        Measure label to column, the key columns, and the compare key's column (or None).

    Raises:
        QueryError: a name no column holds, an aggregate its column cannot take, a filter its
            column cannot read.
    """
    keys = [resolve(frame, k, query.grain, "by") for k in query.by]
    columns = {}
    for measure in query.measures:
        column = resolve(frame, measure.field, query.grain, "measures")
        _check_measure(frame, measure, column)
        columns[measure.label] = column
    kept = frame
    for cond in query.filters:
        column = resolve(frame, cond.field, query.grain, "filters")
        kept = kept.filter(_filter_expr(frame, cond, column))
    for measure in query.measures:  # a rate's 0/1 rule holds of the rows it is computed over
        _check_rate(kept, measure, columns[measure.label])
    compare = None
    if query.compare:
        compare = resolve(frame, query.compare.key, query.grain, "compare")
        held = set(key_labels(frame, compare).to_list())
        typed = _typed_compare(frame, query.compare, compare) or query.compare
        if typed.a == typed.b:  # 0 and 0.0 on a number key: one arm
            raise QueryError(
                f"{shown(str(query.compare))} names the arm {shown(typed.a or '')} twice",
                "compare",
            )
        for given, arm in ((query.compare.a, typed.a), (query.compare.b, typed.b)):
            if arm not in held:
                values = ", ".join(sorted(h for h in held if h is not None)[:10])
                blank = "; an empty arm names the rows without it" if None in held else ""
                what = shown(given) if given is not None else "blank (an empty arm)"
                raise QueryError(
                    f"{shown(str(query.compare))}: no row has {compare} {what} (it holds "
                    f"{values}{blank})",
                    "compare",
                )
    return columns, keys, compare


def _root(runs_dir: str) -> str:
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
    root = _root(runs_dir)
    return [
        f"skipped {run_id}: {reason.replace(root, '')}"
        for run_id, reason in sorted(unreadable.items())
    ]


def _check_metric(records: list[RunRecord], metric: str) -> None:
    """Refuse an observation grain's metric no selected run's report holds, naming those held.

    Raises:
        QueryError: (field ``metric``) naming the metrics the reports hold, or saying that no
            run is scored yet.
    """
    from glossogen.export._frames import metrics_of

    held: set[str] = set()
    for record in records:
        held.update(metrics_of(record, None))
    if metric in held:
        return
    if not held:
        raise QueryError(f"{shown(metric)}: {UNSCORED}", "metric")
    known = sorted(held)
    listed = ", ".join(known[:_VALUES_LISTED]) + (", ..." if len(known) > _VALUES_LISTED else "")
    raise QueryError(
        f"{shown(metric)}: no report of this selection has this metric (they have {listed})",
        "metric",
    )


def _typed_compare(
    frame: pl.DataFrame, compare: Compare | None, column: str | None
) -> Compare | None:
    """The comparison with each arm as its group is labelled, read as a filter reads a value.

    A number column's arm is matched numerically (``0`` is the group ``0.0``), as
    ``--filter channel_noise_level=0`` matches; a text column's case-insensitively, as a text
    filter matches (``VEYRU`` is the group ``veyru``; a label written exactly wins).
    """
    if compare is None or column is None:
        return compare
    held = [h for h in key_labels(frame, column).unique().to_list() if h is not None]
    if not _numeric(frame.schema[column]):
        folded: dict[str, str] = {}
        for label in sorted(held):
            folded.setdefault(label.casefold(), label)
        a, b = (arm if arm is None or arm in held else folded.get(arm.casefold(), arm)
                for arm in (compare.a, compare.b))  # fmt: skip
        return Compare.model_construct(key=compare.key, a=a, b=b)
    labels: dict[float, str] = {}
    for label in held:
        try:
            labels.setdefault(float(label), label)
        except ValueError:
            continue
    arms: list[str | None] = []
    for arm in (compare.a, compare.b):
        try:
            arms.append(arm if arm is None else labels.get(float(arm), arm))
        except ValueError:
            arms.append(arm)
    return Compare.model_construct(key=compare.key, a=arms[0], b=arms[1])


@contextmanager
def _library_notes(notes: list[str]) -> Iterator[None]:
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


_STALE_NAMED = 5
"""Stale reports named one by one in a note; more are counted."""


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
    named = ", ".join(stale[:_STALE_NAMED])
    more = f" and {len(stale) - _STALE_NAMED} more" if len(stale) > _STALE_NAMED else ""
    return [
        f"the log of {named}{more} changed after its report was written: its metrics are of "
        "the earlier log (glossogen evaluate scores it again)"
    ]


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
        _check_metric(records, query.metric or "")
    scored = _scored_runs(records, frame, scored)
    read_notes: list[str] = []
    if frame is None:
        with _library_notes(read_notes):  # the logs' damaged lines, as the export notes them
            frame = grain_frame(records, query.grain, query.metric)
    columns, keys, compare_column = check_query(frame, query)
    frame, unfinite = _finite(frame, sorted(set(columns.values())))
    compare = _typed_compare(frame, query.compare, compare_column)
    filtered = [resolve(frame, cond.field, "", "filters") for cond in query.filters]
    for cond, column in zip(query.filters, filtered, strict=True):
        frame = frame.filter(_filter_expr(frame, cond, column))
    parts = frame.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): frame}
    if not keys and frame.height == 0:
        parts = {(): frame}
    groups = []
    overflowed: list[str] = []  # intervals, then differences, past the float's limit
    blanked: list[str] = []  # aggregates past it
    for key, part in sorted(parts.items(), key=lambda kv: _sort_key(kv[0])):
        cells = [_cell(query.grain, m, columns[m.label], part, query, overflowed, blanked)
                 for m in query.measures]  # fmt: skip
        groups.append(
            Group(keys={k: _label(v) for k, v in zip(query.by, key, strict=True)}, cells=cells)
        )
    groups = _sorted(groups, query)
    comparisons: list[Comparison] = []
    used = [*columns.values(), *keys, compare_column or "", *filtered]
    reported = query.grain in ("round", "observation") or any(c.startswith("metric.") for c in used)
    unscored = unscored_notes(sum(r.run_id not in scored for r in records), len(records))
    notes: list[str] = [*skipped, *read_notes, *(unscored if reported else []), *unfinite,
                        *_single_values(groups, query), *_overflowed(blanked)]  # fmt: skip
    if compare and compare_column:
        within = {k: c for k, c in zip(query.by, keys, strict=True) if c != compare_column}
        by_id = {r.run_id: r for r in records}
        comparisons = _compare(query, compare, frame, columns, compare_column, within, by_id,
                               overflowed)  # fmt: skip
        if any(m.agg not in _INTERVALLED for m in query.measures):
            notes.append("comparisons are of means and rates only")
    notes += [f"{what} overflows a float (beyond 1.8e308): left blank"
              for what in dict.fromkeys(overflowed)]  # fmt: skip
    return Result(
        query=query, runs=len(records), rows=frame.height,
        runs_after_filters=frame.get_column("run_id").n_unique() if frame.height else 0,
        run_ids=[r.run_id for r in records],
        groups=groups, comparisons=comparisons, notes=notes,
    )  # fmt: skip


def _finite(frame: pl.DataFrame, columns: Sequence[str]) -> tuple[pl.DataFrame, list[str]]:
    """The frame with each non-finite number (NaN, inf) of the measured ``columns`` blank.

    A report's value that is not a finite number counts as missing, as a value the report
    does not hold, and a note names the run and the field (the first few runs of each field).
    """
    notes: list[str] = []
    blanked = []
    for column in columns:
        if frame.schema[column] not in (pl.Float32, pl.Float64):
            continue
        bad = ~pl.col(column).is_finite()
        runs = frame.filter(bad).get_column("run_id").unique(maintain_order=True).to_list()
        if not runs:
            continue
        named = ", ".join(runs[:_STALE_NAMED]) + (f" and {len(runs) - _STALE_NAMED} more"
                                                  if len(runs) > _STALE_NAMED else "")  # fmt: skip
        notes.append(f"{column}: a value that is not a finite number (text, NaN or infinite) "
                     f"counted as missing in {named}")  # fmt: skip
        blanked.append(pl.when(bad).then(None).otherwise(pl.col(column)).alias(column))
    return (frame.with_columns(blanked) if blanked else frame), notes


def _single_values(groups: list[Group], query: Query) -> list[str]:
    """The notes naming each spread (``stddev``, ``sem``) blank for a group of one value."""
    spreads = [i for i, m in enumerate(query.measures) if m.agg in ("stddev", "sem")]
    labels = [query.measures[i].label for i in spreads
              if any(g.cells[i].n == 1 for g in groups)]  # fmt: skip
    return [f"{label}: blank where a group has a single value (a spread needs two)"
            for label in labels]  # fmt: skip


def _overflowed(labels: list[str]) -> list[str]:
    """The notes naming each measure whose aggregate overflowed a float (:func:`_cell` blanks it).

    JSON has no infinity: every surface shows the same blank value, and the note says why.
    """
    return [f"{label}: overflows a float (beyond 1.8e308): left blank"
            for label in dict.fromkeys(labels)]  # fmt: skip


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
            present.sort(key=lambda g: _sort_key([_number_or_text(g.keys[name] or "")]),
                         reverse=reverse)  # fmt: skip
            groups = present + [g for g in groups if g.keys[name] is None]
        else:
            raise QueryError(
                f"{shown(query.sort)} is neither a measure ({', '.join(labels)}) nor a key",
                "sort",
            )
    return groups[: query.limit] if query.limit else groups


def check_sort(query: Query) -> None:
    """Refuse a ``sort`` that names neither a measure nor a key (before any run is read).

    Raises:
        QueryError: (field ``sort``) naming it.
    """
    if query.sort is None:
        return
    name = query.sort.removeprefix("-")
    labels = [m.label for m in query.measures]
    if name not in labels and name not in query.by:
        raise QueryError(
            f"{shown(query.sort)} is neither a measure ({', '.join(labels)}) nor a key", "sort"
        )


def refuse_missing(missing_run_ids: Sequence[str]) -> None:
    """Refuse a selection naming run ids that no longer resolve (as the export refuses it).

    Raises:
        RunsMissing: naming them.
    """
    if missing_run_ids:
        raise RunsMissing(missing_run_ids)


def select(runs_dir: str, query_selection: Any, max_runs: int) -> list[RunRecord]:
    """The selected runs (the export's :func:`~glossogen.export.select_runs`).

    Raises:
        RunsDirError, SelectionError, StorageError: as ``select_runs``.
    """
    return select_runs(runs_dir, query_selection, max_runs=max_runs).records


def select_rows(
    runs_dir: str,
    query_selection: Any,
    max_runs: int,
    grain: Grain,
    cache: bool = True,
    check: Callable[[pl.DataFrame], object] | None = None,
) -> tuple[list[RunRecord], pl.DataFrame | None, list[str], set[str] | None]:
    """The selected runs, at a cached grain of a local runs dir their grain's rows, and notes.

    Fourth, with the cache's rows, the runs that have a report (its records carry none);
    else None (the records' own reports say).

    An explicit run id that no longer resolves refuses the selection (:class:`RunsMissing`),
    as ``glossogen export`` refuses it.

    The notes name each run skipped as unreadable (:func:`skipped_notes`) and anything the
    cache could not do.

    With ``cache`` (and a grain in :data:`~glossogen.analysis._projection.CACHED_GRAINS` of a
    local folder) the runs are selected through the projection cache, which reads only the
    runs whose files changed and is written back; the rows are the cache's. Otherwise the runs
    are read as the export reads them and the rows are None (built from the records).

    ``check``: called with the cached rows before the cache is written; what it raises (a
    query the rows refuse) leaves the cache as it was.

    Raises:
        RunsMissing: an explicit run id that no longer resolves.
        RunsDirError, SelectionError, StorageError: as ``select_runs``.
    """
    from glossogen.analysis._projection import CACHED_GRAINS, Projection, with_damaged_lines
    from glossogen.storage import RunStore

    store = RunStore(runs_dir)
    if not cache or grain not in CACHED_GRAINS or not store.local:
        selected = select_runs(runs_dir, query_selection, max_runs=max_runs)
        refuse_missing(selected.missing_run_ids)
        notes = [*skipped_notes(runs_dir, selected.unreadable),
                 *damaged_line_notes(selected.records)]  # fmt: skip
        return selected.records, None, [*notes, *stale_notes(runs_dir, selected.records)], None
    projection = Projection.open(store.runs_dir)  # a folder path (a file:// URL's, too)
    selected = select_runs(runs_dir, query_selection, max_runs=max_runs, load=projection.load)
    refuse_missing(selected.missing_run_ids)
    records = selected.records
    frame = projection.grain_frame(records, grain) if records else None
    if check is not None and frame is not None:
        check(frame)  # a refused query writes no cache
    notes = [
        *skipped_notes(runs_dir, selected.unreadable),
        *damaged_line_notes(with_damaged_lines(records)),
        *stale_notes(runs_dir, records),
        *projection.save(),
    ]
    return records, frame, notes, projection.scored(records)


def answer(runs_dir: str, query: Query, cache: bool = True) -> Result:
    """Answer ``query`` over the runs under ``runs_dir``.

    ``cache``: use the projection cache at the grains it serves (:func:`select_rows`); the
    answer is the same either way.

    Raises:
        QueryError: a name or aggregate the selection's rows cannot answer.
        RunsDirError, SelectionError, StorageError: from the selection.
    """
    check_sort(query)
    records, frame, notes, scored = select_rows(
        runs_dir, query.selection, query.max_runs, query.grain, cache,
        check=lambda rows: check_query(rows, query),
    )  # fmt: skip
    result = answer_records(records, query, frame, notes, scored)
    root = _root(runs_dir)
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
        _check_metric(records, metric or "")
    scored = _scored_runs(records, frame, scored)
    if frame is None:
        frame = grain_frame(records, grain, metric)
    out = []
    for column in frame.columns:
        series = frame.get_column(column)
        present = frame.filter(pl.col(column).is_not_null())
        labels = sorted(
            {str(_label(v)) for v in present.get_column(column).unique().to_list()},
            key=lambda s: _sort_key([_number_or_text(s)]),
        )
        out.append(
            Dimension(
                name=column,
                family=family(column, _TABLES.get(grain, "")),
                dtype=str(series.dtype),
                rows=present.height,
                runs=present.get_column("run_id").n_unique(),
                distinct=len(labels),
                values=labels[:_VALUES_LISTED],
            )  # fmt: skip
        )
    unscored = sum(1 for r in records if r.run_id not in scored)
    notes = [*skipped, *unscored_notes(unscored, len(records))]
    return Fields(grain=grain, runs=len(records), rows=frame.height, fields=out, notes=notes)


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


def _number_or_text(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def fields(
    runs_dir: str,
    selection: Any,
    grain: Grain,
    metric: str | None = None,
    max_runs: int = 5000,
    cache: bool = True,
) -> Fields:
    """:func:`fields_of` the runs ``selection`` picks under ``runs_dir``.

    ``cache``: as :func:`answer`.
    """
    records, frame, notes, scored = select_rows(runs_dir, selection, max_runs, grain, cache)
    return fields_of(records, grain, metric, frame, notes, scored)


__all__ = [
    "SelectionError",
    "answer",
    "answer_records",
    "check_query",
    "check_sort",
    "fields",
    "fields_of",
    "grain_frame",
    "key_labels",
    "resolve",
    "select_rows",
    "skipped_notes",
]
