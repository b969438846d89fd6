"""Log lines read as bytes: find lines of one event type, parse and validate the chosen ones.

A log is read as bytes (memory-mapped locally, downloaded otherwise) and searched, not parsed
line by line: a line's ``event_type`` is read from its first bytes and only the lines a reader
needs are parsed (:class:`LineParser`), upcast when written by GlossoGen 0.5.x and validated
against their event model. A line that fails is skipped and counted with its byte offset, so
one damaged line costs only itself; :func:`damaged_note` words the note naming them.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from glossogen.eventlog import (
    Event,
    LegacyUpcaster,
    envelope_type,
    event_classes,
    is_legacy,
    parse_line,
)
from glossogen.storage import open_mapped as open_log


def event_type(line: bytes) -> str | None:
    """Return the ``event_type`` of a raw log line without parsing it, or None.

    The reader's rule (:func:`~glossogen.eventlog.envelope_type`): the envelope's type, in
    the line's first 400 bytes.
    """
    return envelope_type(line, 0, len(line))


def line_number(data: bytes | mmap.mmap, offset: int) -> int:
    """Return the 1-based number of the line starting at byte ``offset`` of ``data``."""
    return data[:offset].count(b"\n") + 1


def damaged_note(
    run_id: str,
    line_numbers: list[int],
    log_url: str | None = None,
    truncated: int | None = None,
) -> str:
    """Return the one-line note naming a run's skipped lines (at most ten numbers listed).

    ``truncated`` is the number of a last line cut off mid-write (no newline), counted and
    listed with the others; ``log_url``, when given, names the file the lines are in.

    Examples: ``veyru/1795000009: 2 damaged log lines skipped (lines 23, 40)``;
    ``veyru/1795000009: message_level: 2 damaged log lines skipped (lines 23, 41 truncated)
    in runs/veyru/1795000009/veyru.jsonl``.
    """
    numbers = sorted([*line_numbers, *([truncated] if truncated is not None else [])])
    n = len(numbers)
    words = [f"{i} truncated" if i == truncated else str(i) for i in numbers[:10]]
    shown = ", ".join(words) + (", ..." if n > 10 else "")
    plural = "s" if n != 1 else ""
    where = f" in {log_url}" if log_url else ""
    return f"{run_id}: {n} damaged log line{plural} skipped (line{plural} {shown}){where}"


def truncated_line(data: bytes | mmap.mmap) -> int | None:
    """The 1-based number of a last line cut off mid-write (text after the last newline)."""
    end = complete_end(data)
    if not data[end:].strip():
        return None
    return line_number(data, end)


class LineParser:
    """Parses chosen lines of one log, upcasting 0.5.x lines in order, counting failures.

    A line that is not a JSON object, or does not validate against its event model, is
    counted with its byte offset (:attr:`bad_at`) and yields None.
    """

    def __init__(self) -> None:
        self.upcaster: LegacyUpcaster | None = None
        self.bad_at: list[int] = []
        self.classes = event_classes()

    @property
    def bad(self) -> int:
        """How many lines failed."""
        return len(self.bad_at)

    def parse(self, line: bytes, at: int) -> dict[str, Any] | None:
        """Parse, upcast (a 0.5.x line) and validate the line at offset ``at``; None if bad."""
        try:
            obj = parse_line(line)  # the reader's parser (orjson)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and is_legacy(obj):
            self.upcaster = self.upcaster or LegacyUpcaster()
            obj = self.upcaster.upcast(obj)
        if not isinstance(obj, dict) or not valid_event(obj, self.classes):
            self.bad_at.append(at)
            return None
        return obj


def valid_event(obj: dict[str, Any], classes: dict[str, type[Event]] | None = None) -> bool:
    """Return whether a parsed (and upcast) line validates against its event model.

    A type with no model (a scenario's own event, a 0.5 event with no mapping) is not judged
    here: True.

    Args:
        obj: The parsed line.
        classes: ``event_type`` to event class (default :func:`~glossogen.eventlog.event_classes`).
    """
    cls = (classes if classes is not None else event_classes()).get(str(obj.get("event_type")))
    if cls is None:
        return True
    try:
        cls.model_validate(obj)
    except ValidationError:
        return False
    return True


def _line_at(data: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    start = data.rfind(b"\n", 0, pos) + 1
    end = data.find(b"\n", pos)
    return start, (len(data) if end < 0 else end)


def complete_end(data: bytes | mmap.mmap) -> int:
    """Return the end of the last newline-terminated line (a torn tail is ignored)."""
    return data.rfind(b"\n") + 1


def find_lines(
    data: bytes | mmap.mmap, kind: str, start: int, end: int
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, line)`` for each line of ``data[start:end]`` of event type ``kind``.

    Found by a byte search for the quoted type (C speed) instead of reading every line. A line
    whose envelope is too damaged to name its type is not found.
    """
    needle = f'"{kind}"'.encode()
    hit = data.find(needle, start, end)
    while hit >= 0:
        a, b = _line_at(data, hit)
        line = data[a:b]
        if event_type(line) == kind:
            yield a, line
        hit = data.find(needle, b, end)


__all__ = [
    "LineParser",
    "complete_end",
    "damaged_note",
    "truncated_line",
    "event_type",
    "find_lines",
    "line_number",
    "open_log",
    "valid_event",
]
