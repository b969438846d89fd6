"""A :class:`~glossogen.analysis.Result` drawn as a chart file (matplotlib, as the report page).

The chart shows the query's first measure: ``bar`` (groups along the first key, one bar per
value of the second key side by side), ``line`` (the first key along x, one line per value of
the second), ``scatter`` (one point per group at the first key's value, on a number axis when
every label of the first key is a number, else one place per label; one colour per value of
the second key) or ``heatmap`` (first key by second key, the value as colour and printed in
the cell). With two keys, a legend titled by the second key names its values, even when it
has one. Bars, lines and points carry the cell's 95% interval as error bars where it has
one. A blank group is drawn at its :data:`~glossogen.analysis.BLANK` label; a group with no
value draws nothing (a heatmap leaves its cell empty), never a zero; a chart with nothing to
draw says why in its frame (:func:`nothing_drawn`: ``no run matched the selection``). The
file's format is its extension: ``.svg`` or ``.png``. A file is the same bytes each time the
same result is drawn (an SVG carries no date and its ids come from a fixed salt), so a
regenerated figure can be compared with the one cited.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from glossogen.analysis._query import Query
from glossogen.analysis._render import runs_read
from glossogen.analysis._result import Result, key_shown
from glossogen.analysis._terms import QueryError
from glossogen.refusals import shown, shown_path

CHARTS = ("bar", "line", "scatter", "heatmap")
"""Chart kinds (``--chart``)."""

FORMATS = ("svg", "png")
"""File formats, read from the file's extension."""


class PlotNotWritten(Exception):  # noqa: N818 - a refusal, as QueryError
    """A chart file that could not be written after the answer was found (one line).

    Attributes:
        path: The file asked for.
        reason: Why, as the system says it (``Permission denied``).
    """

    def __init__(self, path: str, reason: str) -> None:
        """Keep the file and the reason."""
        self.path = path
        self.reason = reason
        super().__init__(f"{shown_path(path)}: cannot be written: {reason}")


