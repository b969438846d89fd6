"""Dashboards as files: named queries and the charts drawn from them, never their numbers.

A dashboard is a YAML or JSON file::

    title: Budget study
    queries:
      success:                      # a Query, as REST's POST .../analysis/query body
        grain: round
        by: [round_budget_chars]
        measures: [{field: round_success, agg: rate}]
    charts:
      - {name: success_by_budget, query: success, chart: bar}

It is read into a typed :class:`Dashboard` (each query a :class:`~glossogen.analysis.Query`,
each chart naming one of them); a file that does not validate is refused with one line
naming the bad key (``charts.0.query 'nope': no such query (success)``). :func:`render_report`
answers every query (the engine's :func:`~glossogen.analysis.answer`) and only then writes a
static report into a folder: ``index.html`` (each chart as its SVG, the table of each chart
with n, missing and the interval, the queries, the run list), per chart ``<name>.svg`` (the
same matplotlib drawing as ``glossogen analyze --plot``) and ``<name>.csv`` (as ``analyze
--csv``), ``dashboard.json`` (the queries as read), ``results.json`` (every query's typed
result) and ``runs.csv`` (every run any query read, with the sha256 of its log and report as
stored), so a figure can be regenerated and cited.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from glossogen.analysis._query import Query
from glossogen.analysis._result import Result
from glossogen.refusals import not_utf8, shown, shown_path, unknown_key_line, validator_line

ChartKind = Literal["bar", "line", "scatter", "heatmap", "table"]
"""How a chart shows its query's result: one of the plot's charts, or ``table`` (no figure)."""

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A chart's or query's name: it names the chart's files, so no path separator."""

DASHBOARDS_FOLDER = ".glossogen/dashboards"
"""Where the run browser keeps dashboards, under the runs directory."""


class DashboardError(ValueError):
    """A dashboard file that cannot be read or rendered; one line naming the bad key."""


class DashboardUnreadable(DashboardError):
    """A dashboard file that cannot be read at all (missing, refused).

    One that is read but is not UTF-8 text is a :class:`DashboardError`, as one that does not
    parse.
    """


class DashboardsInTheWay(Exception):  # noqa: N818 - a refusal, as DashboardError
    """The kept dashboards' folder, or a dashboard's file, is something else (one line).

    A file where the folder ``.glossogen/dashboards`` (or ``.glossogen``) goes, or a folder
    where a dashboard's file goes; named within the runs dir (no server path shown).
    """


_IN_THE_WAY = f"dashboards cannot be kept: a file stands where the folder {DASHBOARDS_FOLDER} goes"


class QuerySelectionRefused(Exception):  # noqa: N818 - a refusal, as DashboardError
    """A dashboard query whose selection is refused (a ``SelectionError``).

    It keeps which query and the refusal, so a surface names the query's fields
    (``queries.NAME.selection.scenario``), not its own flags.
    """

    def __init__(self, query: str, cause: Exception) -> None:
        """Keep the query's name and the selection's refusal."""
        super().__init__(str(cause))
        self.query = query
        self.cause = cause


class ReportNotWritten(Exception):  # noqa: N818 - a refusal, as DashboardError
    """A report folder the system refused to write after every query was answered (one line)."""


REPORT_FILES = ("dashboard.json", "results.json", "runs.csv", "index.html")
"""The files every report holds beside each chart's ``<name>.csv``, ``.svg`` and
``.comparisons.csv``."""


