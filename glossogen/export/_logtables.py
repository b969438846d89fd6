"""The event-log tables: ``message_level`` and ``round_context``, read one run at a time.

Each selected run's log is read once and walked line by line by the reader
(:func:`~glossogen.eventlog.read_lines`); a line's ``event_type`` is read from its envelope
and only the events a table needs are parsed (``message_sent``,
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

from glossogen.evaluation import character_entropy_bits, gzip_compression_ratio
from glossogen.export._cells import frame_from_rows, safe_text
from glossogen.export._channels import channel_map
from glossogen.export._frames import context_columns, context_frame, run_context, with_context
from glossogen.export._lines import damaged_note, valid_event
from glossogen.export._record import RunRecord
from glossogen.export._runlog import roster_may_change
from glossogen.scenario import round_outcomes
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
_VERDICT = "round_result_recorded"
_CONTEXT_EVENTS = {"injection_delivered", _VERDICT}
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


_TABLE_EVENTS = _MESSAGE_EVENTS | _CONTEXT_EVENTS


_ROSTER = {"agent_registered", "agent_swapped_mid_run"}
_LEGACY_KINDS = _TABLE_EVENTS | _PHASE_EVENTS | _SETUP_EVENTS
_RESUMED = "run_resumed"


def ranking_kinds(scenario: str) -> set[str]:
    """The event types ``scenario`` names a round's winners in (:attr:`Scenario.ranking_events`)."""
    from glossogen.scenario import UnknownScenarioError, load_scenario

    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError:
        return set()
    return {str(e.model_fields["event_type"].default) for e in cls.ranking_events}


