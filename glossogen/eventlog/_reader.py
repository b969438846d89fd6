"""Tolerant reader of a run's event log: one damaged line costs only itself.

The log is read line by line with the standard JSON parser (never polars, which fails a whole
file on one bad line). Each line is classified:

- a known event: validated through :func:`~glossogen.eventlog.event_adapter` (so scenario
  events registered before the call, and upcasters on the event classes, apply); a reader
  starts from the classes registered so far; at the first line of a type none of them has it
  loads the scenario the log's ``simulation_started`` names, and every installed scenario's
  events only when that one lacks the type too (a run's reader never pays for the others);
- unknown: valid JSON object whose ``event_type`` no class knows; counted and kept as a dict;
- invalid: not UTF-8, not JSON (``NaN`` included), not an object, no string ``event_type``, or
  failed validation; counted and skipped;
- a truncated tail: the last line, with no trailing newline, that does not parse (a writer
  killed mid-write); ignored and flagged. A last line without a newline that parses is read.

Blank lines are skipped and not counted. Lines written by GlossoGen 0.5.x (no
``schema_version``) pass through :class:`~glossogen.eventlog._upcast.LegacyUpcaster` first, so
both readers return this release's shapes for old logs.

A line is parsed by :func:`parse_line`: orjson, and the standard library's parser (NaN refused)
only for a line orjson refuses, so a line is invalid exactly when ``json.loads`` refuses it.

:func:`read_lines` is the fast path of a reader that needs a few event types of a log (the
export's event-log tables): one walk over the log's lines reads each line's envelope and nothing
else, keeps the lines of the chosen types unparsed and numbers the lines naming no type; the
caller parses only what it kept.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Set
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
from pydantic import ValidationError

from glossogen.eventlog._events import (
    Event,
    event_adapter,
    event_classes,
    registered_event_adapter,
    registered_event_classes,
    scenario_events_loaded,
)
from glossogen.eventlog._upcast import LegacyUpcaster, is_legacy
from glossogen.eventlog._usage import CallUsage
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
        truncated_line: The torn last line's number (None when the last line is whole).
        raw_unknown: The unknown lines as parsed dicts, in log order.
        line_numbers: The line of the log (1-based, blank lines counted) each of ``events``
            was read from; empty for events not read from a file.
        invalid_line_numbers: The lines counted in ``invalid_lines``.
        usage: Model calls read for their usage alone, in log order (a reading that needs
            their spend and not their text: :mod:`glossogen.eventlog._usage`); their lines
            are not among ``events``. Empty for every reading of the whole log.
    """

    events: list[Event] = field(default_factory=list)
    invalid_lines: int = 0
    unknown_lines: int = 0
    truncated_tail: bool = False
    truncated_line: int | None = None
    raw_unknown: list[dict[str, Any]] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    invalid_line_numbers: list[int] = field(default_factory=list)
    usage: list[CallUsage] = field(default_factory=list)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def parse_line(line: bytes) -> Any:
    """Parse one log line: orjson, the standard library's parser where orjson refuses it.

    orjson accepts a subset of what ``json.loads`` does (it also refuses a lone surrogate
    escape, which ``json.loads`` reads), so a line is refused exactly when ``json.loads``
    (NaN and Infinity refused) refuses it; the slower parser is built only for such a line.

    Raises:
        ValueError: the line is not JSON.
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
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
            obj = parse_line(line)
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
    known = _Known()
    for obj, terminated, number in _objects(lines):
        _classify(result, obj, terminated, known, number)
    return result


class _Known:
    """The event classes one read validates against.

    Those registered when it starts, and every installed scenario's from the first line of a
    type none of them has.
    """

    def __init__(self) -> None:
        self.classes = registered_event_classes()
        self.adapter = registered_event_adapter()
        self.scenario = ""
        """The scenario the log's ``simulation_started`` names ("" before that line)."""

    def has(self, tag: str) -> bool:
        """Whether some event class has ``tag``.

        To tell, the log's own scenario is loaded, then (not one of its events) every scenario.
        """
        if tag in self.classes or scenario_events_loaded():
            return tag in self.classes
        if self.scenario and _load_one(self.scenario):
            self.classes, self.adapter = registered_event_classes(), registered_event_adapter()
            if tag in self.classes:
                return True
        self.classes, self.adapter = event_classes(), event_adapter()
        return tag in self.classes


def _load_one(scenario: str) -> bool:
    """Register the events of ``scenario``; False when it is not installed or fails to load."""
    # The registry sits above this package (it registers into it): imported here, when asked.
    from glossogen.scenario._registry import load_scenario

    try:
        load_scenario(scenario)
    except Exception:  # noqa: BLE001  # unknown or broken: every scenario is tried next
        return False
    return True


