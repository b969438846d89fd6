"""The event-log tables: ``message_level`` and ``round_context``, read one run at a time.

Each selected run's log is streamed line by line; a line's ``event_type`` is read from its
first bytes and only the events a table needs are parsed (``message_sent``,
``injection_delivered``, the phase markers and the rare roster changes), so an event these
tables discard can never fail them. Each line parsed is validated against its event model; a
line that fails to parse or validate is skipped and counted (a warning names the run, the
table, the count and the line numbers), so one damaged run costs its own rows, not the export.
GlossoGen 0.5.x lines go through :class:`~glossogen.eventlog.LegacyUpcaster` first.

Memory holds one run's rows at a time: the column set is fixed before the first run is read
(the run context from the selection, the roster from each run's ``agent_registered``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import polars as pl
from pydantic_core import from_json

from glossogen.evaluation import character_entropy_bits, gzip_compression_ratio
from glossogen.export._cells import frame_from_rows, safe_text
from glossogen.export._channels import channel_map
from glossogen.export._frames import context_columns, context_frame, run_context, with_context
from glossogen.export._lines import (
    complete_end,
    damaged_note,
    find_lines,
    line_number,
    open_log,
    valid_event,
)
from glossogen.export._runlog import roster_may_change
from glossogen.export._selection import RunRecord
from glossogen.storage import is_local, join, open_fs, translate_errors

log = logging.getLogger("glossogen.export")

MESSAGE_COLUMNS = [
    "run_id",
    "scenario_name",
    "round_number",
    "phase",
    "channel_id",
    "message_index_in_round",
    "message_id",
    "message_timestamp",
    "is_primary_channel",
    "team_id",
    "sender_agent_id",
    "sender_role",
    "sender_model",
    "sender_provider",
    "text",
    "delivered_text",
    "chars",
    "character_entropy_bits",
    "gzip_compression_ratio",
    "repetition_factor",
]
"""``message_level``'s own columns, in order (the run context follows when repeated)."""

REPETITION_METRIC = "language_repetition"
"""The metric whose sidecar gives ``repetition_factor`` per message id."""

_MESSAGE_EVENTS = {"message_sent", "agent_registered", "agent_swapped_mid_run"}
_CONTEXT_EVENTS = {"injection_delivered"}
_PHASE_EVENTS = {"round_started", "round_advanced", "postmortem_started", "postmortem_ended"}
_SETUP_EVENTS = {"simulation_started"}


def _lines(url: str) -> Iterator[bytes]:
    fs, path = open_fs(url)
    with translate_errors(url, fs):
        if is_local(fs):
            with open(path, "rb") as f:
                yield from f
        else:
            with fs.open(path, "rb") as f:
                yield from f


def _events(record: RunRecord, wanted: set[str], table: str) -> Iterator[dict[str, Any]]:
    """Yield the parsed (and, for 0.5 lines, upcast) events of ``wanted`` types, in log order.

    The lines are found by byte searches (:func:`~glossogen.export._lines.find_lines`) in the
    log, memory-mapped, up to its last complete line; only they are parsed. Roster changes are
    searched for only where the head says they can happen; a GlossoGen 0.5 log also has its
    phase markers and roster read, since its lines carry no phase and the upcaster needs them.
    """
    from glossogen.eventlog import LEGACY_SCHEMA_VERSION, LegacyUpcaster, event_classes, is_legacy

    started = record.facts.started
    legacy = (started or {}).get("schema_version") == LEGACY_SCHEMA_VERSION
    kinds = set(wanted)
    if legacy:
        kinds |= _PHASE_EVENTS | _SETUP_EVENTS | {"agent_registered"}
    elif not roster_may_change(started):
        kinds -= {"agent_registered", "agent_swapped_mid_run"}
    classes = event_classes()
    upcaster: LegacyUpcaster | None = None
    bad: list[int] = []
    with open_log(record.log_url) as data:
        end = complete_end(data)
        resumed = data.find(b'"run_resumed"', 0, end) >= 0
    if resumed:
        # A resumed log may hold a superseded attempt: the typed view knows what counts.
        yield from _counted_events(record, kinds & wanted, table)
        return
    with open_log(record.log_url) as data:
        end = complete_end(data)
        found = sorted(hit for kind in kinds for hit in find_lines(data, kind, 0, end))
        for at, raw in found:
            try:
                obj = from_json(raw)  # pydantic-core's parser: about 3x json.loads here
            except ValueError:
                obj = None
            if isinstance(obj, dict) and is_legacy(obj):
                upcaster = upcaster or LegacyUpcaster()
                obj = upcaster.upcast(obj)
            if not isinstance(obj, dict) or not valid_event(obj, classes):
                bad.append(line_number(data, at))
                continue
            if obj.get("event_type") in wanted:
                yield obj
    if bad:
        log.warning("%s", damaged_note(f"{record.run_id}: {table}", bad))