def _events(record: RunRecord, tables: str) -> Iterator[dict[str, Any]]:
    """Yield the parsed events both tables need, in log order, from one read of the log.

    One walk over the log's lines (:func:`~glossogen.eventlog.read_lines`) reads each line's
    envelope only, keeps the lines of ``message_sent``, ``injection_delivered`` and the roster
    changes (the latter only where the head says the roster can change) and numbers the lines
    naming no event type; only the kept lines are parsed and validated against their event
    model. A line that fails, and a line naming no event type (any may have been a message),
    is skipped, counted and named in a warning (``tables`` names the tables it cost). A
    GlossoGen 0.5 log also has its phase markers and head read, upcast in order. A log holding
    a ``run_resumed`` (a resumed or derived run, which may hold a superseded attempt) is read
    through :class:`~glossogen.eventlog.RunView` instead, from the walk's first ``run_resumed``
    on; the fast path is tested to give the same rows as the view on the logs it takes.
    """
    from glossogen.eventlog import (
        LEGACY_SCHEMA_VERSION,
        LegacyUpcaster,
        event_classes,
        is_legacy,
        parse_line,
        read_lines,
    )

    started = record.facts.started
    legacy = (started or {}).get("schema_version") == LEGACY_SCHEMA_VERSION
    ranking = ranking_kinds(record.scenario)
    wanted = set(_LEGACY_KINDS if legacy else _TABLE_EVENTS) | ranking
    if not legacy and not roster_may_change(started):
        wanted -= _ROSTER
    read = read_lines(record.log_url, wanted, stop={_RESUMED})
    if read.stopped_at is not None:
        yield from _counted_events(record, _TABLE_EVENTS | ranking, tables)
        return
    torn = read.torn
    if read.torn_type is not None and read.torn_type not in wanted:
        torn = None  # a cut line of an event these tables do not read costs them nothing
    classes = event_classes()
    upcaster: LegacyUpcaster | None = None
    bad: list[int] = []
    for number, _kind, line in read.lines:
        try:
            obj = parse_line(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and legacy and is_legacy(obj):
            upcaster = upcaster or LegacyUpcaster()
            obj = upcaster.upcast(obj)
        if not isinstance(obj, dict) or not valid_event(obj, classes):
            bad.append(number)
            continue
        if obj.get("event_type") in _TABLE_EVENTS | ranking:
            yield obj
    if bad or read.untyped or torn is not None:
        numbers = sorted({*bad, *read.untyped})
        log.warning("%s", damaged_note(f"{record.run_id}: {tables}", numbers, record.log_url, torn))


def _counted_events(record: RunRecord, wanted: set[str], tables: str) -> Iterator[dict[str, Any]]:
    """Yield the events of ``wanted`` types that count (:class:`~glossogen.eventlog.RunView`)."""
    from glossogen.eventlog import RunView, event_classes

    classes = event_classes()
    types = tuple(classes[kind] for kind in wanted if kind in classes)
    view = RunView.load(record.log_url)
    for event in view.counted:
        if isinstance(event, types):
            yield event.model_dump(mode="json")
    if view.damaged_lines:
        log.warning(
            "%s: %s: %d damaged line(s) skipped in %s",
            record.run_id, tables, view.damaged_lines, record.log_url,
        )  # fmt: skip


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


def run_rows(
    record: RunRecord, tables: str = "message_level, round_context"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return one run's ``message_level`` and ``round_context`` rows, from one read of its log.

    ``message_level``: one row per channel message, in log order. ``message_index_in_round``
    counts from 0 per (round, channel). ``is_primary_channel`` and ``team_id`` are empty when
    the scenario did not rebuild. ``chars`` is ``len(text)`` (the composed text); the two
    measures are the evaluation's helpers on that text, blank for an empty text.
    ``repetition_factor`` is blank when the metric never ran on the run.

    ``round_context``: one row per round with an injection or a verdict, in round order.
    ``winners`` names the teams that won the round (``; ``-joined; blank when none did or the
    round was void): in a round of several teams the scenario ranked (two-team
    spot_the_difference), only the ranking's winners. ``outcome.<team_id>`` is each team's
    ``won``, ``eligible`` (a success the ranking did not name the winner), ``lost`` or
    ``void`` (:func:`~glossogen.scenario.round_outcomes`, as MCP's ``get_run``, the console
    and the run page say it); both blank for a round with no verdict yet.
    ``injection.<agent_id>`` holds the briefing(s) delivered in the main phase of the round,
    ``postmortem_injection.<agent_id>`` the one(s) that opened its postmortem; several are
    joined by a blank line (rendered as spaces in the CSV).
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
    rounds: dict[int, dict[str, Any]] = {}
    verdicts: dict[int, list[dict[str, Any]]] = {}
    winners: dict[int, list[str]] = {}
    for ev in _events(record, tables):
        kind = ev["event_type"]
        number = int(ev.get("round_number") or 0)
        if kind in _CONTEXT_EVENTS:
            row = rounds.setdefault(
                number,
                {"run_id": record.run_id, "scenario_name": record.scenario,
                 "round_number": number},
            )  # fmt: skip
        if kind == _VERDICT:
            verdicts.setdefault(number, []).append(ev)
            continue
        if kind not in _TABLE_EVENTS:  # the scenario's ranking of the round
            named = _round_winners(record.scenario, ev)
            if named is not None:
                winners[number] = named
            continue
        if kind == "injection_delivered":
            prefix = "postmortem_injection." if ev.get("phase") == "postmortem" else "injection."
            col = f"{prefix}{ev.get('agent_id')}"
            text = str(ev.get("text") or "")
            row[col] = f"{row[col]}\n\n{text}" if row.get(col) else text
            continue
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
    for number, recorded in verdicts.items():
        outcomes = round_outcomes(
            [(str(v["team_id"]), bool(v["success"]), str(v.get("reason") or "")) for v in recorded],
            any(v.get("void") for v in recorded),
            winners.get(number),
        )
        row = rounds[number]
        row["winners"] = "; ".join(o.team_id for o in outcomes if o.won) or None
        row.update({f"outcome.{o.team_id}": o.outcome for o in outcomes})
    return rows, [rounds[n] for n in sorted(rounds)]


def _round_winners(scenario: str, event: dict[str, Any]) -> list[str] | None:
    """The winners ``scenario``'s ranking event ``event`` names (None: it names none)."""
    from glossogen.eventlog import event_classes
    from glossogen.scenario import load_scenario

    typed = event_classes()[event["event_type"]].model_validate(event)
    return load_scenario(scenario).round_winners(typed)


def message_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Return one run's ``message_level`` rows (see :func:`run_rows`)."""
    return run_rows(record, "message_level")[0]


def context_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Return one run's ``round_context`` rows (see :func:`run_rows`)."""
    return run_rows(record, "round_context")[1]


def roster(records: list[RunRecord]) -> list[str]:
    """Return every agent id registered in the selection, in order of first registration."""
    return list(dict.fromkeys(a.agent_id for r in records for a in r.agents))


def teams(records: list[RunRecord]) -> list[str]:
    """Every team of the selection's registered agents, in order of first registration."""
    return list(dict.fromkeys(a.team_id for r in records for a in r.agents if a.team_id))


def log_table_columns(
    name: str, records: list[RunRecord], repeat_run_columns: bool
) -> tuple[list[str], list[dict[str, Any]] | None]:
    """Return a log table's columns and, when repeated, each run's context row."""
    if name == "round_context":
        agents = roster(records)
        cols = ["run_id", "scenario_name", "round_number", "winners"]
        cols += [f"outcome.{t}" for t in teams(records)]
        cols += [f"injection.{a}" for a in agents]
        cols += [f"postmortem_injection.{a}" for a in agents]
        return cols, None
    if not repeat_run_columns:
        return list(MESSAGE_COLUMNS), None
    contexts = [run_context(r) for r in records]
    own = set(MESSAGE_COLUMNS)
    return MESSAGE_COLUMNS + [c for c in context_columns(contexts) if c not in own], contexts


BATCH_ROWS = 2_000
"""Rows gathered (whole runs at a time) before a batch becomes a frame and is written.

An export's peak memory follows the batch's size more than the selection's (polars keeps
what a large batch allocated), so batches are small; ``bench/export_speed.py`` prints the
peak's growth from 100 to 1,000 runs, and CPU time does not depend on this size.
"""


def log_batches(
    names: list[str],
    records: list[RunRecord],
    *,
    repeat_run_columns: bool = True,
    safe: bool = True,
) -> Iterator[dict[str, pl.DataFrame]]:
    """Yield batches of the event-log tables ``names``: table name to frame, whole runs each.

    Each run's log is read once for every table asked (:func:`run_rows`); rows gather until
    :data:`BATCH_ROWS` and then become one frame per table (never one per run), text cells
    made spreadsheet-safe by one vectorised pass per batch. Every frame has the columns of
    :func:`log_table_columns`; at least one batch is yielded (header-only for no run).
    Without ``safe`` (the analysis, whose JSON keeps values as recorded) text is left as it is.
    """
    guard = safe_text if safe else _as_is
    columns = {n: log_table_columns(n, records, repeat_run_columns)[0] for n in names}
    context = None
    if "message_level" in names and repeat_run_columns:
        context = guard(context_frame(records, columns["message_level"][len(MESSAGE_COLUMNS) :]))
    pending: dict[str, list[dict[str, Any]]] = {n: [] for n in names}

    def batch() -> dict[str, pl.DataFrame]:
        frames: dict[str, pl.DataFrame] = {}
        for name in names:
            own = MESSAGE_COLUMNS if name == "message_level" else columns[name]
            frame = guard(frame_from_rows(pending[name], own))
            if name == "message_level" and context is not None:
                frame = with_context(frame, context)
            frames[name] = frame
            pending[name] = []
        return frames

    yielded = False
    for record in records:
        messages, contexts = run_rows(record, ", ".join(names))
        if "message_level" in pending:
            pending["message_level"] += messages
        if "round_context" in pending:
            pending["round_context"] += contexts
        if sum(len(rows) for rows in pending.values()) >= BATCH_ROWS:
            yield batch()
            yielded = True
    if not yielded or any(pending.values()):
        yield batch()


def _as_is(frame: pl.DataFrame) -> pl.DataFrame:
    return frame


def log_frame(
    name: str, records: list[RunRecord], *, repeat_run_columns: bool = True, safe: bool = True
) -> Iterator[pl.DataFrame]:
    """Yield the frames of table ``name`` (``message_level`` or ``round_context``), in batches."""
    for frames in log_batches([name], records, repeat_run_columns=repeat_run_columns, safe=safe):
        yield frames[name]


def write_log_tables(
    names: list[str], records: list[RunRecord], out: str, *, repeat_run_columns: bool = True
) -> dict[str, tuple[int, dict[str, int]]]:
    """Stream the event-log tables ``names`` to ``<out>/<name>.csv``, each log read once.

    Returns:
        Per table: rows written, and the per-column coverage (distinct runs filling each
        column; batches hold whole runs, so the counts add up).

    Raises:
        StorageError: if ``out`` is unreachable.
    """
    from glossogen.export._write import stream_tables

    columns = {n: log_table_columns(n, records, repeat_run_columns)[0] for n in names}
    return stream_tables(
        columns, log_batches(names, records, repeat_run_columns=repeat_run_columns), out
    )
