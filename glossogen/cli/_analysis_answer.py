"""``glossogen analyze``'s answer: asked of the library, printed as a table, JSON or CSV.

The query's result (or, with ``--list-fields``, the grain's fields) printed as an aligned table
on a terminal, JSON (``--json``: the typed result) or CSV (``--csv``: one row per group and
measure, then, after a blank line, one per comparison); the notes on stderr; ``--plot``'s chart
written after the answer is shown.
"""

from __future__ import annotations

import sys
from typing import Any

from glossogen import exit_codes
from glossogen.cli._refusals import refused


def answer_query(
    runs_dir: str,
    query: object,
    list_fields: bool,
    as_json: bool,
    as_csv: bool,
    plot: str | None = None,
    chart: str = "bar",
) -> int:
    from glossogen.analysis import Query, answer, fields

    assert isinstance(query, Query)
    if list_fields:
        found = fields(runs_dir, query.selection, query.grain, query.metric, query.max_runs)
        for note in found.notes:
            print(f"glossogen: note: {note}", file=sys.stderr, flush=True)
        if as_json:
            print(found.model_dump_json(indent=2))
            return int(exit_codes.OK)
        import polars as pl

        listed = (lambda vs: "; ".join(vs)) if as_csv else _listed  # CSV: whole, as --json
        frame = pl.DataFrame(
            [{**f.model_dump(exclude={"values"}), "values": listed(f.values)}
             for f in found.fields],
            schema={"name": pl.String, "family": pl.String, "dtype": pl.String,
                    "rows": pl.Int64, "runs": pl.Int64, "distinct": pl.Int64,
                    "values": pl.String},
            orient="row",
        )  # fmt: skip
        _show(frame, as_csv, f"{query.grain} grain: {found.rows} rows of {found.runs} runs")
        return int(exit_codes.OK)
    result = answer(runs_dir, query)
    if plot is not None:  # too many groups to draw: refused before anything is shown
        from glossogen.analysis._plot import check_drawn_groups

        check_drawn_groups(result, "plot")
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        _print_result(result, as_csv)
    if plot is not None:  # after the answer is shown: a chart not written loses no table
        from glossogen.analysis._plot import PlotNotWritten, write_plot

        try:
            write_plot(result, plot, chart)
        except PlotNotWritten as exc:
            return refused(f"--plot {exc}", exit_codes.CANNOT_WRITE)
    return int(exit_codes.OK)


VALUE_CUT = 40
"""A listed value longer than this is cut (``...``) in ``--list-fields``' terminal table."""
VALUES_CUT = 120
"""The terminal table's ``values`` column is cut to this many characters (``...``)."""


def _cut(text: str, at: int) -> str:
    return text if len(text) <= at else f"{text[:at]}..."


def _listed(values: list[str]) -> str:
    """A field's values as its terminal row shows them: each on one line and cut, then all."""
    return _cut("; ".join(_cut(" ".join(v.split()), VALUE_CUT) for v in values), VALUES_CUT)


def _print_result(result: Any, as_csv: bool) -> None:
    """The answer as a table (or CSV), then its comparisons, then its notes on stderr."""
    from glossogen.analysis._render import comparison_frame, result_frame, runs_read

    title = f"{result.query.grain} grain: {result.rows} rows of {runs_read(result)}"
    _show(result_frame(result, whole_counts=as_csv), as_csv, title)
    if result.comparisons:
        if as_csv:
            print()
        _show(comparison_frame(result), as_csv, "comparisons (B - A)")
    for note in result.notes:
        print(f"glossogen: note: {note}", file=sys.stderr, flush=True)


def _show(frame: object, as_csv: bool, title: str) -> None:
    import polars as pl

    from glossogen.analysis._render import csv_text, number

    assert isinstance(frame, pl.DataFrame)
    if as_csv:
        sys.stdout.write(csv_text(frame))
        sys.stdout.flush()
        return
    from rich.console import Console
    from rich.table import Table

    rows = [[number(v) for v in row] for row in frame.iter_rows()]
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for i, (column, dtype) in enumerate(frame.schema.items()):
        widest = max([len(column), *(len(r[i]) for r in rows)])
        table.add_column(column, justify="right" if dtype.is_numeric() else "left",
                         no_wrap=True, min_width=widest)  # fmt: skip
    for row in rows:
        table.add_row(*row)
    width = sum(c.min_width or 0 for c in table.columns) + 2 * len(table.columns)
    console = Console(soft_wrap=True)
    console.width = max(console.width, width)
    console.print(table)