class Chart(BaseModel):
    """One chart: a name (its files' name), the query it draws, and how it draws it."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(pattern=NAME.pattern)]
    query: Annotated[str, Field(min_length=1)]
    chart: ChartKind = "bar"
    title: str = ""


class Dashboard(BaseModel):
    """Named queries and the charts drawn from them (no numbers: those are answered anew)."""

    model_config = ConfigDict(extra="forbid")
    title: str = "Dashboard"
    description: str = ""
    queries: Annotated[dict[str, Query], Field(min_length=1)]
    charts: Annotated[list[Chart], Field(min_length=1)]

    @model_validator(mode="before")
    @classmethod
    def _text(cls, data: Any) -> Any:
        r"""Refuse a string that is not UTF-8 text (a JSON or YAML ``"\udcff"`` escape).

        Saved, such a dashboard could be neither opened nor drawn (no answer holds it).
        """
        odd = not_utf8(data)
        if odd is not None:
            place, text = odd
            raise ValueError(f"{'.'.join(place) or 'a key'} {shown(text)}: not UTF-8 text")
        return data

    @model_validator(mode="after")
    def _charts_name_queries(self) -> Dashboard:
        seen: set[str] = set()
        for i, chart in enumerate(self.charts):
            if chart.query not in self.queries:
                known = ", ".join(self.queries)
                raise ValueError(f"charts.{i}.query {shown(chart.query)}: no such query ({known})")
            if chart.name in seen:
                raise ValueError(f"charts.{i}.name {shown(chart.name)}: named twice")
            seen.add(chart.name)
            by = self.queries[chart.query].by
            if chart.chart == "heatmap" and len(by) != 2:
                keys = "1 key" if len(by) == 1 else f"{len(by)} keys"
                raise ValueError(f"charts.{i}.chart 'heatmap': query {shown(chart.query)} has "
                                 f"{keys}, a heatmap needs two")  # fmt: skip
        self._files_written_once()
        for name in self.queries:
            if not NAME.match(name):
                raise ValueError(
                    f"queries.{shown(name)}: a name is letters, digits, _ . - (64 at most)"
                )
        return self

    def _files_written_once(self) -> None:
        """Refuse a chart whose file is a report file or another chart's (nothing overwritten).

        File names are compared case-insensitively: ``a.csv`` and ``A.csv`` are one file on a
        case-insensitive file system (macOS's, Windows'), where one chart would overwrite the
        other's.
        """
        owners: dict[str, tuple[str, str]] = {n.casefold(): ("", n) for n in REPORT_FILES}
        for i, chart in enumerate(self.charts):
            for name in chart_files(chart, self.queries[chart.query].compare is not None):
                owner, written = owners.setdefault(name.casefold(), (chart.name, name))
                if owner == chart.name:
                    continue
                whose = (
                    f"written by chart {shown(owner)}" if owner else "one of the report's own files"
                )
                cased = "" if written == name else f" (as {written}, case aside)"
                raise ValueError(f"charts.{i}.name {shown(chart.name)}: its file {name} is also "
                                 f"{whose}{cased}; rename the chart")  # fmt: skip


def chart_files(chart: Chart, compared: bool) -> list[str]:
    """The files a report writes for ``chart``: its CSV, its SVG (not a table), its comparisons."""
    names = [f"{chart.name}.csv"]
    if chart.chart != "table":
        names.append(f"{chart.name}.svg")
    if compared:
        names.append(f"{chart.name}.comparisons.csv")
    return names


def one_line(exc: ValidationError) -> str:
    """The first problem of ``exc`` as one line: ``<dotted key>: <message>``."""
    from glossogen.analysis._terms import QueryError

    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    ours = first.get("ctx", {}).get("error")
    if isinstance(ours, QueryError) and first["loc"][-1:] == (ours.field,):
        return f"{where} {ours.detail}"  # its key, then its value: queries.q.grain 'week' ...
    message = validator_line(first)
    given = first.get("input")
    if first["type"] == "extra_forbidden":  # the value echoed, as REST and MCP say it
        return unknown_key_line(where, given)
    # A value error of ours names the value itself; a bare value given is shown after its key.
    if where and first["type"] != "value_error" and isinstance(given, (str, int, float, bool)):
        where = f"{where} {shown(given) if isinstance(given, str) else repr(given)}"
    return f"{where}: {message}" if where else message


def parse_dashboard(text: str, where: str, json_only: bool = False) -> Dashboard:
    """Read a dashboard from YAML (JSON is YAML too) or, with ``json_only``, JSON.

    Raises:
        DashboardError: ``<where>: <problem>``, one line: not YAML/JSON, not a mapping, or the
            first key that does not validate.
    """
    from glossogen.strict_yaml import YamlError, load_yaml

    try:
        data = json.loads(text) if json_only else load_yaml(text)
    except (YamlError, json.JSONDecodeError) as exc:
        raise DashboardError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise DashboardError(f"{where}: a dashboard is a mapping (title, queries, charts)")
    try:
        return Dashboard.model_validate(data)
    except ValidationError as exc:
        raise DashboardError(f"{where}: {one_line(exc)}") from None


def load_dashboard(path: str) -> Dashboard:
    """Read the dashboard file at ``path`` (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        DashboardUnreadable: a missing or unreadable file.
        DashboardError: another extension, a file that is not UTF-8 text or does not parse, or
            one that does not validate (one line naming the bad key and the value given).
    """
    named = shown_path(path, quoted=False) if path else "''"  # an empty name, seen as one
    ext = Path(path).suffix.lower()
    if ext not in (".yaml", ".yml", ".json"):
        raise DashboardError(f"{named}: a dashboard is a .yaml, .yml or .json file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DashboardUnreadable(f"{named}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:  # read, but not text: refused as a file that does not parse
        raise DashboardError(f"{named}: not UTF-8 text") from None
    return parse_dashboard(text, named, json_only=ext == ".json")


def dump_dashboard(dashboard: Dashboard) -> str:
    """The dashboard as YAML, blank fields left out (what the page saves).

    Every other field is written, defaults too (a query's seed and resamples, a selection's
    ``kind``), so the file says exactly what is answered.
    """
    import yaml

    data = dashboard.model_dump(mode="json", exclude_none=True)
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


@dataclass
class RunHash:
    """One run a report read: its id and the sha256 of its log and report as stored."""

    run_id: str
    log_sha256: str
    report_sha256: str
    """Blank when the run has no report."""


def _sha256(folder: object, name: str) -> str:
    from glossogen.storage import RunFolder

    assert isinstance(folder, RunFolder)
    digest = hashlib.sha256()
    try:
        for block in folder.read_chunks(name, 1 << 20):
            digest.update(block)
    except FileNotFoundError:
        return ""
    return digest.hexdigest()


def run_hashes(runs_dir: str, run_ids: list[str]) -> list[RunHash]:
    """The sha256 of each run's log and report, as stored now (sorted by run id)."""
    from glossogen.storage import RunStore

    store = RunStore(runs_dir)
    out = []
    for run_id in sorted(set(run_ids)):
        folder = store.open_run(run_id)
        out.append(RunHash(run_id, _sha256(folder, f"{folder.scenario}.jsonl"),
                           _sha256(folder, f"{folder.scenario}_report.json")))  # fmt: skip
    return out


@dataclass
class Rendered:
    """What a rendered dashboard holds: each query's result and each run read."""

    dashboard: Dashboard
    results: dict[str, Result]
    runs: list[RunHash]


def answer_dashboard(runs_dir: str, dashboard: Dashboard, cache: bool = True) -> Rendered:
    """Answer every query of ``dashboard`` over ``runs_dir`` (nothing is written).

    Raises:
        QueryError: a query the selection's rows cannot answer (its field names the query),
            or one a chart draws with more groups than are drawn (``queries.NAME``).
        QuerySelectionRefused: a query's selection refused (``SelectionError``).
        RunsDirError, StorageError: from a query's selection.
    """
    from glossogen.analysis._engine import answer
    from glossogen.analysis._plot import check_drawn_groups
    from glossogen.analysis._terms import QueryError
    from glossogen.export import SelectionError

    results = {}
    for name, query in dashboard.queries.items():
        try:
            results[name] = answer(runs_dir, query, cache=cache)
        except QueryError as exc:
            raise QueryError(exc.detail, f"queries.{name}.{exc.field}") from None
        except SelectionError as exc:
            raise QuerySelectionRefused(name, exc) from None
    for chart in dashboard.charts:  # every chart drawable before any file is written
        if chart.chart != "table":
            check_drawn_groups(results[chart.query], f"queries.{chart.query}")
    run_ids = [r for result in results.values() for r in result.run_ids]
    return Rendered(dashboard, results, run_hashes(runs_dir, run_ids))


def chart_bytes(result: Result, chart: str, fmt: str = "svg") -> bytes:
    """``result``'s first measure drawn as ``chart`` (the plot's matplotlib figure)."""
    import tempfile

    from glossogen.analysis._plot import write_plot

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"chart.{fmt}")
        write_plot(result, path, chart)
        return Path(path).read_bytes()


