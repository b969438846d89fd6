"""Model usage summed from a log's ``llm_response_received`` lines, mostly without parsing them.

A run logs hundreds of responses, most of their bytes text, and the export needs only each
one's agent, tokens and cost, when ``simulation_ended`` does not carry them (GlossoGen 0.5.x
runs, runs that never ended). A GlossoGen 0.5.x line is read by one anchored match, a line of
this release by a few byte searches (:func:`_quick_usage`); a line neither reads is parsed and
validated (:class:`~glossogen.export._lines.LineParser`) and, if bad, counted and skipped.
"""

from __future__ import annotations

import mmap
import re
from typing import Any

from glossogen.eventlog import add_usd
from glossogen.export._lines import LineParser, event_type

_LLM = b'"llm_response_received"'
_STR_AT = re.compile(rb'\s*:\s*"([^"\\]*)"')
_INT_AT = re.compile(rb"\s*:\s*(\d+)\s*[,}]")
_COST_AT = re.compile(rb"\s*:\s*(null|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[,}]")
_OWN_KEYS = (b'"model"', b'"provider"', b'"cycle"')
_LEGACY_USAGE_AT = re.compile(
    rb'(?:(?<="event_type":)|(?<="event_type": ))"llm_response_received"'
    rb'\s*,\s*"agent_id"\s*:\s*"([^"\\\n]*)"[^\n]*'
    rb'"usage"\s*:\s*\{\s*"input_tokens"\s*:\s*(\d+)\s*,\s*"output_tokens"\s*:\s*(\d+)\s*[,}]'
    rb"[^\n]*\}$",
    re.M,
)
"""A GlossoGen 0.5.x response line from its envelope's type on: the agent id right after the
type, and the last ``usage`` block's tokens (one match per line, ending at the line's end)."""

Usage = tuple[str, int, int, float | None]
"""One response's ``(agent_id, input_tokens, output_tokens, cost_usd)``."""


add_cost = add_usd  # the log's one rule for summing costs


def _quick_usage(data: bytes | mmap.mmap, a: int, hit: int, b: int) -> Usage | None:
    """Read the usage of the response line ``data[a:b]`` (type found at ``hit``) unparsed.

    The type must be the envelope's (the line's first ``"event_type"``, in its first 400
    bytes), and the agent id is read there too (the envelope and ``agent_id`` come first in
    both shapes). Each usage key's last occurrence is taken, since usage follows every
    free-form field (text, thinking, tool calls) in both shapes; a quote inside a JSON string
    is escaped, so no key can be matched inside a value. A line of this release must also name
    its ``model``, ``provider``, ``cycle`` and ``cost_usd``; a GlossoGen 0.5.x line must hold
    the tokens in its ``usage`` (it recorded no cost: None). None when anything is missing or
    not a number, or the line is not a complete object: the caller parses and validates it.
    """
    if hit - a > 400 or data[b - 1 : b] != b"}" or data.find(b'"event_type"', a, hit) < hit - 16:
        return None
    at = data.find(b'"agent_id"', a, a + 400)
    agent = _STR_AT.match(data, at + 10, b) if at >= 0 else None
    if agent is None:
        return None
    i, o = data.rfind(b'"input_tokens"', at, b), data.rfind(b'"output_tokens"', at, b)
    tokens_in = _INT_AT.match(data, i + 14, b) if i >= 0 else None
    tokens_out = _INT_AT.match(data, o + 15, b) if o >= 0 else None
    if tokens_in is None or tokens_out is None:
        return None
    cost: float | None = None
    if data.find(b'"schema_version"', a, min(a + 400, b)) >= 0:
        if any(data.find(key, a, b) < 0 for key in _OWN_KEYS):
            return None
        c = data.rfind(b'"cost_usd"', at, b)
        spent = _COST_AT.match(data, c + 10, b) if c >= 0 else None
        if spent is None:
            return None
        cost = None if spent.group(1) == b"null" else float(spent.group(1))
    elif not 0 <= data.rfind(b'"usage"', at, b) < min(i, o):
        return None
    return agent.group(1).decode(), int(tokens_in.group(1)), int(tokens_out.group(1)), cost


def sum_responses(
    data: bytes | mmap.mmap, start: int, end: int, parser: LineParser
) -> dict[str, list[Any]]:
    """Sum the usage of each agent's ``llm_response_received`` lines in ``data[start:end]``.

    A GlossoGen 0.5.x line is read by one anchored match (:data:`_LEGACY_USAGE_AT`; hundreds
    per run, most of their bytes text: this loop is the 0.5 export's hot path), a line of this
    release by :func:`_quick_usage`; any other is parsed and validated, a bad one counted and
    skipped.

    Returns:
        Agent id to ``[input_tokens, output_tokens, requests, cost_usd]`` (cost None when some
        response was not costed; always None for GlossoGen 0.5.x, which recorded none).
    """
    sums: dict[bytes | str, list[Any]] = {}
    hit = data.find(_LLM, start, end)
    while hit >= 0:
        legacy = _LEGACY_USAGE_AT.match(data, hit, end)
        if legacy is not None:
            agent_b, tokens_in, tokens_out = legacy.groups()
            total = sums.get(agent_b)
            if total is None:
                total = sums[agent_b] = [0, 0, 0, None]
            total[0] += int(tokens_in)
            total[1] += int(tokens_out)
            total[2] += 1
            total[3] = None
            hit = data.find(_LLM, legacy.end(), end)
            continue
        a = data.rfind(b"\n", 0, hit) + 1
        b = data.find(b"\n", hit, end)
        b = end if b < 0 else b
        read = _quick_usage(data, a, hit, b)
        if read is None:
            line = data[a:b]
            obj = parser.parse(line, a) if event_type(line) == "llm_response_received" else None
            if obj is not None:
                read = (str(obj["agent_id"]), int(obj.get("input_tokens") or 0),
                        int(obj.get("output_tokens") or 0), obj.get("cost_usd"))  # fmt: skip
        if read is not None:
            total = sums.setdefault(read[0], [0, 0, 0, 0.0])
            total[0] += read[1]
            total[1] += read[2]
            total[2] += 1
            total[3] = add_cost(total[3], read[3])
        hit = data.find(_LLM, b, end)
    out: dict[str, list[Any]] = {}
    for key, total in sums.items():
        agent_id = key.decode() if isinstance(key, bytes) else key
        if agent_id in out:  # one agent in both shapes
            mine = out[agent_id]
            total = [*(x + y for x, y in zip(mine[:3], total[:3], strict=True)),
                     add_cost(mine[3], total[3])]  # fmt: skip
        out[agent_id] = total
    return out


__all__ = ["Usage", "add_cost", "sum_responses"]
