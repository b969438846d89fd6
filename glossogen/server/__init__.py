"""The REST server: a FastAPI app over one runs directory (``glossogen serve``)."""

from glossogen.server._export_routes import DEFAULT_GROUP, ExportRequest
from glossogen.server.app import CSV_MAX_BYTES, ServerSettings, create_app

__all__ = ["CSV_MAX_BYTES", "DEFAULT_GROUP", "ExportRequest", "ServerSettings", "create_app"]
