"""MCP tools over a runs directory: browse, launch, stop, evaluate and export runs.

A surface like the CLI, on the official ``mcp`` SDK: ``glossogen mcp`` serves it over stdio
(``serve_stdio``: the SDK's transport, a request it cannot parse for its text answered),
``glossogen serve`` over streamable HTTP at ``/mcp``. Every tool is a library call the CLI
makes too (``_tools.py``); launching and stopping are the library's (``glossogen.launch``).

``build_server`` is imported on first use (PEP 562): a command that imports this package but
serves nothing should not pay for the SDK and every tool's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from glossogen.mcp._server import build_server
    from glossogen.mcp._stdio import serve_stdio


def __getattr__(name: str) -> object:
    if name == "build_server":
        from glossogen.mcp._server import build_server

        return build_server
    if name == "serve_stdio":
        from glossogen.mcp._stdio import serve_stdio

        return serve_stdio
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["build_server", "serve_stdio"]
