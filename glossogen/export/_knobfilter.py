"""The knob-filter grammar: ``<knob><operator><value>``, compared by the recorded value's type.

The comparison is typed from what the run recorded, never from the scenario's knobs schema,
so a run recorded before a knob changed type still answers:

- a number (``int``/``float``) compares numerically; the value must read as a number;
- a boolean takes ``true``/``false`` under ``=``/``!=`` and refuses the ordering operators;
- a string compares case-insensitively under ``=``/``!=`` and refuses the ordering operators;
- ``null`` (the only reserved word) names a recorded null: ``=null`` keeps nulls, ``!=null``
  keeps the rest; the ordering operators never match a null, and ``!=`` with any other value
  keeps a null (not swapping at all is not swapping at round 16);
- a knob the run never recorded keeps nothing, even under ``!=``;
- a list or a mapping is not filterable (refused).

A nested knob is addressed with dots (``model_overrides.field_observer.model``), the way the
CSV names its column.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from glossogen.refusals import Refusal, shown
from glossogen.storage import no_run_line

OPERATORS = ("!=", ">=", "<=", "=", ">", "<")
"""The operators, longest first (so ``>=`` is not read as ``>`` then ``=...``)."""

_CONDITION_RE = re.compile(r"^(?P<knob>[^=!<>]*?)(?P<op>!=|>=|<=|=|>|<)(?P<value>.*)$", re.S)
_ORDER = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
_MISSING = object()


class SelectionError(ValueError):
    """A selection that cannot be honoured; one line naming what to change.

    Attributes:
        message: The one-line reason (names knob, operator and value for a knob condition),
            naming the selection's fields (the REST answer).
        field: The selection field at fault (``knob``, ``run_ids``, ``max_runs``, ...).
        refusal: The refusal as data, which each surface words its own way (the CLI names
            its flags), or None when the line names no field a surface sets.
        served: The refusal as a server's client reads it (REST, MCP), when ``refusal``
            names the server's own runs directory (which the CLI's user typed, a client did
            not); None when the two are the same.
        usage: A value malformed whatever the runs hold (a knob condition with no operator,
            an empty value, a malformed run id): the CLI's exit 64; else 65 (a refusal of
            what the runs hold: a ``status`` no run has, a knob value its type cannot read).
        also: The selection's other values refused, in its fields' order (this one is the
            first): every surface names each (:attr:`every`).
    """

    def __init__(
        self, message: str, field: str, refusal: Refusal | None = None, usage: bool = False
    ) -> None:
        """Keep the message, the field at fault and the refusal it words."""
        super().__init__(message)
        self.message = message
        self.field = field
        self.refusal = refusal
        self.served: Refusal | None = None
        self.usage = usage
        self.also: tuple[SelectionError, ...] = ()

    @property
    def every(self) -> tuple[SelectionError, ...]:
        """This refusal and :attr:`also`: every value of the selection refused, in order."""
        return (self, *self.also)

    @classmethod
    def of(
        cls, refusal: Refusal, served: Refusal | None = None, usage: bool = False
    ) -> SelectionError:
        """The error of ``refusal``, its line naming the selection's fields.

        ``served``: the refusal as a server's client reads it, when ``refusal`` names the
        server's runs directory. ``usage``: see :attr:`usage`.
        """
        error = cls(refusal.worded(), refusal.field, refusal, usage)
        error.served = served
        return error


def together(refused: Sequence[SelectionError]) -> SelectionError | None:
    """The first of ``refused`` carrying every other, in order; None when none was refused.

    Each one's own :attr:`~SelectionError.also` is flattened in its place.
    """
    every = [each for error in refused for each in error.every]
    if not every:
        return None
    first = every[0]
    first.also = tuple(every[1:])
    return first


def raise_together(refused: Sequence[SelectionError]) -> None:
    """Raise :func:`together` of ``refused`` (the first, carrying the others); none: return.

    Raises:
        SelectionError: the first refused, naming every other in ``also``.
    """
    first = together(refused)
    if first is not None:
        raise first


class NamedRunsRefused(SelectionError):
    """Runs named by id (``--run-id``, ``run_ids``) that a selection refuses: exit 66, REST 404.

    :class:`RunsMissing` (ids that no longer resolve) and :class:`RunsUnreadable` (runs that
    cannot be read); every surface catches this one class, so the two are refused alike by
    the export, the evaluation and the analysis.
    """


class RunsMissing(NamedRunsRefused):
    """Explicit run ids that no longer resolve (no folder, no log, or another group's run).

    Attributes:
        missing_run_ids: The ids, in the order given.
    """

    def __init__(self, missing_run_ids: Sequence[str]) -> None:
        """Keep the ids; the line names them (field ``run_ids``)."""
        self.missing_run_ids = list(missing_run_ids)
        super().__init__(no_run_line(self.missing_run_ids), "run_ids")  # the resolver's words


class RunsUnreadable(NamedRunsRefused):
    """Explicit run ids naming runs that cannot be read (a damaged ``labels.json``, an empty log).

    A run the user named is refused as one that no longer resolves is (exit 66, REST 404, a
    tool error), never skipped: a run found by filters that cannot be read is skipped with a
    note instead.

    Attributes:
        unreadable_runs: Run id to why it cannot be read (its file within the runs dir), in
            the order given.
    """

    def __init__(self, unreadable_runs: Mapping[str, str]) -> None:
        """Keep the runs; the line names each with why (field ``run_ids``)."""
        self.unreadable_runs = dict(unreadable_runs)
        said = "; ".join(f"{run_id}: {why}" for run_id, why in self.unreadable_runs.items())
        super().__init__(f"runs that cannot be read: {said}", "run_ids")


def _condition_error(
    text: str, reason: str, sent: tuple[str, ...] = (), usage: bool = False
) -> SelectionError:
    """The refusal of the condition ``text``; ``sent``: its parts the reason quotes as sent."""
    refusal = Refusal(field="knob", value=shown(text), reason=reason, sent=sent)  # REST's, MCP's
    return SelectionError.of(refusal, usage=usage)


@dataclass(frozen=True)
class KnobCondition:
    """One parsed ``--knob`` condition.

    Attributes:
        knob: The knob's dotted path (``round_time_budget_seconds``,
            ``model_overrides.field_observer.model``).
        op: One of :data:`OPERATORS`.
        value: The value as written (``null`` is the reserved null).
    """

    knob: str
    op: str
    value: str

    @classmethod
    def parse(cls, text: str) -> KnobCondition:
        """Parse ``<knob><operator><value>``.

        Raises:
            SelectionError: (field ``knob``) no operator, or no knob name before it.
        """
        found = _CONDITION_RE.match(text)
        if found is None:
            raise _condition_error(
                text,
                "no operator; write <knob><op><value> with op one of " + " ".join(OPERATORS),
                usage=True,
            )
        knob = found["knob"].strip()
        if not knob:
            raise _condition_error(text, f"no knob name before {found['op']}", usage=True)
        return cls(knob, found["op"], found["value"])

    def __str__(self) -> str:
        """Return the condition as written."""
        return f"{self.knob}{self.op}{self.value}"

    def _refuse(self, reason: str) -> SelectionError:
        knob, value = shown(self.knob), shown(self.value)
        said = f"knob {knob}, operator {self.op!r}, value {value}: {reason}"
        return _condition_error(str(self), said, sent=(knob, value))

    def matches(self, config: dict[str, Any]) -> bool:
        """Return whether a run's recorded config satisfies this condition.

        Args:
            config: The run's recorded ``scenario_config`` (nested dicts).

        Returns:
            True when the condition holds; False when it does not or the knob is unrecorded.

        Raises:
            SelectionError: (field ``knob``) the value cannot be read as the recorded type, an
                ordering operator on a boolean or string, or a list/mapping knob.
        """
        recorded = lookup(config, self.knob)
        if recorded is _MISSING:
            return False
        if isinstance(recorded, (list, dict)):
            raise self._refuse("the run records a list or mapping there, which is not filterable")
        if self.value == "null":
            if self.op == "=":
                return recorded is None
            if self.op == "!=":
                return recorded is not None
            return False
        if recorded is None:
            if self.op in _ORDER:
                return False
            return self.op == "!="
        if isinstance(recorded, bool):
            wanted = self.value.strip().lower()
            if self.op in _ORDER:
                raise self._refuse("the run records a boolean, which has no order")
            if wanted not in ("true", "false"):
                raise self._refuse("the run records a boolean; write true or false")
            return (recorded == (wanted == "true")) == (self.op == "=")
        if isinstance(recorded, (int, float)):
            return self._matches_number(recorded)
        text = str(recorded)
        if self.op in _ORDER:
            raise self._refuse("the run records a string; only = and != apply")
        return (text.casefold() == self.value.casefold()) == (self.op == "=")

    def _matches_number(self, recorded: float) -> bool:
        """Whether a recorded number satisfies this condition (its value read as a number).

        Raises:
            SelectionError: (field ``knob``) the value is not a number, or not a finite one
                (``nan``, ``inf``, ``1e999``: they compare with nothing as a user means).
        """
        try:
            number = float(self.value)
        except ValueError:
            raise self._refuse("the run records a number") from None
        if not math.isfinite(number):
            raise self._refuse("the run records a number; this is not a finite one")
        if self.op in _ORDER:
            return bool(_ORDER[self.op](recorded, number))
        return (recorded == number) == (self.op == "=")


def lookup(config: dict[str, Any], dotted: str) -> Any:
    """Return the value at ``dotted`` in nested ``config``, or a private sentinel if absent.

    A top-level key that itself contains dots is found before descending.
    """
    if dotted in config:
        return config[dotted]
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def condition_refusals(texts: list[str] | None) -> list[SelectionError]:
    """The refusal of each ``--knob`` condition that does not parse, in the order given."""
    refused: list[SelectionError] = []
    for text in texts or []:
        try:
            KnobCondition.parse(text)
        except SelectionError as exc:
            refused.append(exc)
    return refused


def parse_conditions(texts: list[str] | None) -> list[KnobCondition]:
    """Parse every ``--knob`` condition (see :meth:`KnobCondition.parse`).

    Raises:
        SelectionError: (field ``knob``) the first condition that does not parse, naming
            each other one in ``also``.
    """
    raise_together(condition_refusals(texts))
    return [KnobCondition.parse(t) for t in texts or []]
