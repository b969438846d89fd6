"""Read a run's log for the metrics: only the event types they read are parsed.

Evaluation reads a log once (its bytes, hashed for ``log_sha256`` and parsed from the same
bytes) and folds what it parsed through :class:`~glossogen.eventlog.RunView`, as every reader
of a run does. What it parses is :data:`FACTS` (what :class:`~glossogen.evaluation._run.
LoadedRun` describes: seats, rounds, verdicts, messages, the ending) and the types the planned
metrics declare (:attr:`~glossogen.evaluation._contract.Metric.reads`); a metric that declares
nothing (a plug-in) gets every event, read by :func:`~glossogen.eventlog.read_event_bytes`.

Each line is taken by its ``event_type``, found where this platform's writer puts it (after a
36-character ``event_id``), before any JSON parsing: a line of a type read is validated into its
class straight from its bytes (pydantic's JSON parser); a line of a known type no metric reads
is skipped unparsed. Anything else — a line in another shape, of an unknown type, that fails
validation, that holds ``NaN``/``Infinity``, a blank or padded line — goes through the event-log
reader's own rules line by line, so the counts of skipped lines (``log_lines_skipped``) are the
reader's. A log of GlossoGen 0.5, or one whose counting could depend on a line left unparsed (a
setup event after an unread one within a round: :func:`~glossogen.eventlog.split_attempts`), is
read whole by the reader.

One difference, by design: a line of a type no metric reads that looks whole (it ends with
``}``) is not checked, so were it to fail validation it would not count as skipped; a torn line
does not look whole and is counted as the reader counts it.

The priced events the planned metrics read only through the run's spend
(:attr:`~glossogen.evaluation._contract.Metric.usage`) and no metric reads whole are read for
their usage alone where the event log supports it (:data:`~glossogen.eventlog.USAGE_TYPES`):
an ``llm_response_received`` line of this writer's shape becomes a usage record
(:func:`~glossogen.eventlog.call_usage`), left unparsed for the counting rules; one that is
not goes through the reader's rules. The same difference holds for the parts of such a line
left unparsed (its text and tool calls).
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from glossogen.eventlog import (
    RESUMABLE,
    USAGE_TYPES,
    EventLogRead,
    RoundCompleted,
    RunResumed,
    SimulationEnded,
    call_usage,
    event_classes,
    is_legacy,
    read_event_bytes,
)

FACTS: frozenset[str] = frozenset(
    {
        "simulation_started",
        "agent_registered",
        "agent_swapped_mid_run",
        "round_started",
        "round_completed",
        "round_result_recorded",
        "run_resumed",
        "simulation_ended",
        "message_sent",
    }
)
"""Event types every evaluation parses: what a loaded run describes (and its counting rules)."""

_ID = b'{"event_id":"'
_TYPE = b'","event_type":"'
_TYPE_AT = len(_ID) + 36
_TAG_AT = _TYPE_AT + len(_TYPE)
_PHASE = b',"phase":"'
_CLOSE = ord("}")
_HEAD = re.compile(rb'\{"event_id":"[^"]{35}[^"\\]","event_type":"([^"]*)"')
"""A line's head as this platform's writer puts it: a 36-character id, then the type."""


_MAY_CLOSE: frozenset[type] = frozenset({RunResumed, RoundCompleted, SimulationEnded})
"""The event classes that may close what is pending (:func:`_counted`); final classes, so
``type(event) in`` it is an ``isinstance`` at a fraction of the cost."""


class _Whole(Exception):  # noqa: N818 (a signal, not an error)
    """The log must be read whole by the event-log reader."""


def read_for_metrics(
    data: bytes, reads: frozenset[str] | None, usage: frozenset[str] = frozenset()
) -> EventLogRead:
    """Read the log ``data`` for metrics that read ``reads`` (None: every event).

    ``usage``: event types read for their usage alone (the run's spend); those of
    :data:`~glossogen.eventlog.USAGE_TYPES` that no metric reads whole are taken as usage
    records (``EventLogRead.usage``), any other is read whole.

    Returns:
        The events of the types read, in log order, the usage records, and the reader's counts
        of skipped lines.
    """
    if reads is None:
        return read_event_bytes(data)
    whole = reads | (usage - USAGE_TYPES)
    with no_collection():
        try:
            return _read_some(data, whole, (usage & USAGE_TYPES) - whole)
        except _Whole:
            return read_event_bytes(data)


@contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while one log's events are built.

    Nests: within an outer pause (a cohort's run, ``_cohort.evaluate_batch``) it leaves the
    collector as it found it. Hundreds of events, each a few containers, all kept: a
    collection in the middle finds no garbage and costs about a quarter of the parse
    (measured on the bench cohort's logs).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _read_some(data: bytes, reads: frozenset[str], usage: frozenset[str]) -> EventLogRead:
    known = event_classes()
    wanted: dict[bytes, Any] = {
        t.encode(): known[t].__pydantic_validator__.validate_json for t in reads if t in known
    }
    unread = {t.encode() for t in known if t not in reads and t not in usage}
    priced = {t.encode() for t in usage if t in known}
    result = EventLogRead()
    events, numbers, for_usage = result.events, result.line_numbers, result.usage.append
    find, match, n = data.find, _HEAD.match, len(data)
    pos, number = 0, 0
    unread_since: list[int] = []  # where each line left unparsed since the last boundary starts
    for_event, for_number, for_unread = events.append, numbers.append, unread_since.append
    while pos < n:
        end = find(b"\n", pos)
        terminated = end >= 0
        if not terminated:
            end = n
        start, pos = pos, end + 1
        number += 1
        head = match(data, start, end)
        tag = b""
        if head is not None and data[end - 1] == _CLOSE:
            tag = head[1]
        elif not events and number == 1:
            raise _Whole  # not this writer's log (GlossoGen 0.5): the reader's rules, whole
        if tag in unread and terminated:
            for_unread(start)
            continue
        if tag in priced and terminated:
            record = call_usage(data, start, end, number)
            if record is not None:  # else the reader's rules read the line whole
                for_unread(start)  # for the split rule, a line left unparsed
                for_usage(record)
                continue
        validate = wanted.get(tag)
        line = data[start:end]
        event = None
        # A line holding NaN or Infinity is the reader's (it refuses them; pydantic would
        # not); a byte search for "N" or "I" first (memchr) spares most lines the longer one.
        if validate is not None and not (
            (b"N" in line and b"NaN" in line) or (b"I" in line and b"Infinity" in line)
        ):
            try:
                event = validate(line)
            except ValidationError:
                event = None  # its class refuses it: the reader's rules count it
        if event is not None:
            # only a setup event or a boundary can matter to lines left unparsed
            if unread_since and (event.phase == "setup" or type(event) in _MAY_CLOSE):
                _counted(event, unread_since, data)
            for_event(event)
            for_number(number)
            continue
        _by_the_reader(result, line, terminated, number)
        if len(events) > len(numbers):  # the reader took it as an event of a type read
            _counted(events[-1], unread_since, data)
            for_number(number)
    return result


def _counted(event: Any, unread_since: list[int], data: bytes) -> None:
    """Follow :func:`split_attempts` far enough to know the lines left unparsed cannot change it.

    ``unread_since`` holds where each line left unparsed since the last boundary starts. A
    ``setup`` event is kept when nothing is pending; were one of those lines pending (any not in
    phase ``setup``), the full reading would keep the event pending instead: then the log is
    read whole. A boundary (``run_resumed``, ``round_completed``, a final ``simulation_ended``)
    empties what is pending.
    """
    if isinstance(event, RunResumed | RoundCompleted) or (
        isinstance(event, SimulationEnded) and event.status not in RESUMABLE
    ):
        unread_since.clear()
    elif event.phase == "setup" and not all(_setup(data, at) for at in unread_since):
        raise _Whole


def _setup(data: bytes, start: int) -> bool:
    """Whether the line of this writer's shape at ``start`` is in phase ``setup``."""
    at = data.find(_PHASE, start + _TAG_AT, start + _TAG_AT + 160)
    return at >= 0 and data.startswith(b"setup", at + len(_PHASE))


def _by_the_reader(result: EventLogRead, line: bytes, terminated: bool, number: int) -> None:
    """Classify one line by the event-log reader's rules; add it to ``result``."""
    stripped = line.strip()
    if not stripped:
        return  # a blank line: not counted
    if b'"schema_version"' not in stripped:
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and is_legacy(obj):
            raise _Whole  # a GlossoGen 0.5 line: its upcaster reads the log in order
    one = read_event_bytes(stripped + b"\n" if terminated else stripped)
    result.events += one.events
    result.invalid_lines += one.invalid_lines
    result.invalid_line_numbers += [number] * one.invalid_lines
    result.unknown_lines += one.unknown_lines
    result.raw_unknown += one.raw_unknown
    result.truncated_tail = result.truncated_tail or one.truncated_tail
