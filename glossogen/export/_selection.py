"""The selection of runs: explicit run ids or filters, never a mix (a tagged union, no precedence).

The same selection model serves the CLI flags (:func:`selection_of`), the REST body and MCP's
arguments; :func:`~glossogen.export._select.select_runs` resolves it against a runs directory
(``_select.py``), reading each run as a :class:`~glossogen.export._record.RunRecord`
(``_record.py``).

``status`` matches the run's status (``completed``, ``error``, ``interrupted``,
``incomplete``, ``running`` for a log with no ``simulation_ended`` a live writer holds,
``stopped`` for one no writer holds) or its ``status_detail``, case-insensitively. The
GlossoGen 0.5 words the reference pages use are read as ours (``scenario_complete`` selects
every completed run, ``keyboard_interrupt`` and ``cancelled`` interrupted ones, as the log
reader upcasts them); any other word is refused, naming it, before a run is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)

from glossogen.eventlog import STATUSES as _VIEW_STATUSES
from glossogen.export._knobfilter import SelectionError, parse_conditions, raise_together
from glossogen.refusals import Refusal, shown
from glossogen.storage import run_id_refused

RunIds = Annotated[
    list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]],
    Field(min_length=1),
]
"""Run ids as every surface takes them (REST's selection, MCP's ``run_ids``): at least one,
none empty; an empty list is refused, never read as "every run"."""


NEEDS_RUN_ID = Refusal(field="run_ids", reason="needs a run id (<scenario>/<run_dir_name>)")
"""The refusal of a ``run_ids`` holding no run id (``[]``, ``--run-id ''``)."""


def check_run_ids(run_ids: list[str] | None, filters: Mapping[str, Any]) -> None:
    """Refuse run ids given beside a filter, or an empty list of them; None: none given.

    The one check of every surface's ``run_ids``: REST's selection (:class:`RunIdSelection`),
    MCP's argument and the CLI's ``--run-id`` (:func:`selection_of`), so each refuses
    ``run_ids: []`` in the same words, never reads it as every run.

    Args:
        run_ids: The run ids given, or None.
        filters: Each filter's value by its field (None, ``[]`` or ``""``: not given).

    Raises:
        SelectionError: (field ``run_ids``) ``run_ids cannot be combined with <filter>, ...``
            or ``run_ids needs a run id (<scenario>/<run_dir_name>)`` (none, or an empty one),
            or each malformed run id (the first, naming the others in ``also``).
    """
    if run_ids is None:
        return
    clashing = tuple(f for f, value in filters.items() if value not in (None, [], ""))
    if clashing:
        raise SelectionError.of(
            Refusal(field="run_ids", reason="cannot be combined with", listed=clashing), usage=True
        )
    if not run_ids or any(isinstance(r, str) and not r.strip() for r in run_ids):
        raise SelectionError.of(NEEDS_RUN_ID, usage=True)  # [] and [""] alike, on every surface
    refused = (run_id_refused("run_ids", r) if isinstance(r, str) else None for r in run_ids)
    raise_together([SelectionError.of(r, usage=True) for r in refused if r is not None])


class RunIdSelection(BaseModel):
    """Exactly these runs (``--run-id``, repeatable): at least one, none empty."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["run_ids"] = "run_ids"
    run_ids: RunIds

    @model_validator(mode="before")
    @classmethod
    def _as_the_cli_words_it(cls, value: Any) -> Any:
        """Refuse no run id, or a filter beside the ids, in the CLI's and MCP's words."""
        if isinstance(value, dict):
            filters = {f: value.get(f) for f in FilterSelection.model_fields if f != "kind"}
            check_run_ids(value.get("run_ids") or [], filters)  # none given: none there
        return value


