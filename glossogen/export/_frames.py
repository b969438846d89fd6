"""The default tables: ``run_level``, ``round_level`` and ``agent_level``, wide in metrics.

Every fact comes from the run folder: the event log's head and tail (status, counts, cost,
duration, roster), ``config.json``, ``labels.json``, ``lineage.json`` and the evaluation's
``<scenario>_report.json`` (metrics; contract in the evaluation package). No column comes from
a list anyone maintains: knob columns are what each run recorded, metric columns the names its
report carries. A blank metric cell means no number exists (not applicable, not run, failed, or
no report); it is never zero.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from glossogen.catalog import PROVIDER_SPECS, Provider
from glossogen.eventlog import TOKEN_FIELDS, Tokens
from glossogen.export._cells import add_kinds, flatten_knobs, frame_from_rows
from glossogen.export._record import RunRecord

RUN_META = [
    "run_id",
    "scenario_name",
    "status",
    "status_detail",
    "timestamp",
    "rounds_played",
    "rounds_won",
    "message_count",
    "total_chars",
    "total_cost_usd",
    "judge_cost_usd",
    "total_input_tokens",
    "total_cache_read_tokens",
    "total_cache_write_tokens",
    "total_cache_write_1h_tokens",
    "total_output_tokens",
    "total_cached_input_share",
    "duration_seconds",
    "provider",
    "providers",
    "models",
    "labels",
    "model_class",
    "has_evaluation",
    "judge_flips",
]
"""Unprefixed run-level columns, in order."""

LABEL_FLAG = "True"
"""A bare tag's cell in its ``label_flag.`` column, as the export contract writes it (a text
cell: analysis compares it case-insensitively, so a filter ``=true`` keeps it too)."""

RUN_PREFIXES: tuple[str, ...] = ("knob.", "label.", "label_flag.", "agent_model.")
RUN_PREFIXES += ("agent_provider.", "agent_role.", "lineage.")
METRIC_PREFIXES = ("metric.", "metric_rounds.", "metric_unit.", "metric_summary.", "metric_note.")
ROUND_KEYS = ["run_id", "scenario_name", "round_number"]
AGENT_OWN = [
    "run_id",
    "scenario_name",
    "agent_id",
    "role",
    "team_id",
    "model",
    "model_provider",
    "models_used",
    "cost_usd",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "cached_input_share",
    "requests",
]


def cached_share(input_tokens: int | None, cache_read_tokens: int | None) -> float | None:
    """Share of ``input_tokens`` the cache served; None when either count is unknown or 0 in."""
    if input_tokens is None or cache_read_tokens is None:
        return None
    return Tokens(input_tokens=input_tokens, cache_read_tokens=cache_read_tokens).cached_share


def model_class(providers: set[str]) -> str | None:
    """Return ``open``, ``closed`` or ``mixed`` from the providers' weights; None otherwise.

    A provider the catalogue marks ``unclassified`` (openrouter serves both kinds) or does not
    list at all makes the cell empty rather than a guess.
    """
    classes = set()
    for name in providers:
        try:
            classes.add(PROVIDER_SPECS[Provider(name)].weights)
        except (ValueError, KeyError):
            return None
    if not classes or "unclassified" in classes:
        return None
    if classes == {"open"}:
        return "open"
    if classes == {"closed"}:
        return "closed"
    return "mixed"


def metrics_of(record: RunRecord, wanted: set[str] | None) -> dict[str, dict[str, Any]]:
    """Return the report's metric entries by name (only ``wanted`` ones when given)."""
    metrics = (record.report or {}).get("metrics") or {}
    return {
        name: entry
        for name, entry in metrics.items()
        if isinstance(entry, dict) and (wanted is None or name in wanted)
    }


def reported_number(value: Any) -> Any:
    """A value a report gives where a number goes: a number (or None) as it is, else NaN.

    Text (``"12.5"``, ``"abc"``), a list or a mapping is no number: it becomes NaN, so the
    column stays a number column and every reader counts the value as missing and names the run
    and the field, as it does a report's own NaN or infinity (the analysis in its notes, the
    export as a blank cell and a note).
    """
    return value if value is None or isinstance(value, (int, float)) else math.nan


def _score(entry: dict[str, Any]) -> Any:
    return reported_number(entry.get("score")) if entry.get("status", "ok") == "ok" else None