def _report_names(out: str) -> set[str] | None:
    """The files the report in ``out`` may hold (from its ``dashboard.json``); None if none."""
    try:
        board = Dashboard.model_validate_json(Path(out, "dashboard.json").read_bytes())
    except (OSError, ValueError):
        return None
    names = set(REPORT_FILES)
    for chart in board.charts:
        names |= {f"{chart.name}.csv", f"{chart.name}.svg", f"{chart.name}.comparisons.csv"}
    return names


def check_out(out: str) -> None:
    """Refuse an ``out`` the report cannot replace whole.

    ``out`` may be missing (its parent must exist), an empty folder, or the folder of an earlier
    report (``index.html`` and a ``dashboard.json`` beside only the files that report wrote):
    :func:`write_report` replaces it whole. Anything else is refused, so no file of another
    report or of the user's is left beside the new one, or lost.

    Raises:
        DashboardError: ``<out>: <why>``, one line.
    """
    from glossogen.analysis._plot import name_too_long

    if not out:
        raise DashboardError("'': names no folder")
    named = shown_path(out, quoted=False)
    if os.path.exists(out) and not os.path.isdir(out):
        raise DashboardError(f"{named}: a file, not a folder")
    parent = os.path.dirname(os.path.abspath(out))
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise DashboardError(f"{named}: its folder {shown_path(parent, quoted=False)} is a file")
    if not os.path.isdir(parent):
        raise DashboardError(
            f"{named}: its folder {shown_path(parent, quoted=False)} does not exist"
        )
    if name_too_long(out):
        raise DashboardError(f"{named}: the folder name is too long")
    if not os.path.isdir(out):
        return
    entries = sorted(os.listdir(out))
    if not entries:
        return
    names = _report_names(out)
    if names is None or "index.html" not in entries:
        raise DashboardError(f"{named}: a folder that holds files and no earlier report "
                             f"({len(entries)}, such as {shown_path(entries[0])}); name a new or "
                             "empty folder")  # fmt: skip
    foreign = [e for e in entries if e not in names or not os.path.isfile(os.path.join(out, e))]
    if foreign:
        raise DashboardError(f"{named}: an earlier report, and {shown_path(foreign[0])}, which it "
                             "did not write; name a new or empty folder")  # fmt: skip


