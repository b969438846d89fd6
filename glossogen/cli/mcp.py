"""``glossogen mcp``: the MCP tools over stdio, for desktop MCP clients that start a server."""

from __future__ import annotations

import os
import sys

import typer

from glossogen import exit_codes


def mcp(
    runs_dir: str = typer.Option(
        ..., "--runs-dir", help="Runs directory to serve: a local folder or s3://bucket/prefix."
    ),
) -> int:
    """Serve the MCP tools over stdio (stdout carries the protocol; notes go to stderr)."""
    if "://" not in runs_dir and not os.path.isdir(runs_dir):
        print(f"glossogen: error: --runs-dir {runs_dir!r} is not a folder", file=sys.stderr)
        return int(exit_codes.UNREADABLE)
    from glossogen.launch import apply_prefect_defaults
    from glossogen.mcp import build_server, serve_stdio

    apply_prefect_defaults()
    serve_stdio(build_server(os.path.abspath(runs_dir) if "://" not in runs_dir else runs_dir))
    return 0
