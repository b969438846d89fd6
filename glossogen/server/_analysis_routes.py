"""The analysis endpoints under ``/api/g/{slug}/runs/analysis``: fields, query, render, dashboards.

``GET .../fields``, ``POST .../query``, ``POST .../render`` and the kept dashboards (``GET
.../dashboards``, ``GET``/``PUT .../dashboards/{name}``).

``/render`` takes a result ``/query`` answered (with a chart kind) and answers its CSV and its
chart as SVG (the ``--plot`` drawing), reading no run. The dashboards are files under the runs
dir (``.glossogen/dashboards/<name>.yaml``, :mod:`glossogen.analysis._dashboard`; local or on
object storage through fsspec), shared by every group; a body is the typed
:class:`~glossogen.analysis._dashboard.Dashboard`.

``/query`` takes the :class:`~glossogen.analysis.Query` itself as its JSON body and answers the
engine's :class:`~glossogen.analysis.Result` (every cell's value, n, missing, interval and its
method; the comparisons; the notes), the numbers ``glossogen analyze --json`` prints for the same
query. ``/fields`` takes the selection as query parameters (``scenario``, ``label``, ``knob``
repeatable; ``status``, ``run_id_contains``, ``contains_agent_id``; or ``run_id`` repeatable)
with ``grain`` and ``metric``, and answers the grain's fields with their coverage and values.

Each route only translates: the body (``/query``) or the parameters (``/fields``) are the
:class:`~glossogen.analysis.Query` the CLI and MCP build, answered by the same library entry
(:func:`~glossogen.analysis.answer`, :func:`~glossogen.analysis.fields`) with the route's group
(``{slug}``): as the export routes do, each sees only its group's runs, an explicit id of
another group's run is one that no longer resolves, and the ceiling (``max_runs``) applies to
what remains (:func:`~glossogen.analysis._select.select_named`). The runs are read through the
run list's cache of run records (``_run_index.RunCache``, the entry's ``load``: a run is read
again only when a file it was read from changed), so a query repeated on an unchanged cohort
does not re-read its logs' heads and tails to select them. Refusals, one line each, as every
REST refusal:
``{"detail": {"field", "message"}}`` with 422 for a query, filter, knob condition or name the
rows do not hold, ``{"detail": {"limit", "value", "message"}}`` with 413 over ``max_runs``, and
``{"detail": {"field": "run_ids", "message", "missing_run_ids"}}`` with 404 for explicit run ids
that no longer resolve in the group (as the export's routes refuse them),
``{"detail": {"message"}}`` with 503 for an unreadable runs directory, with 404 for a group no
run records (``{slug}`` other than ``local``), and with 409 for a file
where the dashboards' folder goes or a folder where a dashboard's file goes (the list names
only files).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi import Query as Param
from pydantic import BaseModel, ValidationError, model_validator

from glossogen.analysis import (
    Fields,
    Measure,
    NamedRunsRefused,
    Query,
    QueryError,
    Result,
    RunsMissing,
    answer,
    fields,
    query_error_of,
)
from glossogen.analysis._dashboard import (
    ChartKind,
    Dashboard,
    DashboardError,
    DashboardsInTheWay,
)
from glossogen.export import (
    RunRecord,
    RunsDirError,
    RunsUnreadable,
    SelectionError,
    check_runs_dir,
    select_runs,
    selection_of,
    served_line,
)
from glossogen.refusals import not_utf8, shown, validator_line
from glossogen.server._request_text import known_parameters
from glossogen.storage import RunStore, StorageError

router = APIRouter(prefix="/api/g/{slug}/runs/analysis", tags=["analysis"])

Many = Annotated[list[str] | None, Param()]
"""A repeatable query parameter (``?scenario=a&scenario=b``)."""


def _refuse(exc: Exception, runs_dir: str = "") -> NoReturn:
    """Raise the HTTP refusal of a library refusal (one line).

    The line never names the server's runs directory ``runs_dir`` by its path
    (:func:`~glossogen.export.served_line`): the client did not give it.
    """
    if isinstance(exc, ValidationError):  # a query's own check: as the engine's refusals
        exc = query_error_of(exc) or exc
    if isinstance(exc, NamedRunsRefused):  # as the export's routes refuse them
        raise HTTPException(404, _named_detail(exc)) from exc
    if isinstance(exc, SelectionError) and exc.field == "max_runs":
        raise HTTPException(413, {"limit": "max_runs", "message": exc.message}) from exc
    if isinstance(exc, QueryError):  # each value refused under ``errors`` when more than one
        detail: dict[str, Any] = _value_detail(exc)
        if exc.also:
            detail["errors"] = [_value_detail(e) for e in exc.every]
        raise HTTPException(422, detail) from exc
    if isinstance(exc, SelectionError):  # each value of the selection refused, as a query's
        detail = _value_detail(exc)
        if exc.also:
            detail["errors"] = [_value_detail(e) for e in exc.every]
        raise HTTPException(422, detail) from exc
    if isinstance(exc, RunsDirError):
        raise HTTPException(503, {"message": served_line(exc)}) from exc
    if isinstance(exc, ValidationError):  # every value refused, as the body handler lists them
        each = [{"field": ".".join(str(p) for p in error["loc"]) or "query",
                 "message": validator_line(error)} for error in exc.errors()]  # fmt: skip
        first: dict[str, Any] = dict(each[0])
        if len(each) > 1:
            first["errors"] = each
        raise HTTPException(422, first) from exc
    raise HTTPException(503, {"message": served_line(exc, runs_dir)}) from exc


def _named_detail(exc: NamedRunsRefused) -> dict[str, Any]:
    """The 404 of runs named by id that the selection refuses, as the export's routes answer.

    ``{"field": "run_ids", "message", "missing_run_ids"}`` for ids that no longer resolve (in
    the group), ``{"field": "run_ids", "message", "unreadable_runs"}`` for runs that cannot be
    read (named, so refused as a missing one is).
    """
    if isinstance(exc, RunsMissing):
        return {"field": "run_ids", "message": exc.message,
                "missing_run_ids": exc.missing_run_ids}  # fmt: skip
    unreadable = exc.unreadable_runs if isinstance(exc, RunsUnreadable) else {}
    return {"field": "run_ids", "message": exc.message, "unreadable_runs": unreadable}


def _value_detail(exc: Exception) -> dict[str, Any]:
    """One refused value of a query, ``{"field", "message"}``: a query's or a selection's."""
    if isinstance(exc, QueryError):
        return {"field": exc.field, "message": exc.message}
    return {"field": getattr(exc, "field", "selection"), "message": served_line(exc)}


def _analysis_load(request: Request) -> Callable[[RunStore, str], RunRecord]:
    """The run cache's reading of a run as the CLI and MCP read it: an empty log is no run log.

    The run list reads a claimed folder whose log is empty as ``queued``; the analysis skips it
    with a note on every surface (``select_runs``' own loader), so its answers agree.
    """
    return functools.partial(request.app.state.run_cache.load, queued=False)


def _check_group(request: Request, slug: str) -> None:
    """Refuse a group no run under the runs dir records (404); the default group always is.

    Raises:
        HTTPException: 404 naming the group.
    """
    from glossogen.export import FilterSelection
    from glossogen.refusals import shown
    from glossogen.server._run_index import DEFAULT_GROUP

    if slug == DEFAULT_GROUP:
        return
    every = select_runs(request.app.state.settings.runs_dir, FilterSelection(),
                        max_runs=sys.maxsize, load=_analysis_load(request))  # fmt: skip
    if not any(r.group == slug for r in every.records):
        raise HTTPException(404, {"message": f"no group {shown(slug)}: no run records it"})


@router.post("/query")
def query_runs(slug: str, query: Query, request: Request) -> Result:
    """Answer the query over the group's runs: the library's one entry (``analysis.answer``).

    Raises:
        HTTPException: 422 a sort, name, aggregate or filter the rows cannot answer, or a bad
            knob condition; 404 a group no run records, or explicit run ids that no longer
            resolve in the group; 413 over ``max_runs``; 503 unreadable storage.
    """
    runs_dir = request.app.state.settings.runs_dir
    try:
        _check_group(request, slug)
        return answer(runs_dir, query, cache=False, group=slug, load=_analysis_load(request))
    except (QueryError, SelectionError, RunsDirError, StorageError) as exc:
        _refuse(exc, runs_dir)


@router.get("/fields", dependencies=[Depends(known_parameters)])
def list_fields(
    slug: str,
    request: Request,
    grain: str = "run",
    metric: str | None = None,
    max_runs: int = 5000,
    scenario: Many = None,
    label: Many = None,
    knob: Many = None,
    run_id: Many = None,
    status: str | None = None,
    run_id_contains: str | None = None,
    contains_agent_id: str | None = None,
) -> Fields:
    """The fields of ``grain``'s rows over the group's selected runs.

    Raises:
        HTTPException: 422 a grain, metric or selection the query refuses; 413 over
            ``max_runs``; 503 unreadable storage.
    """
    try:
        selection = selection_of(run_id, scenario, label, run_id_contains, status,
                                      contains_agent_id, knob)  # fmt: skip
        query = Query.model_validate({
            "selection": selection, "grain": grain, "metric": metric, "max_runs": max_runs,
            "measures": [Measure(field="run_id", agg="count")],
        })  # fmt: skip
    except SelectionError as exc:
        if exc.refusal is None:
            _refuse(exc)
        names = {"labels": "label", "run_ids": "run_id"}  # as this route's parameters
        field = names.get(exc.refusal.field, exc.refusal.field)
        raise HTTPException(422, {"field": field, "message": exc.refusal.worded(names)}) from exc
    except ValidationError as exc:
        _refuse(exc)
    runs_dir = request.app.state.settings.runs_dir
    try:
        _check_group(request, slug)
        return fields(runs_dir, query.selection, query.grain, query.metric, query.max_runs,
                      cache=False, group=slug, load=_analysis_load(request))  # fmt: skip
    except (QueryError, SelectionError, RunsDirError, StorageError) as exc:
        _refuse(exc, runs_dir)


class RenderRequest(BaseModel):
    """A result to draw: the engine's :class:`~glossogen.analysis.Result` and a chart kind."""

    result: Result
    chart: ChartKind = "bar"

    @model_validator(mode="before")
    @classmethod
    def _text(cls, body: Any) -> Any:
        r"""Refuse a string that is not UTF-8 text (JSON's ``"\udcff"``): no answer holds it.

        Raises:
            QueryError: (field: its place, ``result.groups.0.keys.status``) naming it.
        """
        odd = not_utf8(body)
        if odd is not None:
            place, text = odd
            raise QueryError(f"{shown(text)}: not UTF-8 text", ".".join(place) or "body")
        return body


class RenderedResult(BaseModel):
    """A result as files: its CSV (``analyze --csv``'s rows), its comparisons' CSV, its chart."""

    csv: str
    comparisons_csv: str | None
    svg: str | None
    """The chart as SVG (the ``--plot`` drawing); None for a ``table``."""


@router.post("/render")
def render_result(slug: str, body: RenderRequest) -> RenderedResult:
    """Draw a result the query route answered: no run is read again.

    Raises:
        HTTPException: 422 a chart the result cannot take (a heatmap without two keys), or
            more than :data:`~glossogen.analysis._plot.MAX_DRAWN_GROUPS` groups to draw.
    """
    from glossogen.analysis._dashboard import chart_bytes
    from glossogen.analysis._plot import CHARTS, check_drawn_groups, check_plot
    from glossogen.analysis._render import comparison_frame, csv_text, result_frame

    result = body.result
    svg = None
    if body.chart in CHARTS:
        try:
            check_drawn_groups(result)
        except QueryError as exc:  # the count is the line: no field word before it
            raise HTTPException(422, {"field": exc.field, "message": exc.detail}) from None
        try:
            check_plot("chart.svg", body.chart, result.query)
        except QueryError as exc:
            _refuse(exc)
        svg = chart_bytes(result, body.chart).decode()
    comparisons = csv_text(comparison_frame(result)) if result.comparisons else None
    csv = csv_text(result_frame(result, whole_counts=True))
    return RenderedResult(csv=csv, comparisons_csv=comparisons, svg=svg)


class SavedDashboards(BaseModel):
    """The dashboards kept under the runs dir (``.glossogen/dashboards``)."""

    names: list[str]


class SavedDashboard(BaseModel):
    """Where a dashboard was saved: its name, and its file within the runs dir."""

    name: str
    path: str
    """``.glossogen/dashboards/<name>.yaml`` (never the server's runs dir's own path)."""


def _check_local_runs_dir(runs_dir: str) -> None:
    """Refuse a local runs dir that is gone or a file (503 as query and fields).

    Nothing is read from it or written under it (a save would make it anew). On object
    storage a runs dir is a prefix, none until a first object is kept: not checked.

    Raises:
        RunsDirError: the local runs dir does not exist or is a file.
    """
    if RunStore(runs_dir).local:
        check_runs_dir(runs_dir)


def _check_name_text(request: Request) -> None:
    r"""Refuse a dashboard's name holding a byte that is not UTF-8 (``.../dashboards/%FF``).

    The server reads such a byte as U+FFFD; the name as sent (its last path segment) is
    refused as every other text that is not UTF-8 is: ``'\udcff': not UTF-8 text``.

    Raises:
        HTTPException: 422 (field ``dashboard``) naming it.
    """
    from urllib.parse import unquote_to_bytes

    raw = unquote_to_bytes(bytes(request.scope.get("raw_path") or b"").rsplit(b"/", 1)[-1])
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        name = raw.decode("utf-8", "surrogateescape")
        line = f"{shown(name)}: not UTF-8 text"
        raise HTTPException(422, {"field": "dashboard", "message": line}) from None


def _dashboard_refusal(exc: DashboardError) -> NoReturn:
    raise HTTPException(422, {"field": "dashboard", "message": str(exc)}) from exc


@router.get("/dashboards")
def list_dashboards(slug: str, request: Request) -> SavedDashboards:
    """The names of the dashboards kept under the runs dir (local or ``s3://``; 503 unreachable)."""
    from glossogen.analysis._dashboard import saved_dashboards

    try:
        _check_local_runs_dir(request.app.state.settings.runs_dir)
        return SavedDashboards(names=saved_dashboards(request.app.state.settings.runs_dir))
    except DashboardsInTheWay as exc:
        raise HTTPException(409, {"message": str(exc)}) from exc
    except (RunsDirError, StorageError) as exc:
        _refuse(exc, request.app.state.settings.runs_dir)


@router.get("/dashboards/{name}", dependencies=[Depends(_check_name_text)])
def open_dashboard(slug: str, name: str, request: Request) -> Dashboard:
    """One kept dashboard, as its typed value (404 none of that name; 422 one that is not valid)."""
    from glossogen.analysis._dashboard import open_saved

    try:
        _check_local_runs_dir(request.app.state.settings.runs_dir)
        return open_saved(request.app.state.settings.runs_dir, name)
    except FileNotFoundError as exc:
        raise HTTPException(404, {"message": str(exc)}) from exc
    except DashboardError as exc:
        _dashboard_refusal(exc)
    except DashboardsInTheWay as exc:
        raise HTTPException(409, {"message": str(exc)}) from exc
    except (RunsDirError, StorageError) as exc:
        _refuse(exc, request.app.state.settings.runs_dir)


@router.put("/dashboards/{name}", dependencies=[Depends(_check_name_text)])
def save_dashboard(slug: str, name: str, body: Dashboard, request: Request) -> SavedDashboard:
    """Keep ``body`` as ``<runs dir>/.glossogen/dashboards/<name>.yaml`` (replacing it).

    The runs dir may be local or an fsspec URL (``s3://``); ``path`` is where it was written,
    within the runs dir.
    """
    from glossogen.analysis._dashboard import save_dashboard as save

    try:
        _check_local_runs_dir(request.app.state.settings.runs_dir)  # 503 as query and fields
        path = save(request.app.state.settings.runs_dir, name, body)
    except DashboardError as exc:
        _dashboard_refusal(exc)
    except DashboardsInTheWay as exc:
        raise HTTPException(409, {"message": str(exc)}) from exc
    except (RunsDirError, StorageError) as exc:
        _refuse(exc, request.app.state.settings.runs_dir)
    return SavedDashboard(name=name, path=path)