def _counted_events(record: RunRecord, wanted: set[str], table: str) -> Iterator[dict[str, Any]]:
    """Yield the events of ``wanted`` types that count (:class:`~glossogen.eventlog.RunView`)."""
    from glossogen.eventlog import RunView, event_classes

    classes = event_classes()
    types = tuple(classes[kind] for kind in wanted if kind in classes)
    view = RunView.load(record.log_url)
    for event in view.counted:
        if isinstance(event, types):
            yield event.model_dump(mode="json")
    if view.damaged_lines:
        log.warning("%s: %s: %d damaged line(s) skipped", record.run_id, table, view.damaged_lines)


def _repetition(record: RunRecord) -> dict[str, Any] | None:
    """Return ``message_id -> repetition_factor`` from the sidecar, None if the metric never ran."""
    entry = ((record.report or {}).get("metrics") or {}).get(REPETITION_METRIC)
    if not isinstance(entry, dict) or not entry.get("sidecar"):
        return None
    url = join(record.run_url, str(entry["sidecar"]))
    factors: dict[str, Any] = {}
    try:
        for raw in _lines(url):
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("message_id") is not None:
                factors[str(row["message_id"])] = row.get("repetition_factor")
    except FileNotFoundError:
        log.warning("%s: sidecar %s named by the report is missing", record.run_id, url)
        return None
    return factors


def message_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Return one run's ``message_level`` rows: one per channel message, in log order.

    ``message_index_in_round`` counts from 0 per (round, channel). ``is_primary_channel`` and
    ``team_id`` are empty when the scenario did not rebuild. ``chars`` is ``len(text)`` (the
    composed text); the two measures are the evaluation's helpers on that text, blank for an
    empty text. ``repetition_factor`` is blank when the metric never ran on the run.
    """
    channels = channel_map(record.scenario, record.config, record.run_id)
    factors = _repetition(record)
    seats = {
        a.agent_id: {"role": a.role, "model": a.models[0] if a.models else ":"}
        for a in record.agents
    }
    current: dict[str, tuple[str, str]] = {}
    for agent_id, seat in seats.items():
        provider, _, model = seat["model"].partition(":")
        current[agent_id] = (model, provider)
    counters: dict[tuple[int, str], int] = {}
    rows: list[dict[str, Any]] = []
    for ev in _events(record, _MESSAGE_EVENTS, "message_level"):
        kind = ev["event_type"]
        agent = str(ev.get("agent_id") or "")
        if kind in ("agent_registered", "agent_swapped_mid_run"):
            current[agent] = (str(ev.get("model") or ""), str(ev.get("provider") or ""))
            seats.setdefault(agent, {"role": str(ev.get("role") or "")})
            continue
        text = str(ev.get("text") or "")
        channel = str(ev.get("channel_id") or "")
        round_number = int(ev.get("round_number") or 0)
        key = (round_number, channel)
        index = counters.get(key, 0)
        counters[key] = index + 1
        sender = str(ev.get("sender_id") or "")
        model, provider = current.get(sender, ("", ""))
        message_id = str(ev.get("message_id") or "")
        rows.append(
            {
                "run_id": record.run_id,
                "scenario_name": record.scenario,
                "round_number": round_number,
                "phase": ev.get("phase"),
                "channel_id": channel,
                "message_index_in_round": index,
                "message_id": message_id,
                "message_timestamp": ev.get("timestamp"),
                "is_primary_channel": channels.is_primary(channel),
                "team_id": channels.team_of(channel),
                "sender_agent_id": sender,
                "sender_role": seats.get(sender, {}).get("role") or None,
                "sender_model": model or None,
                "sender_provider": provider or None,
                "text": text,
                "delivered_text": str(ev.get("delivered_text") or ""),
                "chars": len(text),
                "character_entropy_bits": character_entropy_bits(text),
                "gzip_compression_ratio": gzip_compression_ratio(text),
                "repetition_factor": None if factors is None else factors.get(message_id),
            }
        )
    return rows


def roster(records: list[RunRecord]) -> list[str]:
    """Return every agent id registered in the selection, in order of first registration."""
    return list(dict.fromkeys(a.agent_id for r in records for a in r.agents))


def context_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Return one run's ``round_context`` rows: one per round with an injection, in order.

    ``injection.<agent_id>`` holds the briefing(s) delivered in the main phase of the round,
    ``postmortem_injection.<agent_id>`` the one(s) that opened its postmortem; several are
    joined by a blank line (rendered as spaces in the CSV).
    """
    rounds: dict[int, dict[str, Any]] = {}
    for ev in _events(record, _CONTEXT_EVENTS, "round_context"):
        number = int(ev.get("round_number") or 0)
        row = rounds.setdefault(
            number,
            {"run_id": record.run_id, "scenario_name": record.scenario, "round_number": number},
        )
        prefix = "postmortem_injection." if ev.get("phase") == "postmortem" else "injection."
        col = f"{prefix}{ev.get('agent_id')}"
        text = str(ev.get("text") or "")
        row[col] = f"{row[col]}\n\n{text}" if row.get(col) else text
    return [rounds[n] for n in sorted(rounds)]


