"""The run browser's pages, rendered on the server with Jinja2 (autoescaped).

- ``/``: the run list (every group; filters as the export reads them; paged, ``?per_page=``
  one of :data:`~glossogen.server._run_index.PAGE_SIZES` rows, default 50, another refused
  with one line, 422; newest first, grouped by day). ``?fragment=rows`` answers the table body
  alone (the live refresh).
- ``/runs/{run_id}`` (``<scenario>/<ts>``): one run (header, seats, then one round at a time,
  ``?round=N``: verdicts, trigger, case, messages per channel, tool calls, postmortem; the
  report's charts).
- ``/analysis``: the analysis page (the list's filters in its query string are the cohort;
  grain, keys, measures, row filters, a comparison, seed and resamples, chart; the tables with
  n, missing and intervals and the comparisons; CSV and chart
  downloads; dashboards opened and saved under the runs dir), driving the analysis REST routes.
- ``/favicon.ico``; a page that cannot be served (a missing run) answers a page, not JSON.
- ``/scenarios`` and ``/scenarios/{name}``: installed scenarios, seats, channels, presets and
  the knobs' JSON Schema as a table.

Every text an agent wrote reaches the page through Jinja's autoescape, never ``|safe``; no
markup is built in Python (the charts are the evaluation report's PNGs, as ``data:`` URLs).
Assets (CSS and four small plain scripts: no framework, nothing fetched from a network) are
served from the package's ``static`` folder at ``/static``.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from importlib import resources
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from glossogen.eventlog import STATUSES, RunView
from glossogen.export import (
    FilterSelection,
    RunRecord,
    RunsDirError,
    SelectionError,
    not_begun_line,
    select_runs,
    served_line,
)
from glossogen.refusals import shown as shown_value
from glossogen.server._live_routes import RUN_ID, load_scenario_events, run_folder
from glossogen.server._run_header import NOT_RECORDED, usd
from glossogen.server._run_index import (
    DEFAULT_GROUP,
    PAGE_SIZE,
    PAGE_SIZES,
    RunCache,
    RunFilters,
    list_runs,
)
from glossogen.server._run_page import build_run_page, within_runs_dir
from glossogen.storage import RunFolder, StorageError

router = APIRouter(tags=["pages"], include_in_schema=False)

_env = Environment(
    loader=PackageLoader("glossogen.server", "templates"),
    autoescape=select_autoescape(["html"], default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"


def _clock(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if moment.tzinfo is None:  # a log's stamps are UTC; an old one may not say so
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _score(value: float | None) -> str:
    """A metric's score as the list shows it: three significant digits, whole above 1000."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


_env.filters["usd"] = usd
_env.filters["score"] = _score
_env.filters["seconds"] = _seconds
_env.filters["clock"] = _clock
_env.filters["tojson_attr"] = lambda v: json.dumps(v, ensure_ascii=False)


def _render(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(**context), status_code=status_code)


def _cache(request: Request) -> RunCache:
    cache: RunCache = request.app.state.run_cache
    return cache


COMMAND_WORDS = {"knob": "--knob", "status": "--status"}
"""The list's refusable filters as ``glossogen export``'s flags: a refused filter is said in
the line the export of the same filters prints (the list's filters are the export's)."""


LIST_FLAGS = {"scenario": "--scenario", "label": "--label", "knob": "--knob",
              "status": "--status", "run_id": "--run-id-contains"}  # fmt: skip
"""The list's filters as ``glossogen export``'s flags, for a value refused as not UTF-8."""


def _not_utf8(request: Request) -> str | None:
    r"""The line refusing a filter of the page's address holding a byte that is not UTF-8.

    The parsed address reads such a byte as U+FFFD, a value no run has: refused instead, as
    the export refuses the flag (``glossogen: error: --label '\udcff': not UTF-8 text``).
    """
    from glossogen.server._request_text import not_utf8_parameter

    odd = not_utf8_parameter(request)
    if odd is None:
        return None
    name, value = odd
    return f"glossogen: error: {LIST_FLAGS.get(name, name)} {shown_value(value)}: not UTF-8 text"


def _filters(request: Request) -> RunFilters:
    q = request.query_params
    return RunFilters(
        scenario=q.get("scenario", "").strip(),
        labels=tuple(v.strip() for v in q.getlist("label") if v.strip()),
        run_id_contains=q.get("run_id", "").strip(),
        status=q.get("status", "").strip(),
        knob=tuple(v.strip() for v in q.getlist("knob") if v.strip()),
        group=q.get("group", "").strip(),
    )


FAVICON = "favicon.svg"
"""The icon every page names (``/favicon.ico``, served as SVG from the static folder)."""


@router.get("/favicon.ico")
def favicon() -> Response:
    """The browser's tab icon (an SVG: every browser the pages target draws it)."""
    data = resources.files("glossogen.server").joinpath("static", FAVICON).read_bytes()
    return Response(data, media_type="image/svg+xml", headers={"cache-control": "max-age=86400"})


BODY_NOT_JSON = "the body is not UTF-8 JSON"
"""REST's 422 message (field ``body``) for a body that is not JSON, or not UTF-8."""

