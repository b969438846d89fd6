"""Cells: knob flattening, typed columns from Python values, and spreadsheet-safe text.

Text cells lose their control characters (tab kept), newlines become spaces, and a cell
beginning ``=``, ``+``, ``@`` or a tab gets a leading apostrophe, which a spreadsheet reads as
"this is text" instead of a formula (OWASP's CSV-injection guidance). A leading ``-`` is left
alone: it is far more often a negative number.
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
_NEWLINES = r"\r\n|[\r\n]"
_FORMULA_START = r"^[=+@\t]"
_CONTROL_RE = re.compile(_CONTROL)
_NEWLINES_RE = re.compile(_NEWLINES)


def flatten_knobs(config: dict[str, Any], prefix: str = "knob.") -> dict[str, Any]:
    """Flatten a recorded config into ``knob.``-prefixed cells.

    A scalar is its own column; a mapping explodes into dotted keys
    (``knob.model_overrides.field_observer.model``); a list stays one cell of compact JSON,
    since exploding it by index would invent columns meaning different things per run.

    Args:
        config: The run's recorded ``scenario_config``.
        prefix: The column prefix.

    Returns:
        Column name to cell value (scalars, or a JSON string for a list).
    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten_knobs(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            out[name] = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        else:
            out[name] = value
    return out


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def add_kinds(kinds: dict[str, set[type]], rows: list[dict[str, Any]]) -> None:
    """Add to ``kinds`` every column of ``rows`` and the Python types of its non-None cells."""
    for row in rows:
        for column, value in row.items():
            seen = kinds.get(column)
            if seen is None:
                seen = kinds[column] = set()
            if value is not None:
                seen.add(type(value))


def typed_series(name: str, values: list[Any], kinds: set[type] | None = None) -> pl.Series:
    """Return a polars series for ``values``, typed by what they hold.

    All booleans: Boolean; all integers: Int64; integers and floats: Float64; anything else
    (or a mix): String, booleans as ``true``/``false`` and containers as compact JSON. ``None``
    stays null (an empty cell, never zero). ``kinds`` (the types of the whole column, when
    ``values`` are one batch of it) overrides the types ``values`` hold, so every batch of a
    streamed table is typed, hence written, as the whole table would be.
    """
    if kinds is None:
        kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pl.Series(name, values, dtype=pl.Null)  # takes any type when frames are joined
    if kinds == {bool}:
        return pl.Series(name, values, dtype=pl.Boolean)
    if kinds and kinds <= {int}:
        return pl.Series(name, values, dtype=pl.Int64)
    if kinds and kinds <= {int, float}:
        return pl.Series(name, [None if v is None else float(v) for v in values], pl.Float64)
    if kinds == {str}:  # text already (most cells of the event-log tables): nothing to convert
        return pl.Series(name, values, dtype=pl.String)
    return pl.Series(name, [_as_text(v) for v in values], dtype=pl.String)


def clean_text(value: str) -> str:
    """Return one text cell made safe, the rules of :func:`safe_text` applied in Python.

    For the few rows of one run, cheaper than a polars expression per column.
    """
    value = _CONTROL_RE.sub("", _NEWLINES_RE.sub(" ", value))
    return "'" + value if value[:1] in ("=", "+", "@", "\t") else value


def frame_from_rows(
    rows: list[dict[str, Any]],
    columns: list[str],
    clean: bool = False,
    kinds: dict[str, set[type]] | None = None,
) -> pl.DataFrame:
    """Return a frame with ``columns`` in order, each typed by :func:`typed_series`.

    With ``clean``, every ``str`` cell goes through :func:`clean_text` first. With ``kinds``
    (:func:`add_kinds` over the whole table), each column is typed by the whole table's cells
    rather than by ``rows`` alone (a column absent from ``kinds`` holds no value: null).
    """
    if clean:
        rows = [{k: clean_text(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]
    if kinds is None:
        return pl.DataFrame([typed_series(c, [r.get(c) for r in rows]) for c in columns])
    return pl.DataFrame(
        [typed_series(c, [r.get(c) for r in rows], kinds.get(c, set())) for c in columns]
    )


def safe_text(frame: pl.DataFrame) -> pl.DataFrame:
    """Return ``frame`` with every String cell made safe for spreadsheets and line tools.

    Control characters (tab kept) are stripped, CR and LF become a space, and a
    cell starting with ``=``, ``+``, ``@`` or a tab is prefixed with ``'``.
    """
    text = [c for c, t in frame.schema.items() if t == pl.String]
    if not text:
        return frame
    return frame.with_columns(
        [
            pl.col(c)
            .str.replace_all(_NEWLINES, " ")
            .str.replace_all(_CONTROL, "")
            .pipe(
                lambda e: pl.when(e.str.contains(_FORMULA_START)).then(pl.lit("'") + e).otherwise(e)
            )
            .alias(c)
            for c in text
        ]
    )
