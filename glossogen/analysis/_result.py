"""The analysis query's answer, as typed values (pydantic).

:class:`Result` (the groups, each a :class:`Cell` per measure with its n, missing and interval,
and the comparisons), and :class:`Fields` (what ``--list-fields`` lists). A result is built by
the engine (``_engine.py``) or sent back to be drawn (REST ``/render``): each value refuses a
shape no answer can hold. :data:`BLANK` and :func:`key_shown` say how a group key a row does
not carry is shown.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    model_validator,
)

from glossogen.analysis._query import Query
from glossogen.analysis._terms import Grain

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
    "BLANK",
    "Cell",
    "Comparison",
    "Dimension",
    "Fields",
    "Group",
    "Interval",
    "Result",
    "key_shown",
]