_UNPARSED = "There was an error parsing the body"
"""FastAPI's 400 for a body it cannot decode at all (not UTF-8)."""


def error_pages(app: FastAPI) -> None:
    """Answer a page that cannot be served (a missing run or scenario) with a page, not JSON.

    Under ``/api/``, ``/mcp`` and ``/static`` the answer stays FastAPI's JSON, but for a body
    that is not UTF-8 under ``/api/``: 422 ``{"detail": {"field": "body", "message"}}``, as a
    body that is not JSON.
    """
    from fastapi.exception_handlers import http_exception_handler
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> Response:
        if request.url.path.startswith("/api/") and exc.detail == _UNPARSED:
            # A body that is not UTF-8: refused as a body that is not JSON is (one line, 422).
            return JSONResponse(status_code=422, content={"detail": {
                "field": "body", "message": BODY_NOT_JSON}})  # fmt: skip
        if request.url.path.startswith(("/api/", "/mcp", "/static/")):
            return await http_exception_handler(request, exc)
        detail = exc.detail
        message = detail.get("message") if isinstance(detail, dict) else detail
        title = "Not found" if exc.status_code == 404 else f"Error {exc.status_code}"
        return _render(
            "missing.html",
            exc.status_code,
            title=title,
            message=str(message or title),
            code=exc.status_code,
        )


@router.get("/", response_class=HTMLResponse)
def runs(request: Request) -> HTMLResponse:
    """The run list; a bad knob condition is shown as the CLI's one-line error (422)."""
    from glossogen.scenario import scenario_names

    filters = _filters(request)
    refused = _not_utf8(request)
    try:
        page_number = int(request.query_params.get("page", "1"))
    except ValueError:
        page_number = 1
    settings = request.app.state.settings
    error, page, code = None, None, 200
    raw_size = request.query_params.get("per_page", str(PAGE_SIZE)).strip()
    per_page = int(raw_size) if raw_size.isdigit() else None
    try:
        if refused is not None:
            error, code = refused, 422
        elif per_page is None or per_page not in PAGE_SIZES:
            sizes = ", ".join(map(str, PAGE_SIZES))
            error, code = f"glossogen: error: per_page {raw_size!r} is not one of {sizes}", 422
        else:
            page = list_runs(settings.runs_dir, filters, _cache(request), page_number, per_page)
    except SelectionError as exc:  # never the server's runs directory by its path
        error, code = f"glossogen: error: {served_line(exc, settings.runs_dir, COMMAND_WORDS)}", 422
    except (RunsDirError, StorageError) as exc:
        error, code = f"glossogen: error: {served_line(exc, settings.runs_dir)}", 503
    template = "_rows.html" if request.query_params.get("fragment") == "rows" else "runs.html"
    return _render(
        template,
        code,
        page=page,
        filters=filters,
        error=error,
        scenarios=scenario_names(),
        statuses=STATUSES,
        page_sizes=PAGE_SIZES,
        per_page=per_page if per_page in PAGE_SIZES else PAGE_SIZE,
        export_group=filters.group or DEFAULT_GROUP,
        selection=filters.as_json(),
        query=urlencode(
            [(k, v) for k, v in request.query_params.multi_items() if k not in ("fragment",)]
        ),
        base_query=urlencode(
            [(k, v) for k, v in request.query_params.multi_items() if k not in ("fragment", "page")]
        ),
    )


@router.get("/analysis", response_class=HTMLResponse)
def analysis(request: Request) -> HTMLResponse:
    """The analysis page: the list's filters (its query string) as the cohort.

    The page only translates: its form becomes the engine's ``Query`` (posted to the analysis
    REST route), the ``Result`` becomes the table, and the chart and CSV are the ``/render``
    route's (the ``--plot`` drawing and ``--csv`` rows), so no number is computed in the page.
    """
    from glossogen.analysis import AGGREGATES, GRAINS, Query
    from glossogen.analysis._plot import CHARTS
    from glossogen.analysis._terms import OPERATORS

    filters = _filters(request)
    refused = _not_utf8(request)
    if refused is not None:
        return _render("analysis.html", 422, error=refused)
    fields_query = [("scenario", filters.scenario)] if filters.scenario else []
    fields_query += [("label", v) for v in filters.labels] + [("knob", v) for v in filters.knob]
    if filters.status:
        fields_query.append(("status", filters.status))
    if filters.run_id_contains:
        fields_query.append(("run_id_contains", filters.run_id_contains))
    list_query = [(k, v) for k, v in request.query_params.multi_items() if k in
                  ("scenario", "label", "knob", "status", "run_id", "group")]  # fmt: skip
    shown = [f"{k}={v}" for k, v in list_query]
    return _render(
        "analysis.html",
        selection=filters.as_json(),
        group=filters.group or DEFAULT_GROUP,
        cohort=", ".join(shown) or "every run",
        list_query=urlencode(list_query),
        fields_query=urlencode(fields_query),
        grains=GRAINS,
        aggregates=AGGREGATES,
        charts=[*CHARTS, "table"],
        operators=sorted(OPERATORS, key=len),  # = > < != >= <=
        seed=Query.model_fields["seed"].default,
        resamples=Query.model_fields["resamples"].default,
    )