def _classify(
    result: EventLogRead,
    obj: Any,
    terminated: bool,
    known: _Known,
    number: int,
) -> Event | dict[str, Any] | None:
    """Add line ``number`` to ``result`` (the module docstring's rule); return what it added."""
    if obj is _UNPARSED:
        if terminated:
            result.invalid_lines += 1
            result.invalid_line_numbers.append(number)
        else:
            result.truncated_tail = True
            result.truncated_line = number
        return None
    tag = obj.get("event_type") if isinstance(obj, dict) else None
    if tag == "simulation_started" and not known.scenario:
        known.scenario = str(obj.get("scenario_name") or "")
    if not isinstance(tag, str):
        result.invalid_lines += 1
        result.invalid_line_numbers.append(number)
        return None
    if not known.has(tag):
        result.unknown_lines += 1
        result.raw_unknown.append(obj)
        return dict(obj)
    try:
        event: Event = known.adapter.validate_python(obj)
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
        known = _Known()
        out: list[Event | dict[str, Any]] = []
        for raw in data[: end + 1].split(b"\n")[:-1]:
            self._lines += 1
            line = raw.strip()
            if not line:
                continue
            try:
                obj = parse_line(line)
            except ValueError:
                obj = _UNPARSED
            if isinstance(obj, dict) and is_legacy(obj):
                self._upcaster = self._upcaster or LegacyUpcaster()
                obj = self._upcaster.upcast(obj)
            added = _classify(self.read, obj, True, known, self._lines)
            if added is not None:
                out.append(added)
        return out


_TYPE_KEY = b'"event_type"'
_USUAL_KEY = b'"event_type":"'
_TYPE_VALUE = re.compile(rb'\s*:\s*"([^"\\]+)"')
ENVELOPE_BYTES = 400
"""How far into a line its envelope's ``event_type`` is looked for (it comes first in this
release's lines and in GlossoGen 0.5.x's)."""


def envelope_type(data: bytes, start: int, end: int) -> str | None:
    """The ``event_type`` named by the envelope of the line ``data[start:end]``, or None.

    The first ``"event_type": "<name>"`` within the line's first :data:`ENVELOPE_BYTES` bytes
    (a quoted key inside a string value is escaped, so it never matches); the line is not
    parsed.
    """
    limit = min(start + ENVELOPE_BYTES, end)
    at = data.find(_TYPE_KEY, start, limit)
    while at >= 0:
        found = _TYPE_VALUE.match(data, at + 12, limit)
        if found is not None:
            return found.group(1).decode()
        at = data.find(_TYPE_KEY, at + 12, limit)
    return None


@dataclass
class LinesRead:
    """What :func:`read_lines` found in one log.

    Attributes:
        lines: ``(line number, event type, line)`` of each complete line of a chosen type, in
            log order, unparsed (numbers are 1-based, blank lines counted).
        untyped: The numbers of the complete, non-blank lines naming no event type (not JSON,
            or no ``event_type`` in the envelope): invalid by the reader's rule, and possibly
            a line of a chosen type.
        torn: The number of a last line with no newline (cut off mid-write, or still being
            written), which is not read; None if none.
        torn_type: The event type its envelope names, if it got that far.
        stopped_at: The type of ``stop`` whose line ended the walk (``lines`` and ``untyped``
            then cover the log up to it only); None when the whole log was walked.
    """

    lines: list[tuple[int, str, bytes]] = field(default_factory=list)
    untyped: list[int] = field(default_factory=list)
    torn: int | None = None
    torn_type: str | None = None
    stopped_at: str | None = None


def read_lines(
    url: str,
    types: Set[str],
    stop: Set[str] = frozenset(),
    storage_options: dict[str, Any] | None = None,
) -> LinesRead:
    """Walk the log at ``url`` once, keeping the lines whose envelope names one of ``types``.

    The log is read in one request; each line's envelope is read (:func:`envelope_type`) and
    no line is parsed. A line of a type in ``stop`` ends the walk (a reader that must fold the
    whole log instead, e.g. one that meets a ``run_resumed``).

    Raises:
        FileNotFoundError: the log does not exist.
        StorageError: the storage is unreachable.
    """
    with _open(url, storage_options) as f:
        data = f.read()
    read = LinesRead()
    end = data.rfind(b"\n") + 1
    if data[end:].strip():
        read.torn = data.count(b"\n", 0, end) + 1
        read.torn_type = envelope_type(data, end, len(data))
    find, kept, untyped = data.find, read.lines, read.untyped
    # Lines of a known type neither chosen nor stopping the walk are the common case: two
    # searches and a set lookup each. Every other line is judged by the rule itself.
    passed = {kind.encode() for kind in event_classes()} - {k.encode() for k in (*types, *stop)}
    window = ENVELOPE_BYTES
    pos, number = 0, 0
    while pos < end:  # hot: one step per line of every log an export reads
        stop_at = find(b"\n", pos, end)
        number += 1
        at = find(_USUAL_KEY, pos, pos + window)
        if 0 <= at < stop_at:
            close = find(b'"', at + 14, stop_at)
            if data[at + 14 : close] in passed and close < pos + window:
                pos = stop_at + 1
                continue
        kind = envelope_type(data, pos, stop_at)
        if kind is None:
            if data[pos:stop_at].strip():
                untyped.append(number)
        elif kind in stop:
            read.stopped_at = kind
            break
        elif kind in types:
            kept.append((number, kind, data[pos:stop_at]))
        pos = stop_at + 1
    return read


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
