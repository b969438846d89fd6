"""The FastAPI application: ``create_app(runs_dir)`` serves one runs directory over REST.

Routes live in one module per concern (``_export_routes.py``: the export endpoints;
``_analysis_routes.py``: the analysis fields and query;
``_live_routes.py``: a run's event stream and Stop; ``_pages.py``: the run browser's pages) and
are mounted here. Every request reads the runs directory as it is, so a run written or deleted
meanwhile is seen at once; the one cache, the run list's records, is keyed by each log's size
and modification time (``_run_index.RunCache``), so it never serves a log that changed.

With a token, every request but ``/api/health`` must carry it: ``Authorization: Bearer
<token>``, or the ``glossogen_token`` cookie a page sets when opened once with ``?token=``
(the browser then sends it with every page, fetch and ``EventSource``). Anything else is 401.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from glossogen.export import MAX_RUNS, RAW_ZIP_MAX_BYTES
from glossogen.server._analysis_routes import router as analysis_router
from glossogen.server._export_routes import router as export_router
from glossogen.server._live_routes import router as live_router
from glossogen.server._pages import BODY_NOT_JSON, error_pages
from glossogen.server._pages import router as pages_router
from glossogen.server._run_index import RunCache

TOKEN_COOKIE = "glossogen_token"
"""The cookie a page sets from ``?token=`` so the browser (and its ``EventSource``) sends it."""

CSV_MAX_BYTES = 512 * 1024**2
"""The CSV ceiling of the REST endpoint: 512 MiB the client would receive."""


@dataclass(frozen=True)
class ServerSettings:
    """What one server serves and the ceilings it enforces.

    Attributes:
        runs_dir: Local path or fsspec URL of the runs directory.
        max_runs: Runs per export (the spec's 5000).
        raw_max_bytes: Run folders per raw zip, uncompressed, estimated before the build.
        csv_max_bytes: Bytes of one CSV download (a table, or the zip of tables), counted
            while it is written.
    """

    runs_dir: str
    max_runs: int = MAX_RUNS
    raw_max_bytes: int = RAW_ZIP_MAX_BYTES
    csv_max_bytes: int = CSV_MAX_BYTES


def create_app(
    runs_dir: str,
    *,
    max_runs: int = MAX_RUNS,
    raw_max_bytes: int = RAW_ZIP_MAX_BYTES,
    csv_max_bytes: int = CSV_MAX_BYTES,
    token: str | None = None,
    host: str = "127.0.0.1",
) -> FastAPI:
    """Return the REST application serving ``runs_dir``.

    Args:
        runs_dir: Local path or fsspec URL (``s3://bucket/runs``) of the runs directory.
        max_runs: Ceiling on runs per export.
        raw_max_bytes: Ceiling on the raw zip's run folders (bytes, uncompressed).
        csv_max_bytes: Ceiling on one CSV download (bytes).
        token: When set, every request but ``/api/health`` must carry
            ``Authorization: Bearer <token>`` (401 otherwise); ``glossogen serve`` sets it from
            ``GLOSSOGEN_SERVE_TOKEN``.
        host: The interface served; on loopback the MCP endpoint also refuses requests whose
            ``Host`` is not a loopback name (DNS rebinding).

    Returns:
        A FastAPI app with ``GET /api/health``, ``POST /api/g/{slug}/runs/export/...``,
        ``GET .../runs/analysis/fields``, ``POST .../runs/analysis/query`` and the
        MCP tools over streamable HTTP at ``/mcp``.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    from glossogen.mcp import build_server

    mcp_server = build_server(runs_dir)
    loopback = host in ("127.0.0.1", "localhost", "::1")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"] if loopback else [],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        if loopback
        else [],
    )
    mcp_app = mcp_server.streamable_http_app(
        streamable_http_path="/mcp", transport_security=security, host=host
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp_server.session_manager.run():  # the MCP sessions live with the app
            yield

    app = FastAPI(
        title="glossogen", summary="Runs of glossogen scenarios over REST.", lifespan=lifespan
    )
    app.state.settings = ServerSettings(runs_dir, max_runs, raw_max_bytes, csv_max_bytes)
    app.state.run_cache = RunCache()

    if token:
        _guard(app, token)
    _one_refusal_shape(app)
    error_pages(app)

    @app.get("/api/health")
    def health() -> dict[str, str]:
        """Answer ``{"status": "ok"}`` once the server is up."""
        return {"status": "ok"}

    app.include_router(export_router)
    app.include_router(analysis_router)
    app.include_router(live_router)
    app.include_router(pages_router)
    app.mount("/static", StaticFiles(packages=[("glossogen.server", "static")]), name="static")
    app.router.routes.extend(mcp_app.routes)  # POST/GET/DELETE /mcp (streamable HTTP)
    return app


def _one_refusal_shape(app: FastAPI) -> None:
    """Answer a body that does not validate in the shape of every other REST 422.

    Under ``/api/`` the answer is ``{"detail": {"field", "message"}}``: ``field`` is the dotted
    place of the first problem (``selection.run_ids``; ``body`` when the body is not JSON; a
    query or path parameter by its name, ``max_runs``, as the routes name it) and
    ``message`` pydantic's text for it (:data:`BODY_NOT_JSON` for a body that is not JSON;
    ``'\udcff': not UTF-8 text`` for a string escaping a lone surrogate). A refusal a model's
    own validator raised (a ``QueryError`` or ``SelectionError``) is its field and its line,
    as the routes answer it when they raise it themselves. A body with more than one value
    refused also lists each, ``errors``: ``[{"field", "message"}, ...]`` in pydantic's order
    (MCP's line names each argument alike). The pages keep FastAPI's own answer.
    """
    from fastapi.exception_handlers import request_validation_exception_handler
    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def refused(request: Request, exc: RequestValidationError) -> Response:
        if not request.url.path.startswith("/api/"):
            return await request_validation_exception_handler(request, exc)
        each = [value for error in exc.errors() for value in _refused_values(error)]
        detail: dict[str, Any] = dict(each[0])
        if len(each) > 1:  # every value refused, as MCP's line names each argument
            detail["errors"] = each
        return JSONResponse(status_code=422, content={"detail": detail})


def _refused_values(error: Any) -> list[dict[str, str]]:
    """The refused values of one pydantic error, ``{"field", "message"}`` each.

    A selection's own check names every value it refused (``SelectionError.every``).
    """
    from glossogen.export import SelectionError

    ours = error.get("ctx", {}).get("error")
    if isinstance(ours, SelectionError):  # a model's own check: each value's line
        return [{"field": each.field, "message": each.message} for each in ours.every]
    return [_refused_value(error)]


def _refused_value(error: Any) -> dict[str, str]:
    """One refused value of a request, ``{"field", "message"}``, as the routes name it.

    A list's own item is named by its list (``selection.run_ids``, never pydantic's index
    ``selection.run_ids.0``), its message stating the item's value (``5: Input should be a
    valid string``), as MCP names the tool's argument and the CLI its flag; a field of an
    item keeps the index that says which (``filters.0.value``).
    """
    from glossogen.analysis import QueryError
    from glossogen.export import SelectionError
    from glossogen.refusals import shown, unknown_key_line, validator_line

    ours = error.get("ctx", {}).get("error")
    if isinstance(ours, (QueryError, SelectionError)):  # a model's own check: its line
        return {"field": ours.field, "message": ours.message}
    loc = tuple(error.get("loc", ()))
    if loc[:1] in (("query",), ("path",)):  # a parameter: its name, as a route's refusal
        loc = loc[1:]
    # a list's own value (a run id), not a field of an item (``filters.0.value`` stays: which
    # filter) nor an item refused whole (``result.groups.0.cells.1``: which cell, no value said)
    item = (
        bool(loc) and isinstance(loc[-1], int) and not isinstance(error.get("input"), (dict, list))
    )
    loc = loc[:-1] if item else loc
    place = [str(p) for p in loc if p != "body"]
    if len(place) > 2 and place[0] == "selection" and place[1] in ("run_ids", "filters"):
        del place[1]  # the tag pydantic names for the selection's kind, not a field
    field = "body" if error.get("type") == "json_invalid" or not place else ".".join(place)
    message = validator_line(error)  # a model's own check: its line, as written
    if error.get("type") == "json_invalid":  # as a body that is not UTF-8 (README)
        message = BODY_NOT_JSON
    elif error.get("type") == "string_unicode":  # a lone surrogate escaped in the JSON
        message = f"{shown(error.get('input'))}: not UTF-8 text"  # as the CLI says it
    elif error.get("type") == "extra_forbidden":  # the value echoed, as a dashboard's key
        message = unknown_key_line(field, error.get("input"))
    elif item:  # the item's value stated, as MCP's line states it
        given = error.get("input")
        if isinstance(given, str):
            message = f"{shown(given)}: {message}"
        elif isinstance(given, (int, float, bool)) or given is None:
            message = f"{given!r}: {message}"
    return {"field": field, "message": message}


def _guard(app: FastAPI, token: str) -> None:
    """Require ``token`` on every request but ``/api/health`` (bearer header or cookie).

    A page opened with ``?token=<token>`` sets the cookie (HttpOnly, SameSite=Strict) and is
    redirected to itself without the token, so the token does not stay in the address bar.
    """
    expected = token.encode()

    def matches(given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), expected)

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.url.path == "/api/health":
            return await call_next(request)
        header = request.headers.get("authorization", "")
        bearer = header.removeprefix("Bearer ") if header.startswith("Bearer ") else None
        if matches(bearer) or matches(request.cookies.get(TOKEN_COOKIE)):
            return await call_next(request)
        if matches(request.query_params.get("token")) and request.method == "GET":
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
            return redirect
        message = "missing or wrong bearer token (GLOSSOGEN_SERVE_TOKEN)"
        if request.url.path.startswith(("/api/", "/mcp")):
            return JSONResponse({"detail": message}, status_code=401)
        return PlainTextResponse(
            f"401: {message}; open the page once with ?token=<token>", status_code=401
        )
