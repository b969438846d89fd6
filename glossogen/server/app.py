"""The FastAPI application: ``create_app(runs_dir)`` serves one runs directory over REST.

Routes live in one module per concern (``_export_routes.py``: the export endpoints) and are
mounted here. Nothing is cached between requests: every request reads the runs directory as it
is, so a run written or deleted meanwhile is seen at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import FastAPI

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
) -> FastAPI:
    """Return the REST application serving ``runs_dir``.

    Args:
        runs_dir: Local path or fsspec URL (``s3://bucket/runs``) of the runs directory.
        max_runs: Ceiling on runs per export.
        raw_max_bytes: Ceiling on the raw zip's run folders (bytes, uncompressed).
        csv_max_bytes: Ceiling on one CSV download (bytes).

    Returns:
        A FastAPI app with ``GET /api/health`` and ``POST /api/g/{slug}/runs/export/...``.
    """
    app = FastAPI(title="glossogen", summary="Runs of glossogen scenarios over REST.")
    app.state.settings = ServerSettings(runs_dir, max_runs, raw_max_bytes, csv_max_bytes)

    @app.get("/api/health")
    def health() -> dict[str, str]:
        """Answer ``{"status": "ok"}`` once the server is up."""
        return {"status": "ok"}

    app.include_router(export_router)
    return app
