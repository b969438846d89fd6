"""A query checked against the grain's rows: its names, aggregates, filters and comparison.

Each check raises :class:`~glossogen.analysis.QueryError` naming the bad value, before any
number is computed (and, with the projection cache, before the cache is written).
"""

from __future__ import annotations

import math

import polars as pl

from glossogen.analysis._query import Query
from glossogen.analysis._rows import key_labels, resolve
from glossogen.analysis._terms import Compare, Measure, QueryError, RowFilter
from glossogen.refusals import shown


def _numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric()


_BOOLEANS = {"true": 1, "1": 1, "false": 0, "0": 0}
"""What a filter on a boolean field takes, as the 0/1 a rate reads."""


def filter_expr(frame: pl.DataFrame, cond: RowFilter, column: str) -> pl.Expr:
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
            what = "" if math.isnan(number) else " a finite number"  # nan, or text: is not
            raise QueryError(f"{shown(str(cond))}: {column} is a number, {shown(cond.value)} "
                             f"is not{what}", "filters")  # fmt: skip
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
        kept = kept.filter(filter_expr(frame, cond, column))
    for measure in query.measures:  # a rate's 0/1 rule holds of the rows it is computed over
        _check_rate(kept, measure, columns[measure.label])
    compare = None
    if query.compare:
        compare = resolve(frame, query.compare.key, query.grain, "compare")
        held = set(key_labels(frame, compare).to_list())
        typed = typed_compare(frame, query.compare, compare) or query.compare
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


def unheld_filter_notes(
    frame: pl.DataFrame, filters: list[RowFilter], columns: list[str]
) -> list[str]:
    """A note per ``=`` filter whose value no row holds, naming what its column holds.

    Not a refusal (an empty answer can be right), as a comparison's arm no row has is:
    ``filter 'label_flag.pilot=yes': no row has label_flag.pilot 'yes' (it holds True)``.
    """
    notes = []
    for cond, column in zip(filters, columns, strict=True):
        if (
            cond.op != "="
            or frame.height == 0
            or frame.select(filter_expr(frame, cond, column).any()).item()
        ):
            continue
        held = sorted({h for h in key_labels(frame, column).to_list() if h is not None})
        values = ", ".join(held[:10]) + (f", ... ({len(held)} values)" if len(held) > 10 else "")
        what = f"it holds {values}" if held else "every row is blank there"
        notes.append(f"filter {shown(str(cond))}: no row has {column} {shown(cond.value)} ({what})")
    return notes


def typed_compare(
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


def sort_apart(query: Query) -> tuple[Query, QueryError | None]:
    """``query`` and :func:`check_sort`'s refusal of it; refused, ``query`` without its sort.

    The query without the sort is answered as any other (the selection, the names its rows
    must hold), so a refusal behind the sort's is named with it (:func:`refused_after`).
    """
    try:
        check_sort(query)
    except QueryError as exc:
        return query.model_copy(update={"sort": None}), exc
    return query, None


def refused_after(first: QueryError, exc: Exception) -> QueryError:
    """``first`` carrying ``exc`` when ``exc`` refuses a value of the query too.

    A query's check (:class:`QueryError`) or the selection's (``SelectionError``) is one more
    refused value; the run ceiling, ids that no longer resolve and an unreadable runs
    directory are not (the first refusal is answered alone, as before).
    """
    from glossogen.analysis._select import NamedRunsRefused
    from glossogen.export import SelectionError

    value = isinstance(exc, QueryError) or (
        isinstance(exc, SelectionError)
        and not isinstance(exc, NamedRunsRefused)
        and exc.field != "max_runs"
    )
    if not value or not isinstance(exc, ValueError):
        first.also = ()
    elif isinstance(exc, (QueryError, SelectionError)):  # each value it names, in order
        first.also = tuple(exc.every)
    else:
        first.also = (exc,)
    return first


__all__ = [
    "check_query",
    "check_sort",
    "refused_after",
    "sort_apart",
    "filter_expr",
    "typed_compare",
    "unheld_filter_notes",
]
