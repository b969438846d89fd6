"""``glossogen analyze``: a grouped question over a cohort, answered with n, missing and intervals.

The flags become one :class:`~glossogen.analysis.Query` (the export's selection flags, the
grain, keys, measures, filters, comparison); the query is checked whole before any run is read,
and the answer is printed as an aligned table (a terminal), JSON (``--json``: the typed result)
or CSV (``--csv``: one row per group and measure, then, after a blank line, one per comparison).
``--list-fields`` prints the grain's fields with their coverage and values instead.
``--dashboard FILE --out DIR`` renders a dashboard file (named queries and charts) as a static
report instead (``glossogen.analysis._dashboard``): the file is read and every query answered
before anything is written. The answer is asked and printed by ``_analysis_answer.py``, the
dashboard rendered by ``_analysis_dashboard.py``; this module turns the flags into the query.

Exit codes: 64 usage (an unknown grain, aggregate or sort, more than two keys, a filter or
comparison that does not parse, a field the selection's rows do not hold, ``--run-id`` with a
filter, a knob value the recorded type cannot read, an ``--out`` that is a file or a folder
holding files other than an earlier report's, a ``--plot`` that is a folder or whose folder is a
file or missing); 65 a selection over ``--max-runs``; 66 a ``--runs-dir`` that is not a folder,
``--run-id`` values that no longer resolve (as ``glossogen export`` refuses them),
a ``--dashboard`` file that cannot be read (one read that is not UTF-8 text is 64, as one
that is not YAML); 69 unreachable storage; 73 a ``--plot`` file or
``--out`` folder the system refuses to write (the answer is still printed before the
``--plot`` line).
"""

from __future__ import annotations

from typing import Any

import typer

from glossogen import exit_codes
from glossogen.cli import _selection as options
from glossogen.cli._analysis_answer import answer_query
from glossogen.cli._analysis_dashboard import dashboard_alone
from glossogen.cli._refusals import refused, said_of_selection, selection_refused


