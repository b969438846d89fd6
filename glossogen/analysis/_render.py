"""A :class:`~glossogen.analysis.Result` as flat frames, blank values left blank.

One row per (group, measure), and one per comparison; the CLI prints them as an aligned table
or CSV.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from glossogen.analysis._result import Result, key_shown

CELL_COLUMNS = ["measure", "value", "n", "missing", "runs", "low", "high", "interval"]
"""Columns after the group keys in :func:`result_frame`."""

COMPARISON_COLUMNS = [
    "measure", "key", "a", "b", "a_value", "b_value", "difference", "low", "high", "interval",
    "paired", "pairing", "n_a", "n_b", "pairs",
]  # fmt: skip
"""Columns after the other keys in :func:`comparison_frame`."""

_FLOATS = {"value", "low", "high", "a_value", "b_value", "difference"}
_INTS = {"n", "missing", "runs", "n_a", "n_b", "pairs"}


def _schema(keys: list[str], columns: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = dict.fromkeys(keys, pl.String)
    for column in columns:
        if column in _FLOATS:
            schema[column] = pl.Float64
        elif column in _INTS:
            schema[column] = pl.Int64
        elif column == "paired":
            schema[column] = pl.Boolean
        else:
            schema[column] = pl.String
    return schema


def result_frame(result: Result, whole_counts: bool = False) -> pl.DataFrame:
    """One row per group and measure: the keys (:func:`key_shown`), then :data:`CELL_COLUMNS`.

    ``whole_counts`` (the CSV's frame): ``value`` is text, a ``count`` written as the whole
    number it is (``40``, not ``40.0``) and any other value as the number column writes it.
    """
    rows = []
    for group in result.groups:
        for cell in group.cells:
            interval = cell.interval
            rows.append({
                **{k: key_shown(v) for k, v in group.keys.items()}, "measure": cell.measure,
                "value": cell.value, "n": cell.n, "missing": cell.missing, "runs": cell.runs,
                "low": interval.low if interval else None,
                "high": interval.high if interval else None,
                "interval": interval.method if interval else None,
            })  # fmt: skip
    frame = pl.DataFrame(rows, schema=_schema(result.query.by, CELL_COLUMNS), orient="row")
    if not whole_counts:
        return frame
    counted = pl.col("measure").str.ends_with(":count")
    return frame.with_columns(
        pl.when(counted)
        .then(pl.col("value").cast(pl.Int64).cast(pl.String))
        .otherwise(pl.col("value").cast(pl.String))
        .alias("value")
    )


def comparison_frame(result: Result) -> pl.DataFrame:
    """One row per comparison: the other keys, then :data:`COMPARISON_COLUMNS`.

    Its keys and arms as :func:`result_frame`'s keys (:func:`key_shown`).
    """
    within = [k for k in result.query.by if result.query.compare and k != result.query.compare.key]
    within = [k for k in within if any(k in c.within for c in result.comparisons)] or within
    rows = []
    for c in result.comparisons:
        rows.append({
            **{k: key_shown(c.within[k]) if k in c.within else None for k in within},
            "measure": c.measure, "key": c.key, "a": key_shown(c.a), "b": key_shown(c.b),
            "a_value": c.a_value, "b_value": c.b_value,
            "difference": c.difference, "low": c.interval.low, "high": c.interval.high,
            "interval": c.interval.method, "paired": c.paired, "pairing": c.pairing,
            "n_a": c.n_a, "n_b": c.n_b, "pairs": c.pairs,
        })  # fmt: skip
    return pl.DataFrame(rows, schema=_schema(within, COMPARISON_COLUMNS), orient="row")


def csv_text(frame: pl.DataFrame) -> str:
    """``frame`` as CSV, its text made spreadsheet-safe (the export's guard).

    A cell starting ``=``, ``+``, ``@`` or a tab gets a leading ``'`` and control characters
    and line breaks go, in the CSV alone: the answer (JSON, REST, MCP) and the filters keep
    the text as recorded.
    """
    from glossogen.export._cells import safe_text

    return safe_text(frame).write_csv()


def runs_read(result: Result) -> str:
    """The runs the rows come from, and the runs selected when a filter is given or they differ.

    ``20 runs (41 selected)``; ``41 runs`` when every selected run adds rows and no filter is
    given. What the table's title, the chart's subtitle and the report say.
    """
    after = result.runs if result.runs_after_filters is None else result.runs_after_filters
    if result.query.filters or after != result.runs:
        return f"{after} runs ({result.runs} selected)"
    return f"{after} runs"


def number(value: Any) -> str:
    """A cell as the terminal table shows it: blank for None, a whole number whole (77461).

    Any other number with 4 significant digits.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:  # a whole number as JSON gives it: 77461
            return str(int(value))
        return f"{value:.4g}"
    return str(value)


__all__ = [
    "CELL_COLUMNS",
    "COMPARISON_COLUMNS",
    "comparison_frame",
    "csv_text",
    "number",
    "result_frame",
    "runs_read",
]