def run_context(record: RunRecord) -> dict[str, Any]:
    """Return one run's non-metric columns: metadata, knobs, labels, roster and lineage.

    Computed once per record and kept on it (every table repeats it). Its column names are
    interned, so the selection's contexts share one copy of each name rather than holding one
    per run (a thousand runs' contexts: about 1.7 MiB instead of 4.8).
    """
    cached = record.__dict__.get("_run_context")
    if cached is None:
        cached = record.__dict__["_run_context"] = _run_context(record)
    return cached


def _run_context(record: RunRecord) -> dict[str, Any]:
    facts = record.facts
    agents = record.agents
    providers = {p.split(":", 1)[0] for a in agents for p in a.models} or (
        {str(facts.started.get("provider"))} if facts.started else set()
    )
    tokens = facts.tokens()
    row: dict[str, Any] = {
        "run_id": record.run_id,
        "scenario_name": record.scenario,
        "status": facts.status,
        "status_detail": facts.status_detail,
        "timestamp": facts.started_at,
        "rounds_played": facts.rounds_played,
        "rounds_won": facts.rounds_won,
        "message_count": facts.total_messages,
        "total_chars": facts.total_chars,
        "total_cost_usd": facts.total_cost_usd,
        "judge_cost_usd": facts.judge_cost_usd,
        **{f"total_{name}": getattr(tokens, name, None) for name in TOKEN_FIELDS},
        "total_cached_input_share": tokens.cached_share if tokens else None,
        "duration_seconds": facts.duration_seconds,
        "provider": (facts.started or {}).get("provider") or None,
        "providers": "; ".join(sorted(providers - {"", "None"})) or None,
        "models": "; ".join(sorted({m.split(":", 1)[1] for a in agents for m in a.models})) or None,
        "labels": "; ".join(record.label_strings()) or None,
        "model_class": model_class(providers),
        "has_evaluation": record.report is not None,
        "judge_flips": record.judge_flips,
    }
    row.update(flatten_knobs(record.config))
    for key, value in record.labels.items():
        if value is True:
            row[f"label_flag.{key}"] = LABEL_FLAG
        else:
            row[f"label.{key}"] = value
    for agent in agents:
        row[f"agent_model.{agent.agent_id}"] = agent.model or None
        row[f"agent_provider.{agent.agent_id}"] = agent.provider or None
        row[f"agent_role.{agent.agent_id}"] = agent.role or None
    if record.lineage:
        for key, value in flatten_knobs(record.lineage, "lineage.").items():
            name = "lineage.derivation_type" if key == "lineage.derivation" else key
            row[name] = value
    return {sys.intern(column): value for column, value in row.items()}


def run_row(record: RunRecord, wanted: set[str] | None, summaries: bool) -> dict[str, Any]:
    """Return one ``run_level`` row: :func:`run_context` plus the run's metric columns."""
    row = dict(run_context(record))
    for name, entry in metrics_of(record, wanted).items():
        row[f"metric.{name}"] = _score(entry)
        row[f"metric_rounds.{name}"] = entry.get("rounds")
        if summaries:
            row[f"metric_unit.{name}"] = entry.get("unit")
            row[f"metric_summary.{name}"] = entry.get("summary")
    return row


def ordered_columns(rows: list[dict[str, Any]], head: list[str]) -> list[str]:
    """Return ``head`` then every other key of ``rows`` grouped by family, sorted within it.

    Families in order: unprefixed, ``knob.``, ``label.``, ``label_flag.``, the agent roster,
    ``lineage.``, then the metric families.
    """
    seen: dict[str, None] = dict.fromkeys(head)
    extra = sorted({k for r in rows for k in r} - set(seen))
    order = ("",) + RUN_PREFIXES + METRIC_PREFIXES

    def family(col: str) -> int:
        for i, prefix in enumerate(order[1:], start=1):
            if col.startswith(prefix):
                return i
        return 0

    return [*seen, *sorted(extra, key=lambda c: (family(c), c))]


