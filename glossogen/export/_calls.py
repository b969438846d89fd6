"""The ``call_level`` table: one row per model request of a run, read through its ``RunView``.

A row is an answered request (``llm_response_received``), a failed attempt of an agent cycle
(``agent_run_cycle_failed``, one per failed attempt: ``failure_kind`` is its ``error_kind``,
``retries`` the cycle's attempts before it), a request the engine stopped waiting for
(``model_request_abandoned``: ``failure_kind`` ``abandoned`` when it was never answered, its
round the one it was sent in) or one the spend cap refused (``model_request_refused``:
``failure_kind`` ``refused_by_cap``).
Only the events that count are read (:class:`~glossogen.eventlog.RunView`), so a superseded
attempt of a resumed run adds no row.

``latency_seconds`` and ``finish_reason`` are columns the log does not record yet: they stay
blank (never 0) until the engine writes them. ``retries`` is blank on an answered request
(the log does not say how many tries it took), and ``model``/``provider`` of a failed cycle
are the seat's model at that moment.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from glossogen.export._cells import frame_from_rows
from glossogen.export._selection import RunRecord

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
        RunView,
    )

    view = RunView.load(record.log_url)
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
        elif isinstance(event, AgentRunCycleFailed):
            row["failure_kind"] = event.error_kind
            row["retries"] = max(event.attempts - 1, 0)
        elif isinstance(event, ModelRequestAbandoned):
            row["round_number"] = event.sent_in_round
            row["failure_kind"] = None if event.answered else "abandoned"
        else:
            row["failure_kind"] = "refused_by_cap"
            row["cost_usd"] = 0.0
            for name in _TOKENS:
                row[name] = 0
        rows.append(row)
    return rows


def call_frame(records: list[RunRecord]) -> pl.DataFrame:
    """Return the ``call_level`` table of ``records`` (header only when none made a request)."""
    rows = [row for record in records for row in call_rows(record)]
    return frame_from_rows(rows, CALL_COLUMNS)


__all__ = ["CALL_COLUMNS", "call_frame", "call_rows"]
