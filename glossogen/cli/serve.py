"""``glossogen serve``: REST and MCP over a runs directory (uvicorn, loopback by default).

Off loopback the server refuses to start without ``GLOSSOGEN_SERVE_TOKEN``; with the variable
set (on any interface) every request but ``/api/health`` must carry ``Authorization: Bearer
<token>``. The token's value is never printed.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import socket
import sys
from typing import Any

import typer

from glossogen import exit_codes

TOKEN_VARIABLE = "GLOSSOGEN_SERVE_TOKEN"
"""The variable holding the bearer token ``glossogen serve`` requires off loopback."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and any loopback address (127.0.0.0/8, ::1)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    runs_dir: str = typer.Option(
        ..., "--runs-dir", help="Runs directory to serve: a local folder or s3://bucket/prefix."
    ),
    port: int = typer.Option(8000, "--port", help="TCP port to listen on."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface to bind (loopback unless you mean to share)."
    ),
) -> int:
    """Serve the runs directory to a web browser, over REST and over MCP.

    The run browser: open http://HOST:PORT/ in a web browser (the runs, each run live or
    finished, export, stop). REST: the export endpoints. MCP: streamable HTTP at /mcp.
    """
    if "://" not in runs_dir and not os.path.isdir(runs_dir):
        print(f"glossogen: error: --runs-dir {runs_dir!r} is not a folder", file=sys.stderr)
        return int(exit_codes.UNREADABLE)
    if not 0 <= port <= 65535:
        print(f"glossogen: error: --port {port} is not a TCP port (0-65535)", file=sys.stderr)
        return int(exit_codes.USAGE)
    token = os.environ.get(TOKEN_VARIABLE) or None
    try:  # a host that names no address is named as such, before the token rule
        address = resolve(host, port)
    except ListenError as exc:
        print(f"glossogen: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if not is_loopback(host) and token is None:
        print(
            f"glossogen: error: --host {host!r} is not loopback: set {TOKEN_VARIABLE} "
            "(clients send it as a bearer token)",
            file=sys.stderr,
        )
        return int(exit_codes.REFUSED)
    import uvicorn  # imported here so `glossogen --help` stays fast

    from glossogen.launch import apply_prefect_defaults
    from glossogen.server import create_app

    apply_prefect_defaults()
    if "://" not in runs_dir:
        runs_dir = os.path.abspath(runs_dir)
    try:
        listener = listen(host, port, address)
    except ListenError as exc:
        print(f"glossogen: error: {exc}", file=sys.stderr)
        return exc.exit_code
    app = create_app(runs_dir, token=token, host=host)
    logging.getLogger("uvicorn.access").addFilter(TokenRedaction())
    config = uvicorn.Config(app, host=host, port=port, log_level="info")  # configures logging
    # uvicorn names the address only when it binds itself; the same line, for the bound port.
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, bound
    )
    uvicorn.Server(config).run(sockets=[listener])
    return 0


class ListenError(Exception):
    """The server cannot listen where asked; ``str()`` is one line, ``exit_code`` its code."""

    def __init__(self, message: str, exit_code: int) -> None:
        """Keep the one-line ``message`` and the process ``exit_code``."""
        super().__init__(message)
        self.exit_code = exit_code


Address = tuple[socket.AddressFamily, socket.SocketKind, int, Any]
"""What :func:`resolve` gives :func:`listen`: family, socket kind, protocol, socket address."""


def resolve(host: str, port: int) -> Address:
    """Return the first stream address of ``host:port``.

    Raises:
        ListenError: ``--host`` names no address (64).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ListenError(
            f"--host {host!r} names no address: {exc.strerror}", int(exit_codes.USAGE)
        ) from None
    return family, kind, proto, address


def listen(host: str, port: int, address: Address) -> socket.socket:
    """Bind and listen on ``address`` (of ``host:port``) before uvicorn starts.

    uvicorn binds inside its own startup and, when that fails, logs its own lines and exits 3;
    binding here first turns each cause into one line and an exit code from our table.

    Raises:
        ListenError: ``--host`` is not an address of this machine (64), or the port is taken
            (75, try again later).
    """
    family, kind, proto, where_to = address
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn sets it
        listener.bind(where_to)
        listener.listen(2048)  # uvicorn's default backlog
    except OSError as exc:
        listener.close()
        where = f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise ListenError(
                f"cannot listen on {where}: the port is in use", int(exit_codes.TRY_AGAIN)
            ) from None
        raise ListenError(
            f"cannot listen on {where}: {exc.strerror}", int(exit_codes.USAGE)
        ) from None
    return listener


class TokenRedaction(logging.Filter):
    """Blank the value of a ``token=`` query parameter in uvicorn's access lines.

    The browser opens the pages once with ``?token=<token>`` (then a cookie carries it); the
    access log would otherwise print the secret with every such request.
    """

    _TOKEN = re.compile(r"(?<=[?&]token=)[^&\s]*")

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the request path argument of an access record; keep every record."""
        if isinstance(record.args, tuple):
            record.args = tuple(
                self._TOKEN.sub("[redacted]", a) if isinstance(a, str) else a for a in record.args
            )
        return True
