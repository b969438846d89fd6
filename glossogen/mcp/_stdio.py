r"""The tools over stdio: the SDK's transport, and an answer to a line that is not UTF-8 text.

The SDK's stdio transport (``mcp.server.stdio.stdio_server``, mcp 2.3) reads stdin as UTF-8
with each byte that is not UTF-8 replaced by U+FFFD, so a raw ``0xFF`` in a request became a
value no run has (``measure 'total_chars\ufffd': no such field``); and it parses each line with
pydantic's JSON parser, which refuses a string escaping a lone surrogate (``"\udcff"``: valid
JSON, but no UTF-8 text), passing the parse error on to its dispatcher, which logs it and drops
the line, so the client waits for an answer that never comes.

:func:`serve_stdio` runs the same transport and the same server, but reads stdin itself with
each such byte kept as a lone surrogate (``surrogateescape``: ``0xFF`` is ``\udcff``, as a
command line's byte reads), so pydantic's parser refuses that line too; a relay between the
transport and the server answers each refused request itself: a JSON-RPC error (``-32602``,
invalid params) for the request's id, naming the place and the value as the tools' own
refusals do (``labels.0 '\udcff': not UTF-8 text``, the same line for the raw byte and the
escape). A line not UTF-8 whose request cannot be read (the byte outside any string, or in
its id) is answered ``-32700`` with id null: ``the request line is not UTF-8 text``. Any
other line the parser refuses goes on to the dispatcher as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from io import TextIOWrapper
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from glossogen.refusals import is_utf8, not_utf8, shown

LINE_NOT_UTF8 = "the request line is not UTF-8 text"
"""The answer to a line holding a byte that is not UTF-8 where no request can be read."""


def _error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def not_utf8_answer(refused: Exception) -> JSONRPCError | None:
    r"""The error answering a request line the SDK's parser refused for its text.

    The line holds a lone surrogate: a JSON escape (``"\udcff"``) or a raw byte that is not
    UTF-8, read as one. None when ``refused`` is no parse error of such a line, or the line is a
    notification (no id: it gets no answer); a line whose request cannot be read (a raw byte
    outside any string, or an id that is not UTF-8 text) is answered with id null.
    """
    if not isinstance(refused, ValidationError):
        return None
    errors = refused.errors()
    kind = errors[0]["type"] if errors else None
    line = errors[0].get("input") if kind in ("json_invalid", "string_unicode") else None
    if not isinstance(line, str):
        return None
    raw = not is_utf8(line)  # a byte that is not UTF-8, kept as a lone surrogate
    try:
        request: Any = json.loads(line)  # Python's reader takes the escape; no text is lost
    except ValueError:
        return _error(None, PARSE_ERROR, LINE_NOT_UTF8) if raw else None
    if not isinstance(request, dict) or "method" not in request:
        return _error(None, PARSE_ERROR, LINE_NOT_UTF8) if raw else None
    request_id = request.get("id")
    if isinstance(request_id, str) and not is_utf8(request_id):  # no answer can carry it
        return _error(None, INVALID_PARAMS, f"id {shown(request_id)}: not UTF-8 text")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    odd = not_utf8(request.get("params"))
    if odd is None:
        odd = not_utf8(request)  # the method, or a field beside the params
        if odd is None:
            return _error(request_id, PARSE_ERROR, LINE_NOT_UTF8) if raw else None
        where = ".".join(odd[0]) or "request"
        return _error(request_id, INVALID_PARAMS, f"{where} {shown(odd[1])}: not UTF-8 text")
    place, text = odd
    if place[:1] == ("arguments",) and request.get("method") == "tools/call":
        place = place[1:]  # a tool's argument, as its refusals name it
    where = ".".join(place) or "params"
    return _error(request_id, INVALID_PARAMS, f"{where} {shown(text)}: not UTF-8 text")


async def _relay(
    lines: ObjectReceiveStream[SessionMessage | Exception],
    dispatched: ObjectSendStream[SessionMessage | Exception],
    answers: ObjectSendStream[SessionMessage],
) -> None:
    """Pass each read line on to the dispatcher, answering a request refused for its text."""
    async with dispatched:
        async for item in lines:
            answer = not_utf8_answer(item) if isinstance(item, Exception) else None
            if answer is not None:
                await answers.send(SessionMessage(answer))
                continue
            await dispatched.send(item)


@contextmanager
def _stdin_kept() -> Iterator[TextIOWrapper]:
    """The wire's stdin as text, each byte that is not UTF-8 kept (``surrogateescape``).

    As the SDK claims it: the wire is read from a private duplicate while fd 0 points at the
    null device (a tool's child reads EOF, never a request), and fd 0 is restored on exit.
    The duplicate is never closed (a reading thread may still block on it), as the SDK's.
    """
    wire = os.dup(0)  # not inherited by children (Python's default)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        binary = os.fdopen(wire, "rb", closefd=False)
        yield TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape")
    finally:
        os.dup2(wire, 0)


async def _serve(server: MCPServer) -> None:
    lowlevel = server._lowlevel_server  # as MCPServer.run_stdio_async runs it (no public name)
    with _stdin_kept() as stdin:
        async with stdio_server(stdin=anyio.wrap_file(stdin)) as (read_stream, write_stream):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_relay, read_stream, send, write_stream)
                await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def serve_stdio(server: MCPServer) -> None:
    """Serve ``server``'s tools over stdin and stdout until stdin closes."""
    anyio.run(_serve, server)


__all__ = ["LINE_NOT_UTF8", "not_utf8_answer", "serve_stdio"]
