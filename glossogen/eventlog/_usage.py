"""A model call read for its usage alone: what the spend folds take of ``llm_response_received``.

A reading that needs a run's spend (:attr:`~glossogen.eventlog.RunView.spend`,
``spend_by_round``) and nothing else of its model calls — evaluation's metrics that declare
``usage=`` — takes each ``llm_response_received`` line of this writer's shape for its usage
alone (:func:`call_usage`): the line without its ``text``, ``thinking`` and ``tool_calls`` is
parsed with orjson, and the fields the folds read (event id, round, phase, agent, tokens,
cost) are kept as a :class:`CallUsage` instead of a validated event (building one costs most
of a cohort run's reading). The view folds the records with the priced events, in log order
(:func:`with_usage`), so the sums are the same floats as over the events.

The fields kept are checked against the event class's types (strictly: a value its validation
would convert, such as a whole-number float for a count, sends the line to the reader's rules).
The parts left unparsed are not checked, as an unread line is not: were they to fail the event
class's validation, the line would count, not be skipped.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

import orjson

if TYPE_CHECKING:
    from glossogen.eventlog._reader import EventLogRead

USAGE_TYPES: frozenset[str] = frozenset({"llm_response_received"})
"""Event types a reading can take for their usage alone (any other is validated whole)."""

_TEXT = b',"text":'
"""Where the parts left unparsed begin (the field after ``cycle``, as the writer orders them)."""
_USAGE = b',"input_tokens":'
"""Where the usage begins (after ``tool_calls``); the last one on the line: a key inside a tool
call's arguments comes before it, and no string holds an unescaped quote."""
_PHASES = frozenset({"setup", "main", "postmortem"})


class CallUsage(NamedTuple):
    """The usage of one model call (an ``llm_response_received`` line), and the line it is on."""

    event_id: str
    round_number: int
    phase: str
    agent_id: str
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int
    output_tokens: int
    cost_usd: float | None
    line: int


_KEPT = itemgetter(*CallUsage._fields[:-1])
_TYPES = (str, int, str, str, int, int, int, int, int, float)
"""The types of the kept fields as this writer writes them (a call of unknown cost: None)."""
_UNCOSTED = (*_TYPES[:-1], type(None))


def call_usage(data: bytes, start: int, end: int, line: int) -> CallUsage | None:
    """The usage of the ``llm_response_received`` line ``data[start:end]`` (line ``line``).

    None when the line is not in this writer's shape (every kept field written, of its class's
    type) or does not parse: the caller reads it by the reader's rules then.
    """
    cut = data.find(_TEXT, start, end)
    usage = data.rfind(_USAGE, start, end)
    if cut < 0 or usage < cut:
        return None
    try:
        kept = _KEPT(orjson.loads(data[start:cut] + data[usage:end]))
    except (orjson.JSONDecodeError, KeyError, TypeError):  # NaN, a torn middle, a field left out
        return None
    types = tuple(map(type, kept))
    if (types != _TYPES and types != _UNCOSTED) or kept[2] not in _PHASES:
        return None
    return tuple.__new__(CallUsage, (*kept, line))


_LINE = itemgetter(0)


def with_usage(read: EventLogRead, types: frozenset[type]) -> list[object]:
    """The events of ``types`` among ``read``'s and its usage records, in log order (by line)."""
    calls: list[tuple[int, object]] = [
        (n, e) for n, e in zip(read.line_numbers, read.events, strict=True) if type(e) in types
    ]
    calls += [(u.line, u) for u in read.usage]
    calls.sort(key=_LINE)
    return [e for _, e in calls]


def copied_usage(read: EventLogRead, first_own: int) -> frozenset[str]:
    """The ``event_id`` of a derived log's copied calls read for their usage alone.

    Those between ``read``'s first event (``simulation_started``) and its event ``first_own``
    (its first ``run_resumed``, where what it played itself begins).
    """
    numbers = read.line_numbers
    if not numbers:
        return frozenset()
    after = numbers[0]
    before = numbers[first_own] if first_own < len(numbers) else float("inf")
    return frozenset(u.event_id for u in read.usage if after < u.line < before)
