"""Tolerant reader of a run's event log: one damaged line costs only itself.

The log is read line by line with the standard JSON parser (never polars, which fails a whole
file on one bad line). Each line is classified:

- a known event: validated through :func:`~glossogen.eventlog.event_adapter` (so scenario
  events registered before the call, and upcasters on the event classes, apply);
- unknown: valid JSON object whose ``event_type`` no class knows; counted and kept as a dict;
- invalid: not UTF-8, not JSON (``NaN`` included), not an object, no string ``event_type``, or
  failed validation; counted and skipped;
- a truncated tail: the last line, with no trailing newline, that does not parse (a writer
  killed mid-write); ignored and flagged. A last line without a newline that parses is read.

Blank lines are skipped and not counted. Lines written by GlossoGen 0.5.x (no
``schema_version``) pass through :class:`~glossogen.eventlog._upcast.LegacyUpcaster` first, so
both readers return this release's shapes for old logs.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import ValidationError

from glossogen.eventlog._events import Event, event_adapter, event_classes
from glossogen.eventlog._upcast import LegacyUpcaster, is_legacy
from glossogen.storage import is_local, open_fs, translate_errors


@dataclass
class EventLogRead:
    """What :func:`read_events` found in one log.

    Attributes:
        events: Valid events of known types, in log order.
        invalid_lines: Lines that were not valid JSON objects or failed validation (the
            truncated tail excluded).
        unknown_lines: Valid JSON objects whose ``event_type`` no registered class knows.
        truncated_tail: Whether the last line was cut mid-write (ignored).
        raw_unknown: The unknown lines as parsed dicts, in log order.
        line_numbers: The line of the log (1-based, blank lines counted) each of ``events``
            was read from; empty for events not read from a file.
        invalid_line_numbers: The lines counted in ``invalid_lines``.
    """

    events: list[Event] = field(default_factory=list)
    invalid_lines: int = 0
    unknown_lines: int = 0
    truncated_tail: bool = False
    raw_unknown: list[dict[str, Any]] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    invalid_line_numbers: list[int] = field(default_factory=list)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _parse(line: bytes) -> Any:
    return json.loads(line, parse_constant=_reject_constant)


def _open(url: str, storage_options: dict[str, Any] | None) -> IO[bytes]:
    fs, path = open_fs(url, **(storage_options or {}))
    with translate_errors(url, fs):
        if is_local(fs):
            return open(path, "rb")
        return io.BytesIO(fs.cat_file(path))


def _lines(url: str, storage_options: dict[str, Any] | None) -> Iterator[tuple[bytes, bool, int]]:
    """Yield ``(line, terminated, line number)`` for each non-blank line.

    Lines are numbered from 1, blank lines counted; only the last can be unterminated.
    """
    with _open(url, storage_options) as f:
        yield from _numbered(f)


def _numbered(f: IO[bytes]) -> Iterator[tuple[bytes, bool, int]]:
    for number, raw in enumerate(f, start=1):
        terminated = raw.endswith(b"\n")
        line = raw.strip()
        if line:
            yield line, terminated, number


_UNPARSED = object()


def _objects(lines: Iterator[tuple[bytes, bool, int]]) -> Iterator[tuple[Any, bool, int]]:
    """Yield ``(parsed line or _UNPARSED, terminated, line number)``; 0.5.x lines upcast."""
    upcaster: LegacyUpcaster | None = None
    for line, terminated, number in lines:
        try:
            obj = _parse(line)
        except ValueError:
            yield _UNPARSED, terminated, number
            continue
        if isinstance(obj, dict) and is_legacy(obj):
            upcaster = upcaster or LegacyUpcaster()
            obj = upcaster.upcast(obj)
        yield obj, terminated, number


def read_events(url: str, storage_options: dict[str, Any] | None = None) -> EventLogRead:
    """Read every event of the log at ``url``, skipping and counting damaged lines.

    Args:
        url: Local path or fsspec URL of a ``.jsonl`` event log.
        storage_options: Passed to :func:`glossogen.storage.open_fs`.

    Returns:
        The events and the counts of skipped lines.

    Raises:
        FileNotFoundError: if the log does not exist.
        StorageError: if the storage is unreachable or the bucket is missing.
    """
    return _read(_lines(url, storage_options))


def read_event_bytes(data: bytes) -> EventLogRead:
    """:func:`read_events` over the bytes of a log already read (the same rules)."""
    return _read(_numbered(io.BytesIO(data)))


def _read(lines: Iterator[tuple[bytes, bool, int]]) -> EventLogRead:
    result = EventLogRead()
    adapter = event_adapter()
    known = event_classes()
    for obj, terminated, number in _objects(lines):
        _classify(result, obj, terminated, adapter, known, number)
    return result


def _classify(
    result: EventLogRead,
    obj: Any,
    terminated: bool,
    adapter: Any,
    known: dict[str, Any],
    number: int,
) -> Event | dict[str, Any] | None:
    """Add line ``number`` to ``result`` (the module docstring's rule); return what it added."""
    if obj is _UNPARSED:
        if terminated:
            result.invalid_lines += 1
            result.invalid_line_numbers.append(number)
        else:
            result.truncated_tail = True
        return None
    tag = obj.get("event_type") if isinstance(obj, dict) else None
    if not isinstance(tag, str):
        result.invalid_lines += 1
        result.invalid_line_numbers.append(number)
        return None
    if tag not in known:
        result.unknown_lines += 1
        result.raw_unknown.append(obj)
        return dict(obj)
    try:
        event: Event = adapter.validate_python(obj)
    except ValidationError:
        result.invalid_lines += 1
        result.invalid_line_numbers.append(number)
        return None
    result.events.append(event)
    result.line_numbers.append(number)
    return event


class LogTail:
    """Follow a log as it grows: each :meth:`poll` reads the complete lines appended since.

    The same rule as :func:`read_events`, line by line: a known event is validated into its
    class, an unknown one comes back as its dict, a damaged line is counted and skipped. Only
    complete lines (ending in a newline) are read; a line still being written is read by the
    poll after it is finished. A GlossoGen 0.5.x log is upcast as it is read (one upcaster
    over the whole follow). Locally the file is opened at the offset; on object storage
    (``s3://``) the shipped object is read from the offset (``cat_file(start=...)``).

    Attributes:
        url: The log's local path or fsspec URL.
        offset: Bytes of the log consumed so far.
        read: Every line classified so far (events, counts of damaged and unknown lines).
    """

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        """Follow the log at ``url`` from its first byte."""
        self.url = url
        self.offset = 0
        self.read = EventLogRead()
        self._options = storage_options or {}
        self._upcaster: LegacyUpcaster | None = None
        self._lines = 0

    def _new_bytes(self) -> bytes:
        fs, path = open_fs(self.url, **self._options)
        with translate_errors(self.url, fs):
            if is_local(fs):
                with open(path, "rb") as f:
                    f.seek(self.offset)
                    return f.read()
            fs.invalidate_cache(path)
            size = int(fs.size(path))
            if size <= self.offset:
                return b""
            return bytes(fs.cat_file(path, start=self.offset))

    def poll(self) -> list[Event | dict[str, Any]]:
        """Return the events of the complete lines appended since the last poll, in log order.

        Raises:
            FileNotFoundError: the log does not exist.
            StorageError: the storage is unreachable.
        """
        data = self._new_bytes()
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        adapter, known = event_adapter(), event_classes()
        out: list[Event | dict[str, Any]] = []
        for raw in data[: end + 1].split(b"\n")[:-1]:
            self._lines += 1
            line = raw.strip()
            if not line:
                continue
            try:
                obj = _parse(line)
            except ValueError:
                obj = _UNPARSED
            if isinstance(obj, dict) and is_legacy(obj):
                self._upcaster = self._upcaster or LegacyUpcaster()
                obj = self._upcaster.upcast(obj)
            added = _classify(self.read, obj, True, adapter, known, self._lines)
            if added is not None:
                out.append(added)
        return out


def iter_event_dicts(
    url: str, storage_options: dict[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield each line of the log that parses as a JSON object, as a dict, in log order.

    No validation: unknown event types are yielded too. Lines that do not parse as JSON
    objects, and a truncated last line, are skipped silently.

    Args:
        url: Local path or fsspec URL of a ``.jsonl`` event log.
        storage_options: Passed to :func:`glossogen.storage.open_fs`.

    Yields:
        One dict per parseable line.

    Raises:
        FileNotFoundError: if the log does not exist.
        StorageError: if the storage is unreachable or the bucket is missing.
    """
    for obj, _terminated, _number in _objects(_lines(url, storage_options)):
        if isinstance(obj, dict):
            yield obj