def analyze(
    runs_dir: str = typer.Option(
        "./runs", "--runs-dir", metavar="DIR", help="Runs folder or fsspec URL."
    ),
    scenario: list[str] = options.SCENARIO,
    label: list[str] = options.LABEL,
    knob: list[str] = options.KNOB,
    status: str | None = options.STATUS,
    run_id: list[str] | None = options.RUN_ID,
    run_id_contains: str | None = options.RUN_ID_CONTAINS,
    contains_agent_id: str | None = options.CONTAINS_AGENT_ID,
    grain: str = typer.Option(
        "run", "--grain", metavar="G", help="run, round, agent, message, call or observation."
    ),
    metric: str | None = typer.Option(
        None, "--metric", metavar="NAME", help="--grain observation: the metric's observations."
    ),
    by: str | None = typer.Option(
        None, "--by", metavar="K1[,K2]", help="Group keys (at most two)."
    ),
    measure: list[str] = typer.Option(
        [], "--measure", metavar="FIELD[:AGG]", help="Measure (repeatable); AGG default mean."
    ),
    filter_: list[str] = typer.Option(
        [], "--filter", metavar="FIELD<op>VALUE", help="Row condition (repeatable, all hold)."
    ),
    compare: str | None = typer.Option(
        None, "--compare", metavar="KEY=A,B", help="Difference B - A with its interval."
    ),
    sort: str | None = typer.Option(
        None, "--sort", metavar="NAME", help="A measure (field:agg) or key; -NAME descending."
    ),
    limit: int | None = typer.Option(None, "--limit", metavar="N", help="First N groups."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Bootstrap seed."),
    resamples: int = typer.Option(2000, "--resamples", metavar="N", help="Bootstrap draws."),
    max_runs: int = typer.Option(5000, "--max-runs", metavar="N", help="Run ceiling."),
    as_json: bool = typer.Option(False, "--json", help="Print the typed result as JSON."),
    as_csv: bool = typer.Option(False, "--csv", help="Print CSV."),
    plot: str | None = typer.Option(
        None, "--plot", metavar="FILE", help="Also draw the first measure to FILE (.svg/.png)."
    ),
    chart: str | None = typer.Option(
        None,
        "--chart",
        metavar="KIND",
        help="--plot's chart: bar (default), line, scatter or heatmap.",
    ),
    list_fields: bool = typer.Option(
        False, "--list-fields", help="List the grain's fields with coverage and values."
    ),
    dashboard: str | None = typer.Option(
        None, "--dashboard", metavar="FILE", help="Render a dashboard file (.yaml/.json) to --out."
    ),
    out: str | None = typer.Option(
        None, "--out", metavar="DIR", help="--dashboard: the static report's folder."
    ),
) -> int:
    """Answer a grouped question over runs: n, missing and 95% intervals in every cell."""
    from pydantic import ValidationError

    from glossogen.analysis import (
        Compare,
        Measure,
        NamedRunsRefused,
        Query,
        QueryError,
        RowFilter,
    )
    from glossogen.export import RunsDirError, SelectionError, check_runs_dir, selection_of
    from glossogen.storage import StorageError

    if as_json and as_csv:
        return refused("--json and --csv are exclusive", exit_codes.USAGE)
    if dashboard is not None or out is not None:
        return dashboard_alone(runs_dir, dashboard, out, given=(
            ("--measure", measure), ("--by", by is not None), ("--filter", filter_),
            ("--compare", compare), ("--metric", metric), ("--sort", sort), ("--limit", limit),
            ("--plot", plot), ("--chart", chart),
            ("--json", as_json), ("--csv", as_csv), ("--list-fields", list_fields),
            ("--grain", grain != "run"), ("--scenario", scenario), ("--label", label),
            ("--knob", knob), ("--status", status), ("--run-id", run_id),
            ("--run-id-contains", run_id_contains), ("--contains-agent-id", contains_agent_id),
        ))  # fmt: skip
    named = _named(grain, metric, sort, chart)
    if named:
        return refused(named, exit_codes.USAGE)
    unused = _unused(list_fields, (
        ("--measure", measure), ("--by", by is not None), ("--filter", filter_),
        ("--compare", compare), ("--sort", sort), ("--limit", limit is not None),
        ("--plot", plot is not None), ("--chart", chart is not None)))  # fmt: skip
    if unused:
        return refused(unused, exit_codes.USAGE)
    try:
        # the knob conditions' syntax is the query's entry's, named beside the selection's
        # other values in its fields' order, as REST's and MCP's analysis name them
        selection = selection_of(run_id, scenario, label, run_id_contains, status,
                                 contains_agent_id, knob, entry_checks=True)  # fmt: skip
    except SelectionError as exc:
        return refused(said_of_selection(exc), exit_codes.USAGE)
    try:
        keys = _keys(by)
        measures = [Measure.parse(m) for m in measure]
        if not measures and not list_fields:
            return refused("--measure is required (FIELD[:AGG])", exit_codes.USAGE)
        query = Query.model_validate({
            "selection": selection, "grain": grain, "metric": metric, "by": keys,
            "filters": [RowFilter.parse(f) for f in filter_],
            "measures": measures or [Measure(field="run_id", agg="count")],
            "compare": Compare.parse(compare) if compare else None,
            "sort": sort, "limit": limit, "seed": seed, "resamples": resamples,
            "max_runs": max_runs,
        })  # fmt: skip
        from glossogen.analysis import check_sort

        check_sort(query)
        _check_chart(plot, chart, query)
    except QueryError as exc:
        return refused(_flagged(exc), exit_codes.USAGE)
    except ValidationError as exc:
        return refused(_invalid(exc), exit_codes.USAGE)
    try:
        check_runs_dir(runs_dir)
    except RunsDirError as exc:
        return _runs_dir_refused(runs_dir, selection, exc)
    except StorageError as exc:
        return refused(str(exc), exit_codes.TRANSPORT)
    try:
        return answer_query(runs_dir, query, list_fields, as_json, as_csv, plot, chart or "bar")
    except QueryError as exc:
        return refused(_flagged(exc), exit_codes.USAGE)
    except NamedRunsRefused as exc:  # as glossogen export refuses them
        return refused(str(exc), exit_codes.UNREADABLE)
    except SelectionError as exc:  # every value refused, one line each (as the export)
        return selection_refused(exc, exit_codes.USAGE if exc.usage else exit_codes.REFUSED)
    except StorageError as exc:
        return refused(str(exc), exit_codes.TRANSPORT)


def _runs_dir_refused(runs_dir: str, selection: Any, exc: Exception) -> int:
    """Refuse a ``--runs-dir`` that is no folder, after the selection's values judged without it.

    A ``--status`` no run can have or a ``--knob`` condition with no operator is named first,
    each one (the library's check, as the export and REST's analysis name them), then the
    runs dir.

    Returns:
        The first refusal's exit code.
    """
    from glossogen.export import RunsDirError, SelectionError, check_selection
    from glossogen.storage import StorageError

    try:
        check_selection(runs_dir, selection)
    except SelectionError as bad:
        return selection_refused(bad, exit_codes.USAGE if bad.usage else exit_codes.REFUSED)
    except (RunsDirError, ValueError, StorageError):  # the runs dir, refused below
        pass
    return refused(f"--runs-dir {exc}", exit_codes.UNREADABLE)


def _named(grain: str, metric: str | None, sort: str | None, chart: str | None) -> str | None:
    """The line refusing a named flag's value (None: none is refused).

    A ``--grain``, ``--metric``, ``--sort`` or ``--chart`` that is not UTF-8 text (as ``--by``
    and the selection flags refuse it), or a grain not in :data:`GRAINS`.
    """
    from glossogen.analysis import GRAINS, QueryError
    from glossogen.analysis._terms import _utf8 as check_utf8
    from glossogen.refusals import shown

    try:
        for field, text in (("grain", grain), ("metric", metric), ("sort", sort),
                            ("chart", chart)):  # fmt: skip
            if text is not None:
                check_utf8(text, field)
    except QueryError as exc:
        return _flagged(exc)
    if grain not in GRAINS:
        return f"--grain {shown(grain)} is not one of {', '.join(GRAINS)}"
    return None


def _check_chart(plot: str | None, chart: str | None, query: Any) -> None:
    """Check ``--chart`` the same way with ``--plot`` or without it, then ``--plot``'s file.

    Raises:
        QueryError: a chart the query cannot be drawn as, a ``--plot`` target refused, or a
            ``--chart`` without ``--plot`` (it would draw nothing).
    """
    from glossogen.analysis import QueryError
    from glossogen.analysis._plot import check_drawable, check_plot
    from glossogen.refusals import shown

    check_drawable(chart or "bar", query)
    if plot is not None:
        check_plot(plot, chart or "bar", query)
    elif chart is not None:
        raise QueryError(f"{shown(chart)} draws the --plot FILE: give --plot", "chart")


def _unused(list_fields: bool, given: tuple[tuple[str, Any], ...]) -> str | None:
    """With ``--list-fields``, the line refusing the first query flag it would not use."""
    if not list_fields:
        return None
    unused = [flag for flag, value in given if value]
    return f"--list-fields lists the grain's fields; it takes no {unused[0]}" if unused else None


def _keys(by: str | None) -> list[str]:
    """The ``--by`` keys: at most two, none empty (no ``--by``: none).

    Raises:
        QueryError: (field ``by``) an empty key (``a,``, or ``--by ""``), more than two, or
            a byte that is not UTF-8.
    """
    from glossogen.analysis import QueryError
    from glossogen.analysis._terms import _utf8 as check_utf8
    from glossogen.refusals import shown

    if by is not None:  # as --filter refuses a byte that is not UTF-8
        check_utf8(by, "by")
    keys = [k.strip() for k in by.split(",")] if by is not None else []
    if any(not k for k in keys):
        raise QueryError(f"{shown(by)}: a key is empty (K1[,K2])", "by")
    if len(keys) > 2:
        raise QueryError(f"{shown(by)}: at most two keys", "by")
    return keys  # a key named twice: the query's own check words it (as REST and MCP say it)


def _invalid(exc: Any) -> str:
    """A query the flags made that does not validate, as one line naming the flag and value."""
    from glossogen.analysis._terms import query_error_of
    from glossogen.refusals import shown, validator_line

    ours = query_error_of(exc)
    if ours is not None:  # a query's own check: worded as the engine's other refusals
        return _flagged(ours)
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "metric"
    if where in ("field", "agg"):  # a part of one --measure's value
        where = "measures"
    message = validator_line(first)
    given = first.get("input")
    flag = f"--{_flag(where)}"
    if first["type"] != "value_error" and isinstance(given, str):
        flag = f"{flag} {shown(given)}"  # quoted, escaped and cut: a byte that is no UTF-8
    elif first["type"] != "value_error" and isinstance(given, (int, float)):
        flag = f"{flag} {given}"  # as typed: --limit -1
    elif message.startswith("'"):  # the message opens with the value as typed: --by 'a,a': ...
        return f"{flag} {message}"
    return f"{flag}: {message}"


_FLAGS = {"measures": "measure", "filters": "filter", "by": "by", "compare": "compare"}


def _flag(field: str) -> str:
    return _FLAGS.get(field.split(".", 1)[0], field.split(".", 1)[0].replace("_", "-"))


def _flagged(exc: Any) -> str:
    """A refused query's line (``QueryError``): its field and each field it mentions as flags."""
    return f"--{_flag(exc.field)} " + exc.said({f: f"--{_flag(f)}" for f in exc.mentions})


__all__ = ["analyze"]
