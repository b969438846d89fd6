"""The FastAPI application: ``create_app(runs_dir)`` serves one runs directory over REST.

Routes live in one module per concern (``_export_routes.py``: the export endpoints) and are
mounted here. Nothing is cached between requests: every request reads the runs directory as it
is, so a run written or deleted meanwhile is seen at once.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from glossogen.export import MAX_RUNS, RAW_ZIP_MAX_BYTES
from glossogen.server._export_routes import router as export_router

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
        A FastAPI app with ``GET /api/health``, ``POST /api/g/{slug}/runs/export/...`` and the
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

    if token:
        expected = f"Bearer {token}".encode()

        @app.middleware("http")
        async def require_token(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            given = request.headers.get("authorization", "").encode()
            if request.url.path != "/api/health" and not hmac.compare_digest(given, expected):
                return JSONResponse(
                    {"detail": "missing or wrong bearer token (GLOSSOGEN_SERVE_TOKEN)"},
                    status_code=401,
                )
            return await call_next(request)

    @app.get("/api/health")
    def health() -> dict[str, str]:
        """Answer ``{"status": "ok"}`` once the server is up."""
        return {"status": "ok"}

    app.include_router(export_router)
    app.router.routes.extend(mcp_app.routes)  # POST/GET/DELETE /mcp (streamable HTTP)
    return app