def write_report(rendered: Rendered, out: str, source: str = "") -> list[str]:
    """Write the static report of ``rendered`` as the folder ``out``, replacing it whole.

    The report is written into a new folder beside ``out`` and moved in place of it only when
    complete, so ``out`` holds exactly this report (an earlier report's files, say a chart no
    longer in the dashboard, are gone), or, on a failure, what it held before.

    Returns:
        The files written, relative to ``out``, in order.

    Raises:
        DashboardError: an ``out`` that :func:`check_out` refuses.
        ReportNotWritten: the system refused a write (nothing is left beside ``out``).
    """
    import shutil
    import tempfile

    from glossogen.storage._fs import _umask

    check_out(out)
    parent = os.path.dirname(os.path.abspath(out))
    try:
        fresh = tempfile.mkdtemp(dir=parent, prefix=".report.")
    except OSError as exc:
        raise ReportNotWritten(
            f"{shown_path(out, quoted=False)}: cannot be written: {exc.strerror or exc}"
        ) from None
    try:
        os.chmod(fresh, 0o777 & ~_umask())  # mkdtemp makes it 0700; give it a new folder's mode
        written = _write_files(rendered, fresh, source)
        if os.path.isdir(out):
            aside = f"{fresh}.old"
            os.rename(out, aside)
            os.rename(fresh, out)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(fresh, out)
    except OSError as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        raise ReportNotWritten(
            f"{shown_path(out, quoted=False)}: cannot be written: {exc.strerror or exc}"
        ) from None
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    return written


