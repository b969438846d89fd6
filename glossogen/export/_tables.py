"""Building, picking and describing the export's CSV tables (writing them: ``_write.py``).

The legend (``columns.csv``) names each column's table, family, unit and how many runs filled
it (a blank is ambiguous: the legend says which columns were sparse).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from glossogen.export._calls import CALL_COLUMNS, CALL_RUN_RENAMED
from glossogen.export._cells import safe_text
from glossogen.export._frames import (
    AGENT_OWN,
    METRIC_PREFIXES,
    ROUND_KEYS,
    RUN_META,
    context_columns,
    context_frame,
    default_frames,
    metrics_of,
    run_context,
    with_context,
)
from glossogen.export._knobfilter import SelectionError
from glossogen.export._record import RunRecord

DEFAULT_FRAMES = ["run_level", "round_level", "agent_level"]
"""The tables written when none are named."""

LOG_FRAMES = ["message_level", "round_context"]
"""The tables read from event logs (not in the default set)."""

CALL_FRAME = "call_level"
"""The table of model requests, one row each (``_calls.py``; read through each run's view)."""

FRAMES = DEFAULT_FRAMES + LOG_FRAMES + [CALL_FRAME]
"""Every table, in the order they are written."""

ALWAYS = ("run_id", "scenario_name")
"""Columns every table carries and no pick removes: every table joins back on them."""

KEYS = {
    "run_level": set(ALWAYS),
    "round_level": set(ROUND_KEYS),
    "agent_level": {"run_id", "scenario_name", "agent_id"},
    "message_level": {"run_id", "scenario_name", "round_number", "channel_id"},
    "round_context": {"run_id", "scenario_name", "round_number"},
    CALL_FRAME: {"run_id", "scenario_name", "round_number", "agent_id"},
}

_UNITS = {
    "total_chars": "characters",
    "chars": "characters",
    "total_cost_usd": "USD",
    "judge_cost_usd": "USD",
    "cost_usd": "USD",
    "duration_seconds": "seconds",
    "latency_seconds": "seconds",
    "retries": "earlier attempts of the cycle",
    "message_count": "messages",
    "rounds_played": "rounds",
    "rounds_won": "rounds",
    "input_tokens": "tokens",
    "output_tokens": "tokens",
    "cache_read_tokens": "tokens",
    "cache_write_tokens": "tokens",
    "cache_write_1h_tokens": "tokens",
    "cached_input_share": "cache reads / input tokens",
    "total_input_tokens": "tokens",
    "total_output_tokens": "tokens",
    "total_cache_read_tokens": "tokens",
    "total_cache_write_tokens": "tokens",
    "total_cache_write_1h_tokens": "tokens",
    "total_cached_input_share": "cache reads / input tokens",
    "requests": "requests",
    "character_entropy_bits": "bits per character",
    "gzip_compression_ratio": "compressed/raw bytes",
    "timestamp": "UTC ISO 8601",
}


ROUND_METRIC_UNIT = "; per round: mean over the teams reporting it"
"""Appended to a metric's unit on ``round_level``, where several teams' values are averaged."""


class TablesMisnamed(ValueError):
    """The tables asked hold an empty name or one named twice (the whole list is at fault)."""


def check_frames(frames: Iterable[str] | None) -> list[str]:
    """Return the requested tables in canonical order (the default set for ``None``).

    Raises:
        ValueError: for an empty list (no table named), naming an unknown table and the known
            ones; :class:`TablesMisnamed` for an empty name or a table named twice. Every
            problem of the list is named, in its order (an empty name once, each table named
            twice once, each unknown table): the first raised, the others as its ``also``
            (:func:`frames_refused`).
    """
    names = list(DEFAULT_FRAMES) if frames is None else list(frames)
    if not names:
        raise ValueError(f"no table named (tables: {', '.join(FRAMES)})")
    refused: list[ValueError] = []
    for i, name in enumerate(names):
        if not name:
            if name not in names[:i]:  # an empty name is said once
                refused.append(TablesMisnamed("a table name is empty"))
        elif name in names[:i]:
            if names[:i].count(name) == 1:  # said at its second naming, once
                refused.append(TablesMisnamed(f"the table {name!r} is named twice"))
        elif name not in FRAMES:
            refused.append(ValueError(f"unknown table {name!r} (tables: {', '.join(FRAMES)})"))
    if refused:
        first = refused[0]
        first.also = tuple(refused[1:])  # type: ignore[attr-defined]  # read by frames_refused
        raise first
    return [f for f in FRAMES if f in names]


def frames_refused(exc: ValueError) -> tuple[ValueError, ...]:
    """Every problem :func:`check_frames` named: ``exc`` and the others it carries."""
    return (exc, *getattr(exc, "also", ()))


def family(column: str, table: str = "") -> str:
    """Return a column's family: its prefix without the dot, or ``run`` for run metadata.

    ``table`` decides a name both a table and the run context hold: ``call_level``'s own
    ``provider`` is ``table`` (the run's is ``run_provider`` there, see
    :data:`~glossogen.export._calls.CALL_RUN_RENAMED`).
    """
    if "." in column:
        return column.split(".", 1)[0]
    if table == CALL_FRAME and column in CALL_RUN_RENAMED:
        return "table"
    return "run" if column in RUN_META or column in CALL_RUN_RENAMED.values() else "table"


def _pick(
    frame: pl.DataFrame, table: str, columns: list[str] | None, metrics: set[str] | None
) -> pl.DataFrame:
    """Keep the picked columns: keys always; metric families by ``metrics``; others by name."""
    keep = []
    for col in frame.columns:
        if col.startswith(METRIC_PREFIXES):
            if metrics is None or col.split(".", 1)[1] in metrics:
                keep.append(col)
        elif columns is None or col in KEYS[table] or col in columns:
            keep.append(col)
    return frame.select(keep)


def known_columns(
    records: list[RunRecord], frames: list[str], repeat_run_columns: bool
) -> set[str]:
    """Return every non-metric column the tables ``frames`` of ``records`` can hold.

    Computed from the run contexts and rosters, without reading any event log.
    """
    from glossogen.export._logtables import MESSAGE_COLUMNS, roster, teams

    contexts = [run_context(r) for r in records]
    context = set(context_columns(contexts))
    known: set[str] = set(ALWAYS)
    for name in frames:
        if name == "run_level":
            known |= context
        elif name == "round_context":
            agents = roster(records)
            known |= {"round_number", "winners"} | {f"injection.{a}" for a in agents}
            known |= {f"outcome.{t}" for t in teams(records)}
            known |= {f"postmortem_injection.{a}" for a in agents}
        else:
            heads = {"round_level": ROUND_KEYS, "agent_level": AGENT_OWN, CALL_FRAME: CALL_COLUMNS}
            own = heads.get(name, MESSAGE_COLUMNS)
            known |= set(own) | (context if repeat_run_columns else set())
            if name == CALL_FRAME and repeat_run_columns:
                known |= {CALL_RUN_RENAMED[c] for c in context if c in CALL_RUN_RENAMED}
    return known


def check_picks(
    records: list[RunRecord],
    frames: list[str],
    columns: list[str] | None,
    metrics: list[str] | None,
    repeat_run_columns: bool = True,
) -> None:
    """Refuse column or metric picks that the selection's tables do not hold.

    A pick naming nothing would give a narrower table that looks complete, so it is refused
    rather than dropped. With no run selected there is nothing to check against, and the
    tables are header-only anyway.

    Raises:
        SelectionError: (field ``columns`` or ``metrics``) naming the unknown picks.
    """
    if not records:
        return
    if columns is not None:
        known = known_columns(records, frames, repeat_run_columns)
        unknown = [c for c in dict.fromkeys(columns) if c not in known]
        if unknown:
            hint = ""
            if any(c.startswith(METRIC_PREFIXES) for c in unknown):
                hint = "; metric columns are picked by metric name in metrics"
            raise SelectionError(
                f"unknown columns for these tables of this selection: "
                f"{', '.join(map(repr, unknown))}{hint}",
                "columns",
            )
    if metrics is not None:
        names = {n for r in records for n in metrics_of(r, None)}
        unknown = [m for m in dict.fromkeys(metrics) if m not in names]
        if unknown:
            raise SelectionError(
                f"unknown metrics for this selection (no selected run's report has them): "
                f"{', '.join(map(repr, unknown))}",
                "metrics",
            )


def build_frames(
    records: list[RunRecord],
    frames: list[str],
    *,
    columns: list[str] | None = None,
    metrics: list[str] | None = None,
    repeat_run_columns: bool = True,
    include_metric_summaries: bool = False,
    safe: bool = True,
) -> dict[str, pl.DataFrame]:
    """Build the requested tables in memory (the REST path; the CLI streams instead).

    Args:
        records: The selected runs (:func:`~glossogen.export.select_runs`).
        frames: Table names among :data:`FRAMES`.
        columns: Non-metric columns to keep (keys always kept); None keeps all.
        metrics: Metric names to keep (their ``metric.``/``metric_rounds.``/... columns, and
            round rows only where one of them reported); None keeps all.
        repeat_run_columns: Copy run context onto round, agent and message rows.
        include_metric_summaries: Add ``metric_unit.``/``metric_summary.`` at run level and
            ``metric_note.`` on the round and agent tables.
        safe: Make text cells spreadsheet-safe (:func:`~glossogen.export._cells.safe_text`);
            the analysis reads them as recorded and guards only the CSV it writes.

    Returns:
        Table name to frame, text cells spreadsheet-safe when ``safe``.

    Raises:
        ValueError: for an unknown table name or none.
        SelectionError: (field ``columns`` or ``metrics``) a pick the tables do not hold
            (:func:`check_picks`).
    """
    names = check_frames(frames)
    check_picks(records, names, columns, metrics, repeat_run_columns)
    wanted = set(metrics) if metrics is not None else None
    out = default_frames(records, names, wanted, repeat_run_columns, include_metric_summaries)
    for name in names:
        if name in LOG_FRAMES:
            from glossogen.export._logtables import log_frame, log_table_columns

            chunks = list(
                log_frame(name, records, repeat_run_columns=repeat_run_columns, safe=safe)
            )
            if not chunks:  # no run: the header alone
                columns_of, _ = log_table_columns(name, records, repeat_run_columns)
                chunks = [pl.DataFrame(schema=dict.fromkeys(columns_of, pl.String))]
            out[name] = pl.concat(chunks, how="vertical_relaxed")
    if CALL_FRAME in names:
        out[CALL_FRAME] = call_level(records, repeat_run_columns)
    picked = {n: _pick(out[n], n, columns, wanted) for n in names}
    return {n: safe_text(f) for n, f in picked.items()} if safe else picked


def call_level(records: list[RunRecord], repeat_run_columns: bool = True) -> pl.DataFrame:
    """Return the ``call_level`` table, the run context joined after its own columns.

    A context column the call row also holds keeps the call's value under its name, and
    the run's under :data:`~glossogen.export._calls.CALL_RUN_RENAMED` (``run_provider``).
    """
    from glossogen.export._calls import call_frame

    frame = call_frame(records)
    if not repeat_run_columns:
        return frame
    contexts = [run_context(r) for r in records]
    context = context_frame(records, context_columns(contexts))
    return with_context(frame, context.rename(CALL_RUN_RENAMED, strict=False))


def coverage(frame: pl.DataFrame) -> dict[str, int]:
    """Return, per column of ``frame``, how many distinct runs have a non-empty cell in it."""
    if not frame.columns:
        return {}
    if frame.height == 0:
        return dict.fromkeys(frame.columns, 0)
    filled = frame.select(
        [
            pl.col("run_id").filter(pl.col(c).is_not_null()).n_unique().alias(c)
            for c in frame.columns
        ]
    ).row(0)
    return {c: int(n) for c, n in zip(frame.columns, filled, strict=True)}


def _metric_units(records: list[RunRecord]) -> dict[str, str]:
    units: dict[str, str] = {}
    for record in records:
        for name, entry in ((record.report or {}).get("metrics") or {}).items():
            if isinstance(entry, dict) and entry.get("unit"):
                units.setdefault(f"metric.{name}", str(entry["unit"]))
            units.setdefault(f"metric_rounds.{name}", "rounds")
    return units


def _metric_sources(records: list[RunRecord]) -> dict[str, str]:
    """Metric name -> who wrote its numbers across ``records``, ``; ``-joined when several.

    ``glossogen`` is our ``evaluate``; ``glossogen-0.5`` a GlossoGen 0.5 report.
    """
    sources: dict[str, set[str]] = {}
    for record in records:
        for name, entry in ((record.report or {}).get("metrics") or {}).items():
            if isinstance(entry, dict):
                sources.setdefault(name, set()).add(str(entry.get("source") or "glossogen"))
    return {name: "; ".join(sorted(found)) for name, found in sources.items()}


def legend(
    frames: dict[str, pl.DataFrame | dict[str, int]], records: list[RunRecord] | None = None
) -> pl.DataFrame:
    """Return the ``columns.csv`` legend: one row per (table, column), tables in order.

    Args:
        frames: Table name to its frame, or to its :func:`coverage` (a streamed table).
        records: The selected runs, whose reports name the units of ``metric.`` columns.

    Returns:
        Columns ``table``, ``column``, ``family`` (the prefix without its dot, ``run`` for run
        metadata, ``table`` for a table's own columns), ``unit`` (empty when unitless),
        ``runs_filled`` (distinct runs with a non-empty cell in that column) and, for a
        metric column, ``source``: which evaluation wrote its numbers (``glossogen``,
        ``glossogen-0.5`` for a GlossoGen 0.5 report, or both; empty for other columns).
    """
    units = {**_UNITS, **_metric_units(records or [])}
    sources = _metric_sources(records or [])
    rows: list[dict[str, Any]] = []
    for table, frame in frames.items():
        counts = frame if isinstance(frame, dict) else coverage(frame)
        for col, count in counts.items():
            unit = units.get(col)
            if unit and table == "round_level" and col.startswith("metric."):
                unit += ROUND_METRIC_UNIT
            prefix, _, metric_name = col.partition(".")
            source = sources.get(metric_name) if f"{prefix}." in METRIC_PREFIXES else None
            rows.append(
                {
                    "table": table,
                    "column": col,
                    "family": family(col, table),
                    "unit": unit,
                    "runs_filled": count,
                    "source": source,
                }
            )
    schema: dict[str, type[pl.DataType]] = {
        "table": pl.String,
        "column": pl.String,
        "family": pl.String,
    }
    schema |= {"unit": pl.String, "runs_filled": pl.Int64, "source": pl.String}
    return pl.DataFrame(rows, schema=schema)


def available_columns(records: list[RunRecord]) -> dict[str, Any]:
    """Describe what an export of ``records`` can hold (the REST preview).

    Returns:
        ``{"columns": [{"table", "column", "family", "unit", "runs_filled"}...],
        "metrics": [{"name", "runs", "round_rows", "agent_rows"}...] (``round_rows``: the
        ``round_level`` rows it fills, one per run and round),
        "runs_without_report": int}`` for the default tables.
    """
    frames = build_frames(records, DEFAULT_FRAMES, include_metric_summaries=False)
    table = legend(dict(frames), records)
    metrics: dict[str, dict[str, int]] = {}
    for record in records:
        for name, entry in ((record.report or {}).get("metrics") or {}).items():
            if not isinstance(entry, dict):
                continue
            m = metrics.setdefault(name, {"runs": 0, "round_rows": 0, "agent_rows": 0})
            m["runs"] += 1
            m["round_rows"] += len({o.get("round_number") for o in entry.get("per_round") or []})
            m["agent_rows"] += len(entry.get("per_agent") or [])
    return {
        "columns": table.to_dicts(),
        "metrics": [{"name": n, **metrics[n]} for n in sorted(metrics)],
        "runs_without_report": sum(1 for r in records if r.report is None),
    }


__all__ = [
    "frames_refused",
    "ALWAYS",
    "AGENT_OWN",
    "DEFAULT_FRAMES",
    "FRAMES",
    "LOG_FRAMES",
    "TablesMisnamed",
    "available_columns",
    "CALL_FRAME",
    "build_frames",
    "call_level",
    "check_frames",
    "check_picks",
    "coverage",
    "known_columns",
    "legend",
]