def log_table_columns(
    name: str, records: list[RunRecord], repeat_run_columns: bool
) -> tuple[list[str], list[dict[str, Any]] | None]:
    """Return a log table's columns and, when repeated, each run's context row."""
    if name == "round_context":
        agents = roster(records)
        cols = ["run_id", "scenario_name", "round_number"]
        cols += [f"injection.{a}" for a in agents]
        cols += [f"postmortem_injection.{a}" for a in agents]
        return cols, None
    if not repeat_run_columns:
        return list(MESSAGE_COLUMNS), None
    contexts = [run_context(r) for r in records]
    own = set(MESSAGE_COLUMNS)
    return MESSAGE_COLUMNS + [c for c in context_columns(contexts) if c not in own], contexts


def log_frame(
    name: str, records: list[RunRecord], *, repeat_run_columns: bool = True
) -> Iterator[pl.DataFrame]:
    """Yield one frame per run of table ``name`` (``message_level`` or ``round_context``).

    Every frame has the columns of :func:`log_table_columns`, text cells already
    spreadsheet-safe. The run context is built and made safe once, then joined to each run's
    rows.
    """
    columns, _ = log_table_columns(name, records, repeat_run_columns)
    if name == "round_context":
        for record in records:
            yield frame_from_rows(context_rows(record), columns, clean=True)
        return
    context = None
    if repeat_run_columns:
        context = safe_text(context_frame(records, columns[len(MESSAGE_COLUMNS) :]))
    for i, record in enumerate(records):
        frame = frame_from_rows(message_rows(record), MESSAGE_COLUMNS, clean=True)
        yield frame if context is None else with_context(frame, context.slice(i, 1))


def write_log_table(
    name: str, records: list[RunRecord], target: str, *, repeat_run_columns: bool = True
) -> tuple[int, dict[str, int]]:
    """Stream table ``name`` to the CSV at ``target``, one run at a time.

    Returns:
        Rows written, and the per-column coverage (distinct runs filling each column).

    Raises:
        StorageError: if ``target`` is unreachable.
    """
    from glossogen.export._write import csv_bytes, publish

    columns, _ = log_table_columns(name, records, repeat_run_columns)
    filled = dict.fromkeys(columns, 0)
    rows = 0
    with publish(target) as f:
        f.write(csv_bytes(pl.DataFrame(schema=dict.fromkeys(columns, pl.String))))
        for frame in log_frame(name, records, repeat_run_columns=repeat_run_columns):
            if frame.height == 0:
                continue
            rows += frame.height
            present = frame.select(pl.all().is_not_null().any()).row(0)
            for col, hit in zip(columns, present, strict=True):
                filled[col] += int(bool(hit))
            f.write(csv_bytes(frame, header=False))
    return rows, filled