@router.get(f"/runs/{RUN_ID}", response_class=HTMLResponse)
def run(request: Request, folder: Annotated[RunFolder, Depends(run_folder)]) -> HTMLResponse:
    """One run's page; an id naming no run: a 404 page, the resolver's line (``run_folder``)."""
    settings = request.app.state.settings
    load_scenario_events(folder.scenario)
    try:
        view = RunView.load(folder.log_url, live=folder.is_locked())
    except (FileNotFoundError, StorageError) as exc:
        said = within_runs_dir(folder, str(exc))
        raise HTTPException(404, {"message": f"no run {folder.run_id}: {said}"}) from exc
    if not view.is_run_log:  # begun by no event yet (queued: as with no log), or no run's log
        if folder.unbegun():
            raise HTTPException(404, {"field": "run_id", "message": not_begun_line(folder.run_id)})
        why = "no simulation_started event" if folder.has_log() else "empty"
        said = within_runs_dir(folder, folder.not_a_run_log(why))
        raise HTTPException(404, {"message": said})
    group = (view.started.group_slug if view.started else None) or DEFAULT_GROUP
    page = build_run_page(folder, view, group)
    try:  # runs derived from this one: every record's lineage, through the list's cache
        derived = [
            r.run_id
            for r in _all_records(settings.runs_dir, request)
            if (r.lineage or {}).get("source_run_id") == folder.run_id
        ]
    except (SelectionError, RunsDirError, StorageError):
        derived = []
    page.derived_runs = derived
    picked = request.query_params.get("round", "")
    if picked.isdigit() and any(r.round_number == int(picked) for r in page.rounds):
        page.selected_round = int(picked)
    return _render("run.html", page=page, not_recorded=NOT_RECORDED)


def _all_records(runs_dir: str, request: Request) -> list[RunRecord]:
    selected = select_runs(
        runs_dir, FilterSelection(), max_runs=sys.maxsize, load=_cache(request).load
    )
    return selected.records


@router.get("/scenarios", response_class=HTMLResponse)
def scenarios(request: Request) -> HTMLResponse:
    """Every installed scenario with its description and presets."""
    from glossogen.launch import list_scenarios

    return _render("scenarios.html", scenarios=list_scenarios().scenarios)


def knob_rows(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The knobs' JSON Schema as table rows: name, type, default, bounds, description.

    Nested objects (``$ref`` into ``$defs``) are listed with dotted names.
    """
    defs = schema.get("$defs", {})
    rows: list[dict[str, Any]] = []

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref") or next(
            (o.get("$ref") for o in node.get("anyOf", []) if "$ref" in o), None
        )
        if ref:
            return {**defs.get(ref.rsplit("/", 1)[-1], {}), **node}
        return node

    def kind(node: dict[str, Any]) -> str:
        if "type" in node:
            return str(node["type"])
        if "anyOf" in node:
            return " | ".join(str(o.get("type", "object")) for o in node["anyOf"])
        if "enum" in node:
            return "one of " + ", ".join(map(str, node["enum"]))
        return "object" if "$ref" in node else ""

    def walk(props: dict[str, Any], prefix: str) -> None:
        for name, raw in props.items():
            node = resolve(raw)
            bounds = [
                f"{label} {node[key]}"
                for key, label in (
                    ("minimum", ">="),
                    ("exclusiveMinimum", ">"),
                    ("maximum", "<="),
                    ("exclusiveMaximum", "<"),
                    ("minLength", "length >="),
                    ("maxLength", "length <="),
                )
                if key in node
            ]
            if "enum" in node:
                bounds.append("one of " + ", ".join(map(str, node["enum"])))
            rows.append(
                {
                    "name": prefix + name,
                    "type": kind(raw),
                    "default": json.dumps(node["default"]) if "default" in node else "",
                    "bounds": "; ".join(bounds),
                    "description": node.get("description", ""),
                }
            )
            if "properties" in node and node.get("type", "object") == "object":
                walk(node["properties"], f"{prefix}{name}.")

    walk(schema.get("properties", {}), "")
    return rows


@router.get("/scenarios/{name}", response_class=HTMLResponse)
def scenario(name: str, request: Request) -> HTMLResponse:
    """One scenario: seats, channels, every preset's values, the knobs' schema as a table."""
    from glossogen.knobs import ConfigError
    from glossogen.launch import describe_scenario, knobs_preset, knobs_schema
    from glossogen.scenario import scenario_names

    if name not in scenario_names():
        raise HTTPException(404, {"message": f"no scenario {name!r}"})
    try:
        info = describe_scenario(name, request.app.state.settings.runs_dir)
        schema = knobs_schema(name).json_schema
        presets = {
            p: json.dumps(knobs_preset(name, p).knobs, indent=2, sort_keys=True)
            for p in info.presets
        }
    except ConfigError as exc:
        raise HTTPException(404, {"message": str(exc).splitlines()[0]}) from exc
    return _render("scenario.html", info=info, presets=presets, knobs=knob_rows(schema))
