"""The analysis query as one typed value (pydantic): :class:`Query`.

Every surface (the CLI, REST, the page and MCP) translates its input into a :class:`Query` and
renders the :class:`~glossogen.analysis.Result` (``_result.py``); the engine (``_engine.py``) is
the only place that answers one. A query is checked whole when it is built (its grain, keys,
measures, aggregates, filters and comparison are well formed: its terms, ``_terms.py``) before
any run is read; the names it uses are checked against the fields the selected runs recorded
once they are read, before anything is computed.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from glossogen.analysis._terms import GRAINS, Compare, Grain, Measure, QueryError, RowFilter, _utf8
from glossogen.export import FilterSelection, Selection
from glossogen.refusals import count_refused, shown

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


__all__ = ["MAX_KEYS", "Query"]
