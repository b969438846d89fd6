"""MCP tools over a runs directory: browse, launch, stop, evaluate and export runs.

A surface like the CLI, on the official ``mcp`` SDK: ``glossogen mcp`` serves it over stdio,
``glossogen serve`` over streamable HTTP at ``/mcp``. Every tool is a library call the CLI
makes too (``_tools.py``); launching and stopping are ``_launch.py``'s.
"""

from glossogen.mcp._server import build_server

__all__ = ["build_server"]
