"""A run folder's JSON files read: one parse for every reader (pydantic-core, else the stdlib)."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json


def parse_json(data: bytes) -> Any:
    """Return the value of a JSON document, as :func:`json.loads` reads it.

    Parsed by pydantic-core, whose cache shares each short string (keys among them) across
    documents: a selection of a thousand runs holds one copy of each config and report key,
    not a thousand (its records: about 5 MiB less). A document pydantic-core refuses is read
    by the standard library, which accepts what it accepts (a lone surrogate escape) and
    otherwise raises its own error, with its message. The bytes must be UTF-8 (a leading
    byte order mark is passed over): JSON's text, as every file here is written.

    Raises:
        UnicodeDecodeError: ``data`` is not UTF-8 text (a raw byte 0xff; UTF-16 text).
        ValueError: (:class:`json.JSONDecodeError`) if ``data`` is not valid JSON.
    """
    return _parsed(data)[0]


def _parsed(data: bytes) -> tuple[Any, bool]:
    """:func:`parse_json`'s value, and whether its every string is known to be UTF-8 text.

    True when pydantic-core read it: it refuses a lone surrogate's escape and builds each
    string as Rust's UTF-8 text, so no string it returns can hold one (nothing left to walk:
    :func:`~glossogen.refusals.not_utf8`). False when the standard library read it.
    """
    try:
        return from_json(data), True
    except ValueError:
        return json.loads(data.decode("utf-8-sig")), False


__all__ = ["parse_json"]