def name_too_long(path: str) -> bool:
    """True when ``path``'s last part is longer than its folder's file names may be."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    return len(os.fsencode(os.path.basename(os.path.abspath(path)))) > longest


def check_target(path: str, field: str) -> None:
    """Refuse a file or folder to write that cannot be one, before anything is read.

    Raises:
        QueryError: (``field``) an empty name, a folder where a file goes, a folder above it
            that is a file or does not exist, or a name longer than the folder allows.
    """
    if not path:
        raise QueryError("'': names no file", field)
    if os.path.isdir(path):
        raise QueryError(f"{shown_path(path)}: a folder, not a file", field)
    folder = os.path.dirname(path) or "."
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise QueryError(f"{shown_path(path)}: its folder {shown_path(folder)} is a file", field)
    if not os.path.isdir(folder):
        raise QueryError(
            f"{shown_path(path)}: its folder {shown_path(folder)} does not exist", field
        )
    if name_too_long(path):
        raise QueryError(f"{shown_path(path)}: the file name is too long", field)


def check_chart(chart: str) -> None:
    """Refuse a chart kind that is not one of :data:`CHARTS`.

    Raises:
        QueryError: (field ``chart``) naming it.
    """
    try:
        chart.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError(f"{shown(chart)}: not UTF-8 text", "chart") from None
    if chart not in CHARTS:
        raise QueryError(f"{shown(chart)} is not one of {', '.join(CHARTS)}", "chart")


def check_plot(path: str, chart: str, query: Query) -> str:
    """Return the file format of ``path`` after checking the chart can be drawn.

    Raises:
        QueryError: (field ``plot`` or ``chart``) an extension that is not .svg or .png, a
            name with nothing before it (``.svg``), a target :func:`check_target` refuses, an
            unknown chart, or a heatmap without two keys.
    """
    ext = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if ext not in FORMATS:
        raise QueryError(f"{shown_path(path)}: write a .svg or .png file", "plot")
    if not os.path.basename(path)[: -len(ext) - 1]:  # '.svg' alone: a hidden file, no name
        typed = path.rsplit(".", 1)[-1]
        raise QueryError(f"{shown_path(path)}: the file has no name before .{typed}", "plot")
    check_target(path, "plot")  # asked before any run is read, not after the query
    check_drawable(chart, query)
    return ext


MAX_DRAWN_GROUPS = 500
"""Groups a chart draws at most, on every surface (``--plot``, a dashboard's chart, REST's
``/render``): a chart of more is unreadable and takes seconds per hundred groups to draw."""


def check_drawn_groups(result: Result, field: str = "result.groups") -> None:
    """Refuse to draw ``result`` when it holds more than :data:`MAX_DRAWN_GROUPS` groups.

    Raises:
        QueryError: (field ``field``) ``859 groups: at most 500 are drawn; narrow the query
            or set its limit``.
    """
    if len(result.groups) > MAX_DRAWN_GROUPS:
        raise QueryError(f"{len(result.groups)} groups: at most {MAX_DRAWN_GROUPS} are drawn; "
                         "narrow the query or set its limit", field)  # fmt: skip


def check_drawable(chart: str, query: Query) -> None:
    """Refuse a chart kind the query cannot be drawn as (a plot asked for or not).

    Raises:
        QueryError: (field ``chart``) an unknown chart, or a heatmap without two keys.
    """
    check_chart(chart)
    if chart == "heatmap" and len(query.by) != 2:
        raise QueryError(f"{shown(chart)} needs two keys ({{by}} K1,K2)", "chart", ("by",))


def _series(result: Result) -> tuple[list[str], dict[str, list[Any]]]:
    """The first key's labels in order, and per second-key label the first measure's cells."""
    by = result.query.by
    xs: list[str] = []
    for group in result.groups:
        label = key_shown(group.keys[by[0]]) if by else "all"
        if label not in xs:
            xs.append(label)
    series: dict[str, list[Any]] = {}
    for group in result.groups:
        name = key_shown(group.keys[by[1]]) if len(by) > 1 else ""
        cells = series.setdefault(name, [None] * len(xs))
        cells[xs.index(key_shown(group.keys[by[0]]) if by else "all")] = group.cells[0]
    return xs, series


def _numbers(labels: list[str]) -> list[float] | None:
    """The labels as numbers when every one is a number (a blank label is not), else None."""
    try:
        return [float(label) for label in labels]
    except ValueError:
        return None


def _errors(cells: list[Any]) -> tuple[list[float], list[float]]:
    """Each cell's distance down and up to its interval's ends (NaN where it has none).

    Drawn from the interval's ends whatever their order (an inverted interval is its ends
    swapped); an end on the wrong side of the value is clipped to the value (a bar of 0), so a
    value outside its interval draws the end that is there and never fails.
    """
    low: list[float] = []
    high: list[float] = []
    for c in cells:
        ends = (c.interval.low, c.interval.high) if c.interval else (None, None)
        if ends[0] is not None and ends[1] is not None:
            ends = (min(ends), max(ends))
        low.append(float("nan") if ends[0] is None else max(c.value - ends[0], 0.0))
        high.append(float("nan") if ends[1] is None else max(ends[1] - c.value, 0.0))
    return low, high


def nothing_drawn(result: Result) -> str | None:
    """Why a chart of ``result`` has no mark (no group holds a value), or None when it has one.

    No run selected: ``no run matched the selection`` (the answer's note); runs but no row:
    the filters kept none (or the grain has none); rows but no value: the measure has none.
    """
    if any(g.cells[0].value is not None for g in result.groups):
        return None
    if not result.runs:
        return "no run matched the selection"
    if not result.rows:
        if result.query.filters:
            return "no row is left after the filters"
        return f"the runs selected have no row at the {result.query.grain} grain"
    return f"no group has a value of {result.query.measures[0].label}"


def write_plot(result: Result, path: str, chart: str) -> None:
    """Draw ``result``'s first measure as ``chart`` into ``path`` (.svg or .png).

    Raises:
        QueryError: as :func:`check_plot`.
        PlotNotWritten: the file could not be written (a folder that refuses it).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ext = check_plot(path, chart, result.query)
    check_drawn_groups(result)
    measure = result.query.measures[0].label
    xs, series = _series(result)
    fig, ax = plt.subplots(figsize=(7.2, 4.0), dpi=100)
    try:
        if chart == "heatmap":
            names = list(series)
            # A cell with no value (no group, or a group with no value) is NaN: drawn empty.
            grid = [[c.value if c is not None and c.value is not None else float("nan")
                     for c in series[n]] for n in names]  # fmt: skip
            if names and xs:  # an empty result draws empty axes, as the other charts do
                image = ax.imshow(grid, aspect="auto", cmap="viridis")
                fig.colorbar(image, ax=ax, label=measure)
            ax.set_yticks(range(len(names)), names)
            ax.set_ylabel(result.query.by[1])
            for row, name in enumerate(names):
                for col, cell in enumerate(series[name]):
                    if cell is not None and cell.value is not None:
                        ax.text(col, row, f"{cell.value:.3g}\nn={cell.n}", ha="center",
                                va="center", fontsize=8, color="white")  # fmt: skip
            ax.set_xticks(range(len(xs)), xs)
        elif chart == "scatter":
            numbers = _numbers(xs)
            for name, cells in series.items():
                points = [(x, c) for x, c in enumerate(cells) if c and c.value is not None]
                at = [numbers[x] if numbers else x for x, _ in points]
                low, high = _errors([c for _, c in points])
                ax.errorbar(at, [c.value for _, c in points], yerr=[low, high], label=name or None,
                            fmt="o", linestyle="none", capsize=3)  # fmt: skip
            if not numbers:
                ax.set_xticks(range(len(xs)), xs)
            ax.set_ylabel(measure)
            if len(result.query.by) > 1 and nothing_drawn(result) is None:
                ax.legend(title=result.query.by[1])  # one value of the second key too
        else:
            width = 0.8 / max(len(series), 1)
            for i, (name, cells) in enumerate(series.items()):
                points = [(x, c) for x, c in enumerate(cells) if c and c.value is not None]
                at = [x + (i - (len(series) - 1) / 2) * width if chart == "bar" else x
                      for x, _ in points]  # fmt: skip
                ys = [c.value for _, c in points]
                low, high = _errors([c for _, c in points])
                label = name or None
                if chart == "bar":
                    ax.bar(at, ys, width=width, label=label, yerr=[low, high], capsize=3)
                else:
                    ax.errorbar(at, ys, yerr=[low, high], label=label, marker="o", capsize=3)
            ax.set_xticks(range(len(xs)), xs)
            ax.set_ylabel(measure)
            if len(result.query.by) > 1 and nothing_drawn(result) is None:
                ax.legend(title=result.query.by[1])  # one value of the second key too
        ax.set_xlabel(result.query.by[0] if result.query.by else "")
        empty = nothing_drawn(result)
        if empty is not None:  # a frame with no mark says why, not a bare scale of 0 to 1
            ax.set_xticks([])
            ax.set_yticks([])
            ax.text(0.5, 0.5, empty, transform=ax.transAxes, ha="center", va="center")
        note = "" if chart == "heatmap" else "; error bars: 95% interval"
        ax.set_title(f"{measure} by {', '.join(result.query.by) or 'all'}\n"
                     f"{runs_read(result)}{note}", fontsize=10)  # fmt: skip
        with warnings.catch_warnings():  # a frame too crowded to fit keeps matplotlib's layout
            warnings.simplefilter("ignore", UserWarning)  # (no library warning on stderr)
            fig.tight_layout()
        # No date in the file and fixed ids: the same result draws the same bytes.
        with matplotlib.rc_context({"svg.hashsalt": "glossogen"}):
            fig.savefig(path, format=ext, metadata={"Date": None} if ext == "svg" else None)
    except OSError as exc:
        raise PlotNotWritten(path, exc.strerror or str(exc)) from None
    finally:
        plt.close(fig)


__all__ = [
    "CHARTS",
    "FORMATS",
    "MAX_DRAWN_GROUPS",
    "PlotNotWritten",
    "check_chart",
    "check_drawable",
    "check_drawn_groups",
    "check_plot",
    "check_target",
    "name_too_long",
    "nothing_drawn",
    "write_plot",
]