def _mean(values: list[Any]) -> float | None:
    numbers = [reported_number(v) for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def _notes(observations: list[dict[str, Any]]) -> str | None:
    notes = [(o.get("team_id"), o.get("note")) for o in observations if o.get("note")]
    if len(observations) == 1 or not notes:
        return notes[0][1] if notes else None
    return "; ".join(f"{team or '-'}: {note}" for team, note in notes)


def round_rows(record: RunRecord, wanted: set[str] | None, summaries: bool) -> list[dict]:
    """Return ``round_level`` rows of one run: one per round some selected metric reported.

    The grain is (run, round): every metric measured on a round sits on its one row. A metric
    reporting several observations for one round (one per team in a multi-team scenario)
    fills its cell with their mean (for ``round_success``: the share of the round's teams
    that won it), and its note with each team's note (``team: note; ...``). A cell stays blank
    when the metric reported no number for the round.
    """
    rounds: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for name, entry in metrics_of(record, wanted).items():
        for obs in entry.get("per_round") or []:
            number = int(obs.get("round_number") or 0)
            rounds.setdefault(number, {}).setdefault(name, []).append(obs)
    rows = []
    for number in sorted(rounds):
        row: dict[str, Any] = {
            "run_id": record.run_id,
            "scenario_name": record.scenario,
            "round_number": number,
        }
        for name, observations in rounds[number].items():
            row[f"metric.{name}"] = _mean([o.get("value") for o in observations])
            if summaries:
                row[f"metric_note.{name}"] = _notes(observations)
        rows.append(row)
    return rows


def agent_rows(record: RunRecord, wanted: set[str] | None, summaries: bool) -> list[dict]:
    """Return ``agent_level`` rows of one run: one per registered agent (the roster)."""
    per_agent: dict[str, dict[str, Any]] = {}
    for name, entry in metrics_of(record, wanted).items():
        for obs in entry.get("per_agent") or []:
            cells = per_agent.setdefault(str(obs.get("agent_id")), {})
            cells[f"metric.{name}"] = reported_number(obs.get("value"))
            if summaries:
                cells[f"metric_note.{name}"] = obs.get("note")
    rows = []
    for agent in record.agents:
        row = {
            "run_id": record.run_id,
            "scenario_name": record.scenario,
            "agent_id": agent.agent_id,
            "role": agent.role or None,
            "team_id": agent.team_id or None,
            "model": agent.model or None,
            "model_provider": agent.provider or None,
            "models_used": "; ".join(agent.models) or None,
            "cost_usd": agent.cost_usd,
            "input_tokens": agent.input_tokens,
            "cache_read_tokens": agent.cache_read_tokens,
            "cache_write_tokens": agent.cache_write_tokens,
            "cache_write_1h_tokens": agent.cache_write_1h_tokens,
            "output_tokens": agent.output_tokens,
            "cached_input_share": cached_share(agent.input_tokens, agent.cache_read_tokens),
            "requests": agent.requests,
        }
        row.update(per_agent.get(agent.agent_id, {}))
        rows.append(row)
    return rows


def context_columns(contexts: list[dict[str, Any]]) -> list[str]:
    """Return the run-context columns repeated on other tables (run_id/scenario_name apart)."""
    return [c for c in ordered_columns(contexts, RUN_META) if c not in ("run_id", "scenario_name")]


def context_frame(records: list[RunRecord], columns: list[str]) -> pl.DataFrame:
    """Return one row per run holding its context ``columns`` (``run_id`` first)."""
    return frame_from_rows([run_context(r) for r in records], ["run_id", *columns])


def with_context(frame: pl.DataFrame, context: pl.DataFrame) -> pl.DataFrame:
    """Append the run context to each row of ``frame``: a left join on ``run_id``, in order."""
    if context.width <= 1:
        return frame
    if frame.height == 0:
        empty = {c: t for c, t in context.schema.items() if c != "run_id"}
        return pl.concat([frame, pl.DataFrame(schema=empty)], how="horizontal")
    return frame.join(context, on="run_id", how="left", maintain_order="left")


BATCH_RUNS = 50
"""Runs whose default-table rows are built into one frame at a time when the tables stream."""

_BUILDERS: dict[str, Callable[[RunRecord, set[str] | None, bool], list[dict[str, Any]]]] = {
    "run_level": lambda record, wanted, summaries: [run_row(record, wanted, summaries)],
    "round_level": round_rows,
    "agent_level": agent_rows,
}
_HEADS = {"run_level": RUN_META, "round_level": ROUND_KEYS, "agent_level": AGENT_OWN}
_CONTEXT = "run context"


@dataclass
class DefaultSchema:
    """The columns of the default tables and the types of their cells, over a whole selection.

    Found by one pass over the records (:func:`default_schema`) before any row is kept, so a
    table can be written in batches of runs under one header, each batch typed as the whole.

    Attributes:
        own: Per table, its own columns in order (the run context is joined after them).
        kinds: Per table, and under ``"run context"`` for the repeated context: column to the
            Python types of its non-None cells (:func:`~glossogen.export._cells.add_kinds`).
        context: The repeated run-context columns (``run_id`` first), empty when not repeated.
        wanted: The metrics kept (None: all).
        summaries: Whether metric units, summaries and notes are included.
    """

    own: dict[str, list[str]]
    kinds: dict[str, dict[str, set[type]]]
    context: list[str]
    wanted: set[str] | None
    summaries: bool

    def columns(self, name: str) -> list[str]:
        """Return table ``name``'s columns in order, the run context after its own."""
        return self.own[name] + self.context[1:] if name != "run_level" else self.own[name]


def default_schema(
    records: list[RunRecord],
    frames: list[str],
    wanted: set[str] | None,
    repeat_run_columns: bool,
    summaries: bool,
) -> DefaultSchema:
    """Return the columns and cell types of the default tables ``frames`` over ``records``.

    Each run's rows are built and only their columns and cell types kept (one run's rows in
    memory at a time); the rows themselves are built again, batch by batch, when written.
    """
    names = [n for n in _BUILDERS if n in frames]
    kinds: dict[str, dict[str, set[type]]] = {n: {} for n in names}
    context = repeat_run_columns and any(n != "run_level" for n in names)
    if context:
        kinds[_CONTEXT] = {}
    for record in records:
        for name in names:
            add_kinds(kinds[name], _BUILDERS[name](record, wanted, summaries))
        if context:
            add_kinds(kinds[_CONTEXT], [run_context(record)])
    own = {n: ordered_columns([kinds[n]], _HEADS[n]) for n in names}
    shared = ["run_id", *context_columns([kinds[_CONTEXT]])] if context else []
    return DefaultSchema(own, kinds, shared, wanted, summaries)


def default_batch(schema: DefaultSchema, records: list[RunRecord]) -> dict[str, pl.DataFrame]:
    """Build the default tables of ``schema`` for ``records`` (one batch), typed as the whole.

    A table's rows are those :func:`default_frames` gives for these runs, in the same order and
    with the same columns and column types, whichever batch they fall in.
    """
    out: dict[str, pl.DataFrame] = {}
    context = None
    for name, columns in schema.own.items():
        rows = [row for r in records for row in _BUILDERS[name](r, schema.wanted, schema.summaries)]
        frame = frame_from_rows(rows, columns, kinds=schema.kinds[name])
        if name != "run_level" and schema.context:
            if context is None:
                contexts = [run_context(r) for r in records]
                context = frame_from_rows(contexts, schema.context, kinds=schema.kinds[_CONTEXT])
            frame = with_context(frame, context)
        out[name] = frame
    return out


def default_batches(
    schema: DefaultSchema, records: list[RunRecord], batch_runs: int = BATCH_RUNS
) -> Iterator[dict[str, pl.DataFrame]]:
    """Yield :func:`default_batch` for ``batch_runs`` runs at a time, in selection order.

    Memory holds one batch's rows and frames, whatever the selection's size; at least one
    batch is yielded (header-only frames for no run).

    Raises:
        ValueError: for ``batch_runs`` below 1.
    """
    if batch_runs < 1:
        raise ValueError(f"batch_runs must be at least 1, got {batch_runs}")
    for start in range(0, max(len(records), 1), batch_runs):
        yield default_batch(schema, records[start : start + batch_runs])


def default_frames(
    records: list[RunRecord],
    frames: list[str],
    wanted: set[str] | None,
    repeat_run_columns: bool,
    summaries: bool,
) -> dict[str, pl.DataFrame]:
    """Build the requested default tables (``run_level``, ``round_level``, ``agent_level``).

    One batch of every run (:func:`default_batch`); the CLI streams the same batches instead.

    Returns:
        Table name to frame. ``run_level``: one row per run, keyed ``run_id``.
        ``round_level``: one row per (run, round) a selected metric reported, keyed
        ``run_id, round_number`` (several teams' observations of a round averaged).
        ``agent_level``: one row per (run, registered agent),
        keyed ``run_id, agent_id``. Metric cells are blank where no number exists.
    """
    schema = default_schema(records, frames, wanted, repeat_run_columns, summaries)
    return default_batch(schema, records)
