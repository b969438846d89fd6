r"""The tools over stdio: the SDK's transport, and an answer to a line its parser refuses.

The SDK's stdio transport (``mcp.server.stdio.stdio_server``, mcp 2.3) parses each line with
pydantic's JSON parser, which refuses a string escaping a lone surrogate (``"\udcff"``: valid
JSON, but no UTF-8 text); it passes the parse error on to its dispatcher, which logs it and
drops the line, so the client waits for an answer that never comes. :func:`serve_stdio` runs
the same transport and the same server, with a relay between them that answers such a request
itself: a JSON-RPC error (``-32602``, invalid params) for the request's id, naming the place
and the value as the tools' own refusals do (``labels.0 '\udcff': not UTF-8 text``). Any other
line the parser refuses goes on to the dispatcher as before.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, ErrorData, JSONRPCError
from pydantic import ValidationError

from glossogen.refusals import not_utf8, shown


def not_utf8_answer(refused: Exception) -> JSONRPCError | None:
    r"""The error answering a request line the SDK's parser refused for a lone surrogate.

    None when ``refused`` is not a parse error of such a request (no id: a notification gets
    no answer; or every string is UTF-8 text: another fault, left to the SDK).
    """
    if not isinstance(refused, ValidationError):
        return None
    errors = refused.errors()
    line = errors[0].get("input") if errors and errors[0]["type"] == "json_invalid" else None
    if not isinstance(line, str):
        return None
    try:
        request: Any = json.loads(line)  # Python's reader takes the escape; no text is lost
    except ValueError:
        return None
    if not isinstance(request, dict) or "method" not in request:
        return None
    request_id = request.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    odd = not_utf8(request.get("params"))
    if odd is None:
        return None
    place, text = odd
    if place[:1] == ("arguments",) and request.get("method") == "tools/call":
        place = place[1:]  # a tool's argument, as its refusals name it
    where = ".".join(place) or "params"
    message = f"{where} {shown(text)}: not UTF-8 text"
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_PARAMS, message=message)
    )


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


async def _serve(server: MCPServer) -> None:
    lowlevel = server._lowlevel_server  # as MCPServer.run_stdio_async runs it (no public name)
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_relay, read_stream, send, write_stream)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def serve_stdio(server: MCPServer) -> None:
    """Serve ``server``'s tools over stdin and stdout until stdin closes."""
    anyio.run(_serve, server)


__all__ = ["not_utf8_answer", "serve_stdio"]
