"""``glossogen serve``: the REST server over a runs directory (uvicorn, loopback by default)."""

from __future__ import annotations

import os
import sys

import typer

from glossogen import exit_codes


def serve(
    runs_dir: str = typer.Option(
        ..., "--runs-dir", help="Runs directory to serve: a local folder or s3://bucket/prefix."
    ),
    port: int = typer.Option(8000, "--port", help="TCP port to listen on."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface to bind (loopback unless you mean to share)."
    ),
) -> int:
    """Serve the runs directory over REST (export preview, CSV and raw zip endpoints)."""
    if "://" not in runs_dir and not os.path.isdir(runs_dir):
        print(f"glossogen: error: --runs-dir {runs_dir!r} is not a folder", file=sys.stderr)
        return int(exit_codes.UNREADABLE)
    if not 0 <= port <= 65535:
        print(f"glossogen: error: --port {port} is not a TCP port (0-65535)", file=sys.stderr)
        return int(exit_codes.USAGE)
    import uvicorn  # imported here so `glossogen --help` stays fast

    from glossogen.server import create_app

    uvicorn.run(create_app(runs_dir), host=host, port=port, log_level="info")
    return 0