class FilterSelection(BaseModel):
    """Every run matching all of these filters; a ``None`` filter does not filter."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["filters"] = "filters"
    scenario: list[str] | None = None
    labels: list[str] | None = None
    run_id_contains: str | None = None
    status: str | None = None
    contains_agent_id: str | None = None
    knob: list[str] | None = None

    @model_validator(mode="after")
    def _text(self) -> FilterSelection:
        r"""Refuse a value holding a lone surrogate (JSON's ``"\udcff"``), as the CLI refuses it.

        It could be neither matched nor echoed back (a JSON answer is UTF-8).
        """
        _check_text({"scenario": self.scenario, "labels": self.labels,
                     "run_id_contains": self.run_id_contains, "status": self.status,
                     "contains_agent_id": self.contains_agent_id, "knob": self.knob})  # fmt: skip
        return self


def _kind(value: Any) -> str | None:
    """The selection's ``kind``; absent, the default of the model its fields name.

    Each model's schema says its ``kind`` has a default, so a body without it is read as
    the one its fields make: ``run_ids`` when it gives ``run_ids``, else ``filters`` (``{}``
    is every run).
    """
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind is None and "kind" not in value:
            return "run_ids" if "run_ids" in value else "filters"
        return kind if isinstance(kind, str) else repr(kind)
    return getattr(value, "kind", None)


Selection = Annotated[
    Annotated[RunIdSelection, Tag("run_ids")] | Annotated[FilterSelection, Tag("filters")],
    Discriminator(
        _kind,
        custom_error_type="selection_kind",
        custom_error_message="Input should be an object of kind 'run_ids' or 'filters'",
    ),
]
"""The selection: ``{"kind": "run_ids", ...}`` or ``{"kind": "filters", ...}``; without a
``kind``, ``run_ids`` when the body gives ``run_ids``, else ``filters``."""


_OWN_EMPTY = ("run_ids", "knob")
"""Fields whose empty value has its own line: a run id it needs, a condition's operator."""


def _check_text(values: dict[str, list[str] | str | None]) -> None:
    """Refuse a selection value not UTF-8 (a command line's surrogate), or an empty one.

    ``--label ''``, ``--label sweep=``, ``--label =x``, ``--run-id-contains ''``: an empty
    filter value would select every run, or none, without saying so; it is refused as an
    empty run id and an empty knob condition are (one line naming the field and value).

    Raises:
        SelectionError: naming the field and the value, ``not UTF-8 text``, ``empty value``
            or (a label ``=x``) ``empty label name``: the first, each other in ``also``.
    """
    refused: list[SelectionError] = []
    for name, given in values.items():
        for text in [given] if isinstance(given, str) else given or []:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                refusal = Refusal(field=name, value=shown(text), reason="not UTF-8 text")
                refused.append(SelectionError.of(refusal, usage=True))
                continue
            if name in _OWN_EMPTY:
                continue
            key, eq, value = text.partition("=") if name == "labels" else (text, "", "")
            reason = ("empty value" if not key.strip() and not eq or eq and not value.strip()
                      else "empty label name" if not key.strip() else "")  # fmt: skip
            if reason:
                refusal = Refusal(field=name, value=shown(text), reason=reason)
                refused.append(SelectionError.of(refusal, usage=True))
    raise_together(refused)


def selection_of(
    run_ids: list[str] | None = None,
    scenario: list[str] | None = None,
    labels: list[str] | None = None,
    run_id_contains: str | None = None,
    status: str | None = None,
    contains_agent_id: str | None = None,
    knob: list[str] | None = None,
    *,
    entry_checks: bool = False,
) -> RunIdSelection | FilterSelection:
    """The selection the command line's flags ask for: run ids, or filters, never both.

    Args:
        run_ids: ``--run-id`` values (each ``<scenario>/<run_dir_name>``); None when none was
            given (the filters select), an empty list is refused (:func:`check_run_ids`).
        scenario: ``--scenario`` (an empty filter, here and below, does not filter).
        labels: ``--label``.
        run_id_contains: ``--run-id-contains``.
        status: ``--status``.
        contains_agent_id: ``--contains-agent-id``.
        knob: ``--knob`` conditions.
        entry_checks: Leave the knob conditions' syntax to the operation's entry (the
            export's plan, the cohort's check), which refuses every value of the selection
            together, in its fields' order, beside the request's other values; False: refused
            here (``glossogen analyze``, ``verify``, ``rejudge``).

    Raises:
        SelectionError: run ids given with a filter, none or an empty one (field ``run_ids``), a
            value that is not UTF-8 text (its field), or a knob condition with no operator
            (field ``knob``); its ``refusal`` names the
            fields, which each surface words its own way. Every value refused is named: the
            first raised, each other in ``also``, in the selection's fields' order.
    """
    filters = {  # the selection's fields' order (FilterSelection): its refusals' order
        "scenario": scenario,
        "labels": labels,
        "run_id_contains": run_id_contains,
        "status": status,
        "contains_agent_id": contains_agent_id,
        "knob": knob,
    }
    _check_text({"run_ids": run_ids, **filters})
    check_run_ids(run_ids, filters)
    if run_ids is not None:
        return RunIdSelection(run_ids=run_ids)
    if not entry_checks:
        parse_conditions(knob)
    return FilterSelection(
        scenario=scenario or None,
        labels=labels or None,
        run_id_contains=run_id_contains,
        status=status,
        contains_agent_id=contains_agent_id,
        knob=knob or None,
    )


STATUSES = _VIEW_STATUSES
"""The statuses a run can have (``RunView``'s vocabulary, defined there)."""

LEGACY_STATUSES = {
    "scenario_complete": "completed",
    "keyboard_interrupt": "interrupted",
    "cancelled": "interrupted",
}
"""GlossoGen 0.5 status words, read as ours (the upcast of ``simulation_ended``)."""


def _status_word(status: str | None) -> str | None:
    """The status a ``status`` filter selects (lower-cased, 0.5 words as ours), or None.

    Raises:
        SelectionError: a word no run can have (field ``status``).
    """
    if status is None:
        return None
    word = status.strip().casefold()
    word = LEGACY_STATUSES.get(word, word)
    if word not in STATUSES:
        known = ", ".join(STATUSES)
        raise SelectionError.of(
            Refusal(
                field="status",
                reason=f"{shown(status)} is no run's status (one of {known}, or scenario_complete)",
                sent=(shown(status),),
            )
        )
    return word
