"""A refused value of a request, as data: which field, which value, why; and a limit reached.

The library raises its own error types (``LaunchError``, ``DeriveError``, ...) carrying a
:class:`Refusal` as ``exc.refusal`` and never spells a surface's name for the field: ``str()``
of the error names the request field (``spend_cap_usd 0.0001: ...``), which is how REST and
the sweep word it. Each other surface words the refusal its own way with
:meth:`Refusal.worded`: the CLI names its flag, MCP the tool argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict


class Refusal(BaseModel):
    """One request value refused.

    Attributes:
        field: The request field refused (``max_agent_turns``, ``spend_cap_usd``,
            ``run_timeout_seconds``, ``after_round``, ``rounds_after``, ...).
        value: The value as the refusal shows it (``0.0001``, ``6``), or "" when the reason
            states it (a bound: ``must be at least 1, got 0``).
        reason: Why, one line, without the field's name.
        asks: True when the reason asks for the field rather than refusing its value: worded
            ``"<reason>: pass <name>"``.
        also: Further fields named together with ``field`` (``model`` and ``provider``, the
            judge): worded ``"<name> and <name>"``.
        colon: With no value shown, a reason that does not read on from the name: worded
            ``"<name>: <reason>"``.
        trails: The name ends the line: ``"<reason> <name>"`` (``replacing an agent needs``).
    """

    model_config = ConfigDict(frozen=True)

    field: str
    value: str = ""
    reason: str
    asks: bool = False
    also: tuple[str, ...] = ()
    colon: bool = False
    trails: bool = False

    def worded(self, names: str | Mapping[str, str] | None = None) -> str:
        """Return the one-line refusal naming each field as a surface does.

        Args:
            names: The surface's name for each field (a field not in it keeps its own name),
                or one name for ``field``; None: every field by its own name.

        Returns:
            ``"<name> <value>: <reason>"``, ``"<name> <reason>"`` when no value is shown
            (``"<name>: <reason>"`` with ``colon``), ``"<reason> <name>"`` with ``trails``,
            or ``"<reason>: pass <name>"`` when the reason asks for the field.
        """
        table = {self.field: names} if isinstance(names, str) else dict(names or {})
        named = " and ".join(table.get(f, f) for f in (self.field, *self.also))
        if self.asks:
            return f"{self.reason}: pass {named}"
        if self.trails:
            return f"{self.reason} {named}"
        if self.value:
            return f"{named} {self.value}: {self.reason}"
        return f"{named}: {self.reason}" if self.colon else f"{named} {self.reason}"


def refusal_of(exc: BaseException) -> Refusal | None:
    """Return the refusal an error carries (``exc.refusal``), or None."""
    found = getattr(exc, "refusal", None)
    return found if isinstance(found, Refusal) else None


def worded(exc: BaseException, names: Mapping[str, str] | None = None) -> str:
    """Return an error's one line, a refused request value named as ``names`` says.

    An error that carries no :class:`Refusal` is its ``str()``.
    """
    refusal = refusal_of(exc)
    return str(exc) if refusal is None else refusal.worded(names)


class LimitReached(BaseModel):
    """A run limit a run reached, as data: which limit, its value, and what reached it.

    The run's log records :meth:`worded` with the request field's name (``max_agent_turns``,
    ``spend_cap_usd``); a surface words it again with its own name for the field.

    Attributes:
        kind: ``turns``, ``time`` or ``spend``.
        field: The request field of the limit.
        limit: The limit's value.
        before: What reached it, the words before the limit's name.
        after: Where it was reached, the words after the limit's value ("" for none).
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["turns", "time", "spend"]
    field: str
    limit: float
    before: str
    after: str = ""

    def worded(self, name: str | None = None) -> str:
        """Return the one-line reason naming the limit as ``name`` (default: the field)."""
        said = f"{self.before} {name or self.field} {self.limit:g}"
        return f"{said} {self.after}" if self.after else said
