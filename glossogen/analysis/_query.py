"""The analysis query and its answer, as typed values (pydantic).

Every surface (the CLI today; REST, the page and MCP later) translates its input into a
:class:`Query` and renders the :class:`Result`; the engine (``_engine.py``) is the only place
that answers one. A query is checked whole when it is built (its grain, keys, measures,
aggregates, filters and comparison are well formed) before any run is read; the names it uses
are checked against the fields the selected runs recorded once they are read, before anything
is computed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from glossogen.export import FilterSelection, Selection
from glossogen.refusals import ECHOED, MAX_COUNT, count_refused, shown

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


BLANK = "(blank)"
"""How the terminal and a CSV show a group key a row does not carry (a group of its own, never
merged); JSON, REST and MCP give it as null. A recorded value that reads ``(blank)`` is shown
quoted there (:func:`key_shown`), so the two are never taken for each other."""


def key_shown(value: str | None) -> str:
    """A group key as the terminal, a CSV and a chart show it.

    The blank (None) as :data:`BLANK`; a recorded value that reads ``(blank)`` quoted
    (``"(blank)"``); any other value as it is.
    """
    if value is None:
        return BLANK
    return f'"{value}"' if value == BLANK else value


MAX_KEYS = 2
"""Group keys a query may take."""


def _count_in_range(value: int, field: str, least: int = 1) -> int:
    """Refuse a ``limit``, ``max_runs`` or ``seed`` out of ``least``..:data:`MAX_COUNT`.

    The bound is ``refusals.count_refused``, the export's too.

    Raises:
        QueryError: (field ``field``) ``0: must be at least 1``, or ``<value>: must be at
            most 9007199254740991 (2**53 - 1, ...)``.
    """
    refused = count_refused(value, field, least)
    if refused is not None:
        raise QueryError(f"{refused.value}: {refused.reason}", field)
    return value


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


class Query(BaseModel):
    """A grouped question over a cohort of runs.

    Attributes:
        selection: Which runs (the export's selection, unchanged).
        grain: What one row is (:data:`GRAINS`).
        metric: For the ``observation`` grain, the metric whose observations are the rows.
        by: Group keys, at most :data:`MAX_KEYS` (none: one group of every row).
        filters: Row conditions, all of which must hold.
        measures: At least one.
        compare: Optional two-arm comparison on a key (the key need not be in ``by``).
        sort: A measure label (``field:agg``) or a key to order groups by; ``-`` in front for
            descending. Default: the keys, ascending, blank last.
        limit: Keep the first ``limit`` groups after sorting (1 to :data:`MAX_COUNT`).
        seed: Seed of the bootstrap's resampling (the same query gives the same interval).
        resamples: Bootstrap resamples per interval.
        max_runs: Ceiling on selected runs (the export's; 1 to :data:`MAX_COUNT`).
    """

    model_config = ConfigDict(extra="forbid")
    selection: Selection = Field(default_factory=FilterSelection)
    grain: Grain = "run"
    metric: str | None = None
    by: list[str] = Field(default_factory=list)  # at most MAX_KEYS: _distinct_keys words it
    filters: list[RowFilter] = Field(default_factory=list)
    measures: list[Measure] = Field(min_length=1)
    compare: Compare | None = None
    sort: str | None = None
    limit: StrictInt | None = None
    seed: StrictInt = 0  # 0 to MAX_COUNT: _count words it
    resamples: Annotated[int, Field(strict=True, ge=10, le=100_000)] = 2000
    max_runs: StrictInt = 5000

    # A validator raises a QueryError: pydantic keeps it (``ctx["error"]``), and every surface
    # answers its line in the shape of the engine's other refusals (:func:`query_error_of`).

    @field_validator("by")
    @classmethod
    def _distinct_keys(cls, by: list[str]) -> list[str]:
        for key in by:
            _utf8(key, "by")
        typed = shown(",".join(by))  # as --by takes them
        if any(not k.strip() for k in by):  # as --by '' and --by a, are refused
            raise QueryError(f"{typed}: a key is empty", "by")
        if len(by) > MAX_KEYS:  # as --by a,b,c is refused (was pydantic's "List should have...")
            raise QueryError(f"{typed}: at most two keys", "by")
        twice = [k for i, k in enumerate(by) if k in by[:i]]
        if twice:
            raise QueryError(f"{typed}: the key {shown(twice[0])} is named twice", "by")
        return by

    @field_validator("limit", "max_runs")
    @classmethod
    def _count(cls, value: int | None, info: ValidationInfo) -> int | None:
        return None if value is None else _count_in_range(value, str(info.field_name))

    @field_validator("seed")
    @classmethod
    def _seed(cls, value: int) -> int:
        return _count_in_range(value, "seed", least=0)

    @field_validator("grain", mode="before")
    @classmethod
    def _grain_text(cls, grain: object) -> object:
        """Refuse a grain that is not one of :data:`GRAINS`, naming it and them (as ``--grain``).

        Before the ``Literal`` check: pydantic's line names neither the value nor which byte
        of it is not UTF-8.
        """
        if isinstance(grain, str):
            _utf8(grain, "grain")
        if grain not in GRAINS:
            given = shown(grain) if isinstance(grain, str) else shown(json.dumps(grain), False)
            raise QueryError(f"{given} is not one of {', '.join(GRAINS)}", "grain")
        return grain

    @field_validator("metric", "sort")
    @classmethod
    def _text(cls, text: str | None, info: ValidationInfo) -> str | None:
        if text is not None:
            _utf8(text, str(info.field_name))
        return text

    @field_validator("measures")
    @classmethod
    def _distinct_measures(cls, measures: list[Measure]) -> list[Measure]:
        labels = [m.label for m in measures]
        twice = [label for i, label in enumerate(labels) if label in labels[:i]]
        if twice:  # its cells would be answered, and printed, twice
            raise QueryError(f"{shown(twice[0])}: a measure is named twice", "measures")
        return measures

    @model_validator(mode="after")
    def _observation_metric(self) -> Query:
        if self.grain == "observation" and self.metric is None:
            raise QueryError("is required at the observation grain (its metric's observations "
                             "are the rows)", "metric")  # fmt: skip
        if self.grain != "observation" and self.metric is not None:
            raise QueryError(
                f"{shown(self.metric)}: only the observation grain takes a metric (the "
                f"{{grain}} is {self.grain})",
                "metric",
                ("grain",),
            )
        return self


def _finite(value: float | None) -> float | None:
    """A value that is not a finite number (``NaN``, ``Infinity``) is missing (None)."""
    return value if value is None or math.isfinite(value) else None


Number = Annotated[float | None, AfterValidator(_finite)]
"""A number of an answer; one that is not finite is blank, as the engine blanks it (a result
posted back to be drawn, REST ``/render``, is read the same way)."""


class Interval(BaseModel):
    """A 95% interval and how it was found (``low`` never above ``high``)."""

    low: Number
    high: Number
    method: str
    """``wilson`` (a rate of runs), ``bootstrap`` (runs resampled; rows of a run move
    together), ``paired bootstrap`` (pairs resampled), or ``none`` (fewer than two values)."""

    @model_validator(mode="after")
    def _ordered(self) -> Interval:
        """Refuse an interval whose low end is above its high end (one posted to be drawn)."""
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low:g} is above high {self.high:g}")
        return self


Count = Annotated[int, Field(strict=True, ge=0)]
"""A number of rows or runs: a whole number, never negative (one posted to be drawn too)."""


class Cell(BaseModel):
    """One measure of one group: its value (None when the group has no value), n and missing."""

    measure: str
    value: Number
    n: Count
    """Rows with a value."""
    missing: Count
    """Rows of the group whose cell is blank (dropped, never read as 0)."""
    runs: Count
    """Distinct runs among the ``n`` rows (the clusters of the interval)."""
    interval: Interval | None = None
    """For ``mean`` and ``rate`` only."""

    @model_validator(mode="after")
    def _possible(self) -> Cell:
        """Refuse a cell no answer can hold (one posted to be drawn, REST ``/render``).

        Its runs are among its rows (``runs`` at most ``n``); a value comes from at least one
        row; a rate, and its interval's ends, lie in [0, 1]; the value's distance to each end
        of its interval is a float (an error bar drawn from it).
        """
        if self.runs > self.n:
            raise ValueError(f"runs {self.runs} is above n {self.n} (its rows' runs)")
        if self.value is not None and self.n == 0:
            raise ValueError(f"value {self.value:g} with n 0 (a value needs a row)")
        ends = [e for e in (self.interval.low, self.interval.high) if e is not None] \
            if self.interval else []  # fmt: skip
        if self.measure.endswith(":rate"):
            for name, number in (("value", self.value), *(("interval", e) for e in ends)):
                if number is not None and not 0.0 <= number <= 1.0:
                    raise ValueError(f"{name} {number:g} of a rate is outside [0, 1]")
        value = self.value
        for end in ends if value is not None else []:
            if value is not None and not math.isfinite(end - value):
                raise ValueError(f"value {value:g}: its interval's end {end:g} is beyond "
                                 "a float's reach from it (no bar can be drawn)")  # fmt: skip
        return self


class Group(BaseModel):
    """One group: its key values (None for rows without the key) and its cells."""

    keys: dict[str, str | None]
    cells: list[Cell]


class Comparison(BaseModel):
    """B - A of one measure (within one group of the other keys, when ``by`` holds more)."""

    measure: str
    key: str
    a: str | None
    b: str | None
    """The arms (None: the group of rows without the key)."""
    within: dict[str, str | None] = {}
    a_value: Number
    b_value: Number
    difference: Number
    interval: Interval
    paired: bool
    pairing: str
    """How the arms were paired (``seed``, ``fork of its source``), or why not (``unpaired:
    ...``)."""
    n_a: int
    n_b: int
    pairs: int


class Dimension(BaseModel):
    """A field of the grain's rows: its coverage and its distinct values."""

    name: str
    family: str
    dtype: str
    rows: int
    """Rows that carry a value."""
    runs: int
    """Runs with at least one row that carries it."""
    distinct: int
    values: list[str]
    """Up to 20 distinct values, sorted (all of them when ``distinct`` is 20 or fewer)."""


class Fields(BaseModel):
    """What a grain's rows over the selection hold (``--list-fields``)."""

    grain: Grain
    runs: int
    rows: int
    fields: list[Dimension]
    notes: list[str] = []
    """What the fields lack and why (runs not scored yet: no metric until ``evaluate``)."""


class Result(BaseModel):
    """The answer: the query, the runs read, the groups and the comparisons."""

    query: Query
    runs: int
    """Runs selected."""
    rows: int
    """Rows of the grain after the filters."""
    runs_after_filters: int | None = None
    """Runs those rows come from (``runs`` less the runs the filters left no row of)."""
    run_ids: list[str]
    """The runs selected (before the filters)."""
    groups: list[Group]
    comparisons: list[Comparison] = []
    notes: list[str] = []

    @model_validator(mode="after")
    def _groups_of_the_query(self) -> Result:
        """Each group is keyed by the query's keys and has a cell per measure, in order.

        A result the engine answered always is; one sent back to be drawn (REST ``/render``)
        is refused when edited out of shape.
        """
        labels = [m.label for m in self.query.measures]
        for i, group in enumerate(self.groups):
            if list(group.keys) != self.query.by:
                raise ValueError(
                    f"groups.{i} is keyed by {list(group.keys)}, the query by {self.query.by}"
                )
            if [c.measure for c in group.cells] != labels:
                raise ValueError(
                    f"groups.{i} has cells {[c.measure for c in group.cells]}, "
                    f"the query measures {labels}"
                )
        return self


__all__ = [
    "ECHOED",
    "AGGREGATES",
    "BLANK",
    "GRAINS",
    "MAX_COUNT",
    "MAX_KEYS",
    "Cell",
    "Compare",
    "Comparison",
    "Dimension",
    "Fields",
    "Group",
    "Interval",
    "Measure",
    "Query",
    "QueryError",
    "Result",
    "RowFilter",
    "key_shown",
    "query_error_of",
    "shown",
]
