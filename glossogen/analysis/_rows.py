"""The rows of a grain and the names a query uses for their columns.

The grain's rows are the export's own tables (``run_level``, ``round_level``, ``agent_level``,
``message_level``, ``call_level``, each with the run's context joined), or one metric's
observations as its report writes them (the ``observation`` grain). A bare name finds the one
family column it ends (``round_success`` is ``metric.round_success``). Groups are labelled and
ordered here: a key's value as text, numbers as numbers, blank last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from glossogen.analysis._terms import Grain, QueryError
from glossogen.export import (
    RunRecord,
    build_frames,
)
from glossogen.export._frames import context_columns, context_frame, run_context, with_context
from glossogen.refusals import shown

TABLES = {
    "run": "run_level",
    "round": "round_level",
    "agent": "agent_level",
    "message": "message_level",
    "call": "call_level",
}
_PREFIXES = ("metric.", "knob.", "label.", "label_flag.", "lineage.", "agent_model.")
"""Families a bare name is looked up in when no column has the name itself."""
UNSCORED = (
    "no run of this selection has a report yet: metrics and the round grain's rows come from "
    "scoring them (glossogen evaluate)"
)
"""The hint where no selected run is scored (a refused name, ``--list-fields``, an answer)."""
REPORTED_GRAINS = ("run", "round", "agent")
"""The grains a report adds fields to (metrics; the round grain's rows): a name refused at
one of them over runs not yet scored says why. The message and call grains come from the
log alone."""


def unscored_notes(unscored: int, runs: int) -> list[str]:
    """The note saying that ``unscored`` of the ``runs`` selected have no report yet (or none)."""
    if not unscored:
        return []
    if unscored == runs:
        return [UNSCORED]
    return [
        f"{unscored} of {runs} runs of this selection have no report yet: their metrics and "
        "round rows come from scoring them (glossogen evaluate)"
    ]


VALUES_LISTED = 20


def grain_frame(records: list[RunRecord], grain: Grain, metric: str | None = None) -> pl.DataFrame:
    """Return the rows of ``grain`` over ``records``, the run context joined to each row.

    Text is kept as recorded (a label ``=HYPERLINK(...)`` is itself in JSON and in filters);
    only the CSV an answer is written as guards it (:func:`~glossogen.analysis._render.csv_text`).
    """
    if grain == "observation":
        return _observations(records, metric or "")
    table = TABLES[grain]
    return build_frames(records, [table], repeat_run_columns=True, safe=False)[table]


def _observations(records: list[RunRecord], metric: str) -> pl.DataFrame:
    from glossogen.export._cells import frame_from_rows
    from glossogen.export._frames import metrics_of, reported_number

    rows: list[dict[str, Any]] = []
    for record in records:
        entry = metrics_of(record, {metric}).get(metric)
        if entry is None:
            continue
        base = {"run_id": record.run_id, "scenario_name": record.scenario, "metric": metric}
        for obs in entry.get("per_round") or []:
            rows.append({**base, "observation": "round", "round_number": obs.get("round_number"),
                         "team_id": obs.get("team_id"), "agent_id": None,
                         "value": reported_number(obs.get("value"))})  # fmt: skip
        if not entry.get("per_round"):
            for obs in entry.get("per_agent") or []:
                rows.append({**base, "observation": "agent", "round_number": None,
                             "team_id": None, "agent_id": obs.get("agent_id"),
                             "value": reported_number(obs.get("value"))})  # fmt: skip
    own = ["run_id", "scenario_name", "metric", "observation", "round_number", "team_id"]
    frame = frame_from_rows(rows, [*own, "agent_id", "value"])
    contexts = [run_context(r) for r in records]
    columns = [c for c in context_columns(contexts) if c not in frame.columns]
    return with_context(frame, context_frame(records, columns))


def resolve(frame: pl.DataFrame, name: str, grain: str, what: str) -> str:
    """Return the column ``name`` means: itself, else the one family column ending in it.

    Raises:
        QueryError: (field ``what``) no such column at this grain, or several families hold it.
    """
    if name in frame.columns:
        return name
    found = [f"{p}{name}" for p in _PREFIXES if f"{p}{name}" in frame.columns]
    if len(found) == 1:
        return found[0]
    if found:
        raise QueryError(f"{shown(name)} is ambiguous: {', '.join(found)}", what)
    unscored = (
        grain in REPORTED_GRAINS
        and "has_evaluation" in frame.columns
        and not frame.get_column("has_evaluation").any()
    )
    hint = f"; {UNSCORED}" if unscored else ""
    raise QueryError(
        f"{shown(name)}: no such field at the {grain} grain of this selection "
        f"(list the grain's fields){hint}",
        what,
    )


def key_labels(frame: pl.DataFrame, column: str) -> pl.Series:
    """The group labels of ``column``, as groups are labelled (:func:`key_label`; null if none)."""
    return pl.Series(column, [key_label(v) for v in frame.get_column(column).to_list()], pl.String)


def key_label(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def sort_key(key: Sequence[Any]) -> tuple[Any, ...]:
    """Order groups by their keys' values: numbers as numbers, text as text, blank last."""
    out: list[Any] = []
    for value in key:
        if value is None:
            out.append((2, 0, ""))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((0, value, ""))
        else:
            out.append((1, 0, str(key_label(value))))
    return tuple(out)


def check_metric(records: list[RunRecord], metric: str) -> None:
    """Refuse an observation grain's metric no selected run's report holds, naming those held.

    Raises:
        QueryError: (field ``metric``) naming the metrics the reports hold, or saying that no
            run is scored yet.
    """
    from glossogen.export._frames import metrics_of

    held: set[str] = set()
    for record in records:
        held.update(metrics_of(record, None))
    if metric in held:
        return
    if not held:
        raise QueryError(f"{shown(metric)}: {UNSCORED}", "metric")
    known = sorted(held)
    listed = ", ".join(known[:VALUES_LISTED]) + (", ..." if len(known) > VALUES_LISTED else "")
    raise QueryError(
        f"{shown(metric)}: no report of this selection has this metric (they have {listed})",
        "metric",
    )


def number_or_text(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


NAMED_RUNS = 5
"""Runs a note names one by one (a value blanked, a stale report); more are counted."""


__all__ = [
    "NAMED_RUNS",
    "REPORTED_GRAINS",
    "TABLES",
    "UNSCORED",
    "VALUES_LISTED",
    "check_metric",
    "grain_frame",
    "key_label",
    "key_labels",
    "number_or_text",
    "resolve",
    "sort_key",
    "unscored_notes",
]
