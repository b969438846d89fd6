"""The ``call_level`` table: one row per model request of a run, read through its ``RunView``.

A row is an answered request (``llm_response_received``), a failed attempt of an agent cycle
(``agent_run_cycle_failed``, one per failed attempt: ``failure_kind`` is its ``error_kind``,
``retries`` the cycle's attempts before it), a request the engine stopped waiting for
(``model_request_abandoned``: ``failure_kind`` ``abandoned`` when it was never answered, its
round the one it was sent in) or one the spend cap refused (``model_request_refused``:
``failure_kind`` ``refused_by_cap``).
Only the events that count are read (:class:`~glossogen.eventlog.RunView`), so a superseded
attempt of a resumed run adds no row.

``latency_seconds`` is the time from the request's ``model_request_sent`` to the event that
settled it (its answer, its failed attempt, or an abandoned request's late answer), both the
game clock's timestamps: blank for a request never sent (refused by the cap), one never
answered (abandoned unanswered: killed, or still out at the end), and one the log sent no
``model_request_sent`` for (an unbilled scripted seat, a log written before the event
existed). On the virtual clock (every seat scripted, or the tests' loopback models) a model
call takes no game time, so a billed request there reads 0.

``finish_reason`` is the provider's, as pydantic-ai normalises it (``stop``, ``length``,
``tool_call``, ``content_filter``, ``error``), read from the seat's history
(``agent_history_appended``: the answered response whose text and tool-call ids are the
row's, in order): blank on a failed, abandoned or refused request, where no response was kept,
and where the model reported none (a scripted seat). ``retries`` is blank on an answered
request (the log does not say how many tries it took), and ``model``/``provider`` of a failed
cycle are the seat's model at that moment.

A log line that does not parse or validate costs only itself, and is named in a warning of the
``glossogen.export`` logger (``<run id>: call_level: 1 damaged log line skipped (line 4) in
<log>``), as the message table names its own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from glossogen.export._cells import frame_from_rows
from glossogen.export._record import RunRecord

log = logging.getLogger("glossogen.export")

CALL_COLUMNS = [
    "run_id",
    "scenario_name",
    "round_number",
    "phase",
    "agent_id",
    "role",
    "model",
    "provider",
    "cycle",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "cost_usd",
    "latency_seconds",
    "retries",
    "finish_reason",
    "failure_kind",
]
"""The table's columns, in order (``agent_id`` is the seat)."""

CALL_RUN_RENAMED = {"provider": "run_provider"}
"""Run-context columns a call row also holds, to the name the run's value takes when the run
context is joined: ``provider`` is the call's, ``run_provider`` the run's ``--provider``."""

_TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def call_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Return one run's ``call_level`` rows, in log order (see the module docstring)."""
    from glossogen.eventlog import (
        AgentRegistered,
        AgentRunCycleFailed,
        AgentSwappedMidRun,
        LlmResponseReceived,
        ModelRequestAbandoned,
        ModelRequestRefused,
        ModelRequestSent,
        RunView,
    )

    view = RunView.load(record.log_url)
    if view.read.invalid_line_numbers:  # a torn last line is a run still being written
        from glossogen.export._lines import damaged_note

        numbers = view.read.invalid_line_numbers
        log.warning("%s", damaged_note(f"{record.run_id}: call_level", numbers, record.log_url))
    sent = {e.request_id: e.timestamp for e in view.events if isinstance(e, ModelRequestSent)}
    finishes = _FinishReasons(view.counted)
    roles = {a.agent_id: a.role or None for a in record.agents}
    seats: dict[str, tuple[str, str]] = {}
    rows: list[dict[str, Any]] = []
    for event in view.counted:
        if isinstance(event, (AgentRegistered, AgentSwappedMidRun)):
            seats[event.agent_id] = (str(event.model or ""), str(event.provider or ""))
            continue
        if not isinstance(
            event,
            (LlmResponseReceived, AgentRunCycleFailed, ModelRequestAbandoned, ModelRequestRefused),
        ):
            continue
        model, provider = seats.get(event.agent_id, ("", ""))
        row: dict[str, Any] = dict.fromkeys(CALL_COLUMNS)
        row |= {
            "run_id": record.run_id,
            "scenario_name": record.scenario,
            "round_number": event.round_number,
            "phase": event.phase,
            "agent_id": event.agent_id,
            "role": roles.get(event.agent_id),
            "model": getattr(event, "model", None) or model or None,
            "provider": getattr(event, "provider", None) or provider or None,
            "cost_usd": getattr(event, "cost_usd", None),
        }
        for name in _TOKENS:
            row[name] = getattr(event, name, None)
        if isinstance(event, LlmResponseReceived):
            row["cycle"] = event.cycle
            row["latency_seconds"] = _latency(sent, [event.request_id], event.timestamp)
            row["finish_reason"] = finishes.of(event)
        elif isinstance(event, AgentRunCycleFailed):
            row["failure_kind"] = event.error_kind
            row["retries"] = max(event.attempts - 1, 0)
            row["latency_seconds"] = _latency(sent, event.request_ids, event.timestamp)
        elif isinstance(event, ModelRequestAbandoned):
            row["round_number"] = event.sent_in_round
            row["failure_kind"] = None if event.answered else "abandoned"
            if event.answered:
                row["latency_seconds"] = _latency(sent, [event.request_id], event.timestamp)
        else:
            row["failure_kind"] = "refused_by_cap"
            row["cost_usd"] = 0.0
            for name in _TOKENS:
                row[name] = 0
        rows.append(row)
    return rows


def _latency(
    sent: dict[str, datetime], ids: Sequence[str | None], settled: datetime
) -> float | None:
    """Seconds from the one sent request of ``ids`` to ``settled``; None unless exactly one."""
    times = [sent[i] for i in ids if i is not None and i in sent]
    if len(times) != 1:
        return None
    return (settled - times[0]).total_seconds()


class _FinishReasons:
    """Each seat's answered responses in its history, to read a response's ``finish_reason``.

    A seat's history is its ``agent_history_appended`` messages in log order (a later one
    replacing from its ``from_index``). An ``llm_response_received`` is matched to the first
    response not yet matched whose text and tool-call ids are its own.
    """

    def __init__(self, events: list[Any]) -> None:
        from glossogen.eventlog import AgentHistoryAppended

        histories: dict[str, list[dict[str, Any]]] = {}
        for event in events:
            if isinstance(event, AgentHistoryAppended):
                history = histories.setdefault(event.agent_id, [])
                at = len(history) if event.from_index is None else event.from_index
                history[at:] = event.messages
        self.responses = {
            agent: [m for m in history if isinstance(m, dict) and m.get("kind") == "response"]
            for agent, history in histories.items()
        }
        self.next = dict.fromkeys(self.responses, 0)

    def of(self, event: Any) -> str | None:
        """The ``finish_reason`` of the response ``event`` logged (None when not found)."""
        responses = self.responses.get(event.agent_id, [])
        wanted = (event.text, [c.get("tool_call_id") for c in event.tool_calls])
        for at in range(self.next.get(event.agent_id, 0), len(responses)):
            if _signature(responses[at]) == wanted:
                self.next[event.agent_id] = at + 1
                reason = responses[at].get("finish_reason")
                return str(reason) if reason else None
        return None


def _signature(response: dict[str, Any]) -> tuple[str, list[Any]]:
    """A logged response's text (its text parts joined) and its tool calls' ids, in order."""
    parts = [p for p in response.get("parts") or [] if isinstance(p, dict)]
    text = "".join(str(p.get("content") or "") for p in parts if p.get("part_kind") == "text")
    calls = [p.get("tool_call_id") for p in parts if p.get("part_kind") == "tool-call"]
    return text, calls


def call_frame(records: list[RunRecord]) -> pl.DataFrame:
    """Return the ``call_level`` table of ``records`` (header only when none made a request)."""
    rows = [row for record in records for row in call_rows(record)]
    return frame_from_rows(rows, CALL_COLUMNS)


__all__ = ["CALL_COLUMNS", "CALL_RUN_RENAMED", "call_frame", "call_rows"]
