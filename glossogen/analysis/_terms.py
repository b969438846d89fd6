"""The analysis query's terms: its vocabulary, its parts, and the refusal of a query.

The grains, aggregates and filter operators a query names (:data:`GRAINS`, :data:`AGGREGATES`,
:data:`OPERATORS`); its parts as typed values, each read from the command line's text or from a
JSON body alike (:class:`Measure` ``FIELD[:AGG]``, :class:`RowFilter` ``FIELD<op>VALUE``,
:class:`Compare` ``KEY=A,B``); and :class:`QueryError`, the one-line refusal naming the query
field at fault, which every part and the query itself (``_query.py``) raise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from glossogen.refusals import shown

GRAINS = ("run", "round", "agent", "message", "call", "observation")
"""Row grains: a run, a (run, round), an agent seat, a channel message, a model request, or one
metric's keyed observations as its report writes them (``per_round`` with ``team_id``, and
``per_agent``)."""

Grain = Literal["run", "round", "agent", "message", "call", "observation"]

AGGREGATES = ("mean", "median", "sum", "count", "min", "max", "stddev", "sem", "rate")
"""``rate`` is the mean of a 0/1 measure (refused on any other value)."""

Aggregate = Literal["mean", "median", "sum", "count", "min", "max", "stddev", "sem", "rate"]

OPERATORS = ("!=", ">=", "<=", "=", ">", "<")
"""Filter operators, longest first (the ``--knob`` grammar's)."""


def _utf8(text: str, what: str) -> None:
    """Refuse ``text`` that holds a byte no UTF-8 decodes (a raw command-line argument).

    Raises:
        QueryError: (field ``what``) naming it.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError(f"{shown(text)}: not UTF-8 text", what) from None


_FILTER_RE = re.compile(r"^(?P<field>[^=!<>]*?)(?P<op>!=|>=|<=|=|>|<)(?P<value>.*)$", re.S)


_WORDS = {"measures": "measure", "filters": "filter", "by": "key", "compare": "compare",
          "sort": "sort", "metric": "metric", "grain": "grain"}  # fmt: skip


def _as_typed(value: object) -> object:
    """A JSON number or boolean as the text the CLI takes for it (``300``, ``0.1``, ``true``).

    Raises:
        ValueError: a number that is not finite (a JSON ``1e999`` reads as ``inf``; what was
            typed is lost in the reading, so it is not echoed as ``inf`` as if typed).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        raise ValueError("the value reads as NaN (a YAML .nan, a JSON NaN), not a number; "
                         "give a finite one")  # fmt: skip
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"the number reads as {value}, not a finite number (a YAML .inf, "
                         "or a JSON or YAML number past ±1.8e308, does); give a finite "
                         "one")  # fmt: skip
    if isinstance(value, (int, float)):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_as_typed)]
"""A filter's value or a comparison's arm: text, or a JSON number or boolean read as its text."""


def _as_arm(value: object) -> object:
    """An arm as :func:`_as_typed` reads it; an empty one (``""``, the page's empty box) None."""
    if isinstance(value, str) and not value.strip():
        return None
    return _as_typed(value)


Arm = Annotated[str | None, BeforeValidator(_as_arm)]
"""A comparison's arm: a value (as :data:`Text`), or None for the group of rows without the key
(JSON null or ``""``; an empty arm on the command line, ``KEY=,B``). A text arm is a value, as a
filter's is: ``(blank)`` is the recorded text ``(blank)``, never the blank group."""


class QueryError(ValueError):
    """A query that cannot be answered; one line naming the bad value.

    Attributes:
        field: The query field at fault (``grain``, ``by``, ``measures``, ``filters``, ...).
        detail: The reason, starting with the bad value (``'x:avg': unknown aggregate ...``).
        message: ``<what> <detail>`` (``measure 'x:avg': unknown aggregate ...``), the line a
            surface without flags shows; the CLI shows ``--<flag> <detail>``.
        also: The query's other values refused after this one (``analysis.refused_after``:
            the selection's, or a name the rows do not hold, behind a ``sort`` refused): REST
            lists each under ``errors``, MCP joins each with ``; ``.
    """

    def __init__(self, detail: str, field: str, mentions: tuple[str, ...] = ()) -> None:
        """Keep the detail and the field at fault.

        ``mentions``: further query fields the detail names, each written ``{field}`` in it
        (``needs two keys ({by} K1,K2)``); ``detail`` and ``message`` name each by its field,
        :meth:`said` as a surface does (the CLI: ``--by``).
        """
        self.field = field
        self.mentions = mentions
        self._template = detail
        self.detail = self.said()
        self.message = f"{_WORDS.get(field, field)} {self.detail}"
        self.also: tuple[ValueError, ...] = ()
        super().__init__(self.message)

    @property
    def every(self) -> tuple[ValueError, ...]:
        """This refusal and :attr:`also`: every value of the query refused, in order."""
        return (self, *self.also)

    def said(self, names: Mapping[str, str] | None = None) -> str:
        """Return ``detail``, each field it mentions named as ``names`` says (default: field)."""
        text = self._template
        for mentioned in self.mentions:
            text = text.replace("{" + mentioned + "}", (names or {}).get(mentioned, mentioned))
        return text


def query_error_of(exc: ValidationError) -> QueryError | None:
    """The :class:`QueryError` a query's own validator raised, if that is the first error.

    pydantic wraps what a validator raises; a surface answers it as it answers any other
    refused query (its field and its one line, without pydantic's ``Value error, ``).
    """
    errors = exc.errors()
    found = errors[0].get("ctx", {}).get("error") if errors else None
    return found if isinstance(found, QueryError) else None


