r"""A request's query string checked before a route reads it: every parameter known and UTF-8.

A query string's byte that is not UTF-8 (``?label=%FF``) the server reads as U+FFFD, a value
no run has, and a misspelt parameter (``?scenaro=veyru``) is ignored, so the answer is over
every run. Each is refused with one line, 422 ``{"detail": {"field", "message"}}``, as the
command line refuses a flag's value that is not UTF-8 (``--label '\udcff': not UTF-8 text``)
or an unknown flag.
"""

from __future__ import annotations

from fastapi import HTTPException, Request

from glossogen.refusals import is_utf8, shown


def known_parameters(request: Request) -> None:
    r"""Refuse a query parameter the route does not take, or one holding a byte not UTF-8.

    Raises:
        HTTPException: 422 ``{"field": <parameter>, "message": ...}`` naming the parameter
            and the value (``label '\udcff': not UTF-8 text``), or the parameters taken.
    """
    from urllib.parse import parse_qsl

    raw = request.scope.get("query_string", b"").decode("latin-1")
    taken = [p.alias for p in request.scope["route"].dependant.query_params]
    for name, _ in parse_qsl(raw, keep_blank_values=True, errors="surrogateescape"):
        if name not in taken:  # a misspelt filter would select every run
            raise HTTPException(422, {"field": name if is_utf8(name) else "query", "message": (
                f"{shown(name)}: not a parameter of this route (it takes {', '.join(taken)})"
            )})  # fmt: skip
    odd = not_utf8_parameter(request)
    if odd is not None:
        name, value = odd
        raise HTTPException(
            422, {"field": name, "message": f"{name} {shown(value)}: not UTF-8 text"}
        )


def not_utf8_parameter(request: Request) -> tuple[str, str] | None:
    """The first query parameter whose value holds a byte that is not UTF-8, and that value.

    Read from the raw query string (the parsed one holds U+FFFD where the byte was).
    """
    from urllib.parse import parse_qsl

    raw = request.scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(raw, keep_blank_values=True, errors="surrogateescape"):
        if not is_utf8(value):
            return name, value
    return None


__all__ = ["known_parameters", "not_utf8_parameter"]