def _write_files(rendered: Rendered, out: str, source: str) -> list[str]:
    """Write the report's files into the existing folder ``out``; return their names."""
    from importlib.metadata import version

    from jinja2 import Environment, PackageLoader, select_autoescape

    from glossogen.analysis._render import (
        comparison_frame,
        csv_text,
        number,
        result_frame,
        runs_read,
    )

    written: list[str] = []

    def put(name: str, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        Path(out, name).write_bytes(raw)
        written.append(name)

    dashboard = rendered.dashboard
    sections = []
    for chart in dashboard.charts:
        result = rendered.results[chart.query]
        frame = result_frame(result)
        put(f"{chart.name}.csv", csv_text(result_frame(result, whole_counts=True)))
        svg = None
        if chart.chart != "table":
            put(f"{chart.name}.svg", chart_bytes(result, chart.chart))
            svg = f"{chart.name}.svg"
        comparisons = comparison_frame(result) if result.comparisons else None
        if comparisons is not None:
            put(f"{chart.name}.comparisons.csv", csv_text(comparisons))
        sections.append({
            "chart": chart, "svg": svg, "result": result, "runs_read": runs_read(result),
            "columns": frame.columns,
            "rows": [[number(v) for v in row] for row in frame.iter_rows()],
            "numeric": _numeric_columns(frame),
            "comparison_numeric": _numeric_columns(comparisons),
            "comparison_columns": comparisons.columns if comparisons is not None else [],
            "comparison_rows": [[number(v) for v in row] for row in comparisons.iter_rows()]
            if comparisons is not None else [],
            "query": json.dumps(dashboard.queries[chart.query].model_dump(mode="json"), indent=2),
        })  # fmt: skip
    put("dashboard.json", dashboard.model_dump_json(indent=2))
    results = {name: r.model_dump(mode="json") for name, r in rendered.results.items()}
    put("results.json", json.dumps(results, indent=2))
    lines = ["run_id,log_sha256,report_sha256"]
    lines += [f"{r.run_id},{r.log_sha256},{r.report_sha256}" for r in rendered.runs]
    put("runs.csv", "\n".join(lines) + "\n")
    env = Environment(
        loader=PackageLoader("glossogen.analysis", "templates"),
        autoescape=select_autoescape(["html"], default=True),
    )
    # The dashboard's path as typed: a byte no UTF-8 decodes (a lone surrogate) is shown
    # escaped (\udcff), as every answer shows one, not refused after every query was answered.
    shown_source = source.encode("utf-8", "backslashreplace").decode("utf-8")
    html = env.get_template("report.html").render(
        dashboard=dashboard, sections=sections, runs=rendered.runs, source=shown_source,
        version=version("glossogen"),
    )  # fmt: skip
    put("index.html", html)
    return written


def _numeric_columns(frame: object) -> set[int]:
    """The places of ``frame``'s number columns (their cells are never broken across lines)."""
    import polars as pl

    if not isinstance(frame, pl.DataFrame):
        return set()
    return {i for i, dtype in enumerate(frame.schema.values()) if dtype.is_numeric()}


def dashboards_folder(runs_dir: str) -> str:
    """The folder (a path, or an fsspec URL) of the run browser's dashboards under ``runs_dir``."""
    from glossogen.storage import RunStore
    from glossogen.storage._fs import join

    return join(RunStore(runs_dir).runs_dir, DASHBOARDS_FOLDER)


def _check_name(name: str) -> None:
    if not NAME.match(name):
        raise DashboardError(
            f"{shown(name)}: a dashboard's name is letters, digits, _ . - (64 at most)"
        )
    stem, dot, ext = name.rpartition(".")
    if dot and ext.lower() in ("yaml", "yml", "json"):  # x.yaml would be kept as x.yaml.yaml
        raise DashboardError(
            f"{shown(name)}: a dashboard's name takes no extension; name it {shown(stem)} "
            f"(kept as {stem}.yaml)"
        )


def saved_dashboards(runs_dir: str) -> list[str]:
    """The names of the dashboards kept under ``runs_dir`` (their files' stems, sorted).

    Raises:
        DashboardsInTheWay: a file where the dashboards' folder goes (as an open, a save).
        StorageError: unreachable storage.
    """
    from glossogen.storage._fs import open_fs, translate_errors

    folder = dashboards_folder(runs_dir)
    fs, path = open_fs(folder)
    with translate_errors(folder, fs):
        try:
            fs.invalidate_cache(path)
            listed = fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        except NotADirectoryError:  # .glossogen a file: as an open or a save refuse it
            raise DashboardsInTheWay(_IN_THE_WAY) from None
    if [str(p["name"]).rstrip("/") for p in listed] == [path.rstrip("/")]:
        if listed[0].get("type") == "file":  # ls of a file lists the file itself
            raise DashboardsInTheWay(_IN_THE_WAY)
    names = [posixpath.basename(str(p["name"]).rstrip("/"))
             for p in listed if p.get("type") == "file"]  # fmt: skip
    stems = {n.rsplit(".", 1)[0] for n in names if n.endswith((".yaml", ".yml", ".json"))}
    return sorted(s for s in stems if NAME.match(s))


def open_saved(runs_dir: str, name: str) -> Dashboard:
    """The dashboard ``name`` kept under ``runs_dir``.

    A refusal names its file within the runs dir (``.glossogen/dashboards/<name>.yaml``),
    never the runs dir's own path (a server's client did not give it).

    Raises:
        DashboardError: a bad name, or a file that does not validate.
        DashboardsInTheWay: a file where the dashboards' folder goes, or a folder where its
            file goes.
        FileNotFoundError: no dashboard of that name.
        StorageError: unreachable storage.
    """
    from glossogen.storage._fs import join, open_fs, translate_errors

    _check_name(name)
    folder = dashboards_folder(runs_dir)
    fs, _ = open_fs(folder)
    for ext in (".yaml", ".yml", ".json"):
        url = join(folder, f"{name}{ext}")
        where = f"{DASHBOARDS_FOLDER}/{name}{ext}"  # within the runs dir: no server path shown
        with translate_errors(url, fs):
            try:
                raw = fs.cat_file(open_fs(url)[1])
            except FileNotFoundError:
                continue
            except IsADirectoryError:  # as a save refuses it
                raise DashboardsInTheWay(
                    f"dashboard {shown(name)}: {where} is a folder, not a file"
                ) from None
            except NotADirectoryError:
                raise DashboardsInTheWay(_IN_THE_WAY) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DashboardError(f"{where}: not UTF-8 text") from None
        return parse_dashboard(text, where, json_only=ext == ".json")
    raise FileNotFoundError(f"no dashboard {shown(name)} in {DASHBOARDS_FOLDER}")


def save_dashboard(runs_dir: str, name: str, dashboard: Dashboard) -> str:
    """Write ``dashboard`` as ``<runs_dir>/.glossogen/dashboards/<name>.yaml``; return where.

    Where is its path within the runs dir (``.glossogen/dashboards/<name>.yaml``): a server
    never shows its client the runs dir's own path.

    The runs dir may be local or an fsspec URL (``s3://``). The file is written whole (aside,
    then moved; one put on object storage); a ``.yml`` or ``.json`` file of the same name is
    removed after it.

    Raises:
        DashboardError: a bad name.
        DashboardsInTheWay: a file where the folder goes, or a folder where the file goes.
        StorageError: unreachable storage, or a write it refuses.
    """
    from glossogen.storage._fs import join, open_fs, translate_errors, write_bytes_atomic

    _check_name(name)
    folder = dashboards_folder(runs_dir)
    try:
        write_bytes_atomic(join(folder, f"{name}.yaml"), dump_dashboard(dashboard).encode())
    except (NotADirectoryError, FileExistsError):  # FileExistsError: the folder is a file
        raise DashboardsInTheWay(_IN_THE_WAY) from None
    except IsADirectoryError:
        raise DashboardsInTheWay(
            f"dashboard {shown(name)}: {DASHBOARDS_FOLDER}/{name}.yaml is a folder, not a file"
        ) from None
    fs, _ = open_fs(folder)
    for ext in (".yml", ".json"):
        other = join(folder, f"{name}{ext}")
        with translate_errors(other, fs):
            try:
                fs.rm_file(open_fs(other)[1])
            except FileNotFoundError:
                pass
    return f"{DASHBOARDS_FOLDER}/{name}.yaml"


__all__ = [
    "DASHBOARDS_FOLDER",
    "Chart",
    "Dashboard",
    "DashboardError",
    "DashboardUnreadable",
    "DashboardsInTheWay",
    "REPORT_FILES",
    "ReportNotWritten",
    "RunHash",
    "QuerySelectionRefused",
    "answer_dashboard",
    "chart_bytes",
    "check_out",
    "dashboards_folder",
    "dump_dashboard",
    "open_saved",
    "save_dashboard",
    "saved_dashboards",
    "load_dashboard",
    "one_line",
    "parse_dashboard",
    "run_hashes",
    "write_report",
]