class Measure(BaseModel):
    """One measure: a field of the grain's rows and how its values are aggregated per group."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    field: Annotated[str, Field(min_length=1)]
    agg: Aggregate = "mean"

    @field_validator("agg", mode="before")
    @classmethod
    def _known_aggregate(cls, agg: object, info: ValidationInfo) -> object:
        """Refuse an aggregate not in :data:`AGGREGATES` as ``--measure F:AGG`` words it.

        REST's ``{"field": ..., "agg": "avg"}`` was pydantic's ``Input should be ...``.
        """
        if isinstance(agg, str) and agg not in AGGREGATES:
            typed = f"{info.data.get('field', '')}:{agg}"
            raise QueryError(
                f"{shown(typed)}: unknown aggregate {shown(agg)} (one of {', '.join(AGGREGATES)})",
                "measures",
            )
        return agg

    @classmethod
    def parse(cls, text: str) -> Measure:
        """Read ``FIELD[:AGG]`` (``round_success:rate``, ``total_cost_usd:sum``).

        Raises:
            QueryError: (field ``measures``) no field, an aggregate not in :data:`AGGREGATES`,
                or a byte that is not UTF-8 (as a filter's).
        """
        _utf8(text, "measures")
        name, colon, agg = text.strip().rpartition(":")
        if not colon:
            name, agg = text.strip(), "mean"
        if not name:
            raise QueryError(f"{shown(text)} names no field", "measures")
        if agg not in AGGREGATES:
            raise QueryError(
                f"{shown(text)}: unknown aggregate {shown(agg)} (one of {', '.join(AGGREGATES)})",
                "measures",
            )
        given = {"field": name, "agg": agg} if colon else {"field": name}  # as typed
        return cls.model_validate(given)

    @property
    def label(self) -> str:
        """``field:agg``, the measure's name in tables and JSON."""
        return f"{self.field}:{self.agg}"

    @property
    def typed(self) -> str:
        """The measure as it was asked for: ``field`` alone when no aggregate was given.

        A refusal names what the user wrote (``--measure status``), not the default it took.
        """
        return self.label if "agg" in self.model_fields_set else self.field


class RowFilter(BaseModel):
    """A condition on the grain's rows: ``FIELD<op>VALUE``.

    Typed from the column: a numeric column compares numerically (the value must read as a
    number); any other compares as text, case-insensitively, under ``=`` and ``!=`` only. A row
    whose cell is blank (the run never recorded it) matches nothing, under every operator.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    field: Annotated[str, Field(min_length=1)]
    op: Literal["!=", ">=", "<=", "=", ">", "<"]
    value: Text

    @classmethod
    def parse(cls, text: str) -> RowFilter:
        """Read ``FIELD<op>VALUE``.

        Raises:
            QueryError: (field ``filters``) no operator, no field before it, or a byte that
                is not UTF-8.
        """
        _utf8(text, "filters")
        found = _FILTER_RE.match(text)
        if found is None:
            raise QueryError(
                f"{shown(text)} has no operator (one of {' '.join(OPERATORS)})", "filters"
            )
        if not found["field"].strip():
            raise QueryError(f"{shown(text)} names no field before {found['op']}", "filters")
        return cls.model_validate(
            {"field": found["field"].strip(), "op": found["op"], "value": found["value"]}
        )

    @model_validator(mode="after")
    def _text(self) -> RowFilter:
        _utf8(str(self), "filters")  # a JSON body's lone surrogate, as a command line's byte
        if not self.value.strip():  # it would match nothing (a blank is never matched)
            raise QueryError(f"{shown(str(self))}: empty value", "filters")
        return self

    def __str__(self) -> str:
        """Return the filter as written."""
        return f"{self.field}{self.op}{self.value}"


class Compare(BaseModel):
    """Compare arm ``b`` with arm ``a`` of group key ``key``: the difference B - A."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: Annotated[str, Field(min_length=1)]
    a: Arm
    b: Arm

    @classmethod
    def parse(cls, text: str) -> Compare:
        """Read ``KEY=A,B``; an empty arm (``KEY=,B``) is the group of rows without the key.

        Raises:
            QueryError: (field ``compare``) not ``KEY=A,B`` with two different arms, or a byte
                that is not UTF-8.
        """
        _utf8(text, "compare")
        key, eq, arms = text.partition("=")
        values = arms.split(",")
        if not eq or not key.strip() or len(values) != 2:
            raise QueryError(f"{shown(text)} is not KEY=A,B", "compare")
        a, b = (v.strip() or None for v in values)
        if a == b:
            raise QueryError(f"{shown(text)} names the arm {shown(a or '')} twice", "compare")
        return cls(key=key.strip(), a=a, b=b)

    @model_validator(mode="after")
    def _text(self) -> Compare:
        _utf8(str(self), "compare")  # a JSON body's lone surrogate
        if self.a == self.b:  # a JSON body's, as a command line's
            raise QueryError(f"{shown(str(self))} names the arm {shown(self.a or '')} twice",
                             "compare")  # fmt: skip
        return self

    def __str__(self) -> str:
        """Return the comparison as ``--compare`` takes it (a blank arm empty)."""
        return f"{self.key}={self.a or ''},{self.b or ''}"


__all__ = [
    "AGGREGATES",
    "GRAINS",
    "OPERATORS",
    "Compare",
    "Measure",
    "QueryError",
    "RowFilter",
    "query_error_of",
]
