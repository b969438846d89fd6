"""A refused value of a request, as data: which field, which value, why; and a limit reached.

The library raises its own error types (``LaunchError``, ``DeriveError``, ...) carrying a
:class:`Refusal` as ``exc.refusal`` and never spells a surface's name for the field: ``str()``
of the error names the request field (``spend_cap_usd 0.0001: ...``), which is how REST and
the sweep word it. Each other surface words the refusal its own way with
:meth:`Refusal.worded`: the CLI names its flag, MCP the tool argument.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

ECHOED = 80
"""Characters of a refused value a refusal echoes (a longer one is cut, with ``...``)."""

MAX_AGENT_TURNS_LIMIT = 1_000_000
"""The most model requests an agent may be given (``max_agent_turns``): far past any run a user
plays; a larger one is refused before anything is written."""

MAX_COUNT = 2**53 - 1
"""The largest count a request may ask (``limit``, ``max_runs``: 9007199254740991): the largest
whole number every JSON reader holds exactly (JavaScript's ``Number.MAX_SAFE_INTEGER``, the
page's). Every answer echoes its query, so a larger one would be read back as another number;
no cohort comes near it (the bench's is 10,000 runs)."""

LOGGED_INT_MAX = 2**63 - 1
"""The largest integer a run may record from a request (``after_round``, ``rounds_after``,
replicas, seeds): the log's readers parse signed 64-bit integers, so a larger one is refused."""
LOGGED_INT_MIN = -(2**63)
"""The smallest integer a run may record from a request (a seed)."""


def shown(value: object, quoted: bool = True) -> str:
    """``value`` as every refusal echoes it: quoted, cut to :data:`ECHOED` characters + ``...``.

    The one place a refused value is cut, so a pasted page of text is never echoed whole.
    ``quoted=False``: as written (a path a line names bare), cut the same way.
    """
    text = str(value)
    show = quote if quoted else str
    return show(text) if len(text) <= ECHOED else show(text[:ECHOED]) + "..."


def quote(text: str) -> str:
    r"""``text`` quoted as every refusal echoes it: as typed, a backslash once.

    Python's ``repr`` but for ``\``: a character that cannot be shown (a newline, a lone
    surrogate's ``\udcff``) is escaped, while a backslash the user typed (``veyru\1796437285``)
    is echoed once, never doubled.
    """
    return repr(text).replace("\\\\", "\\")


def shown_path(path: object, quoted: bool = True) -> str:
    """A file or folder path as every refusal echoes it: whole, never cut.

    The user must see the whole path to fix it (a temporary folder alone can pass
    :data:`ECHOED` characters); the system bounds a path's length, so no page is echoed.
    ``quoted=False``: as written (a path a line names bare).
    """
    return quote(str(path)) if quoted else str(path)


def is_utf8(text: str) -> bool:
    r"""Whether ``text`` is UTF-8 text, which every answer can carry.

    Not: a lone surrogate (a command line's byte that is not UTF-8, or a JSON string's
    ``\udcff`` escape).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def runs_dir_not_text(runs_dir: str) -> Refusal | None:
    r"""Refuse a ``runs_dir`` that is not UTF-8 text; None when it is text.

    A byte that is not UTF-8 (a command line's ``$'/tmp/x\xff'``) reaches Python as a lone
    surrogate: no folder name a run records, prints or sends can hold it. The one check: the
    CLI's entry asks it of every command's ``--runs-dir`` before anything is read or written,
    and :func:`glossogen.replay.replay_run` of its request. The path is shown whole.
    """
    return path_not_text("runs_dir", runs_dir)


def path_not_text(field: str, path: str) -> Refusal | None:
    """Refuse the path field ``field`` (``runs_dir``, ``judge_cache``) not UTF-8 text.

    As :func:`runs_dir_not_text`; None when it is text.
    """
    if is_utf8(path):
        return None
    return Refusal(field=field, value=shown_path(path), reason="not UTF-8 text")


def not_utf8(value: Any) -> tuple[tuple[str, ...], str] | None:
    """The first string of ``value`` (JSON-like data) that is not UTF-8 text, and its place.

    The place is the keys and indexes down to it (``("selection", "labels", "0")``); a key
    that is not UTF-8 is named at its mapping (the key itself cannot be echoed as a place).
    Strings are taken breadth first (a mapping's keys when it is reached, its values in turn);
    an ASCII string is text at once, and numbers, booleans and nulls are not queued, so a
    report of a few thousand values is walked in linear time, each place built only for a
    container or the string found.
    """
    queue: deque[tuple[tuple[str, ...], str | None, Any]] = deque([((), None, value)])
    while queue:
        parent, key, item = queue.popleft()
        if isinstance(item, str):
            if not item.isascii() and not is_utf8(item):
                return (parent if key is None else (*parent, key)), item
            continue
        where = parent if key is None else (*parent, key)
        if isinstance(item, dict):
            for name, inner in item.items():
                if isinstance(name, str) and not name.isascii() and not is_utf8(name):
                    return where, name
                if isinstance(inner, str | dict | list):
                    queue.append((where, str(name), inner))
        elif isinstance(item, list):
            queue.extend(
                (where, str(i), inner)
                for i, inner in enumerate(item)
                if isinstance(inner, str | dict | list)
            )
    return None


def count_refused(value: int, field: str, least: int = 1) -> Refusal | None:
    """Refuse a count below ``least`` or above :data:`MAX_COUNT`; else None.

    ``least`` is 1 for ``limit`` and ``max_runs``, 0 for ``seed``. The one bound of the
    analysis's ``limit``, ``max_runs`` and ``seed`` and the export's
    ``max_runs`` (every surface: ``--max-runs``, the tool's and the body's ``max_runs``).

    Returns:
        ``<field> 0: must be at least 1``, or ``<field> <value>: must be at most
        9007199254740991 (2**53 - 1, ...)`` (the value cut as every refusal cuts it).
    """
    if value < least:
        return Refusal(field=field, value=str(value), reason=f"must be at least {least}")
    if value > MAX_COUNT:
        why = f"must be at most {MAX_COUNT} (2**53 - 1, the largest whole number a JSON answer "
        return Refusal(field=field, value=shown(value, quoted=False), reason=why + "holds exactly)")
    return None


def unknown_key_line(where: str, given: object) -> str:
    """A key no request holds, named with the value it was given, as every surface says it.

    ``selection.bogus 1: Extra inputs are not permitted`` (a string value quoted and cut as
    :func:`shown` does; a list or mapping is not echoed): REST's message, MCP's line, and a
    dashboard's key (``queries.q.bogus 1: ...``) alike.
    """
    line = "Extra inputs are not permitted"
    if isinstance(given, str):
        return f"{where} {shown(given)}: {line}"
    if isinstance(given, (int, float, bool)):
        return f"{where} {given!r}: {line}"
    return f"{where}: {line}"


def item_line(where: str, given: object, line: str) -> str:
    """A list item refused, named by its list (no index) with the value it was given.

    ``run_ids 5: Input should be a valid string`` (a string value quoted and cut as
    :func:`shown` does; a list or mapping is not echoed): how a tool names an item of a list
    argument, as the CLI names the flag that takes it (``--run-id``) and REST its field.
    """
    if isinstance(given, str):
        return f"{where} {shown(given)}: {line}"
    if isinstance(given, (int, float, bool)) or given is None:
        return f"{where} {given!r}: {line}"
    return f"{where}: {line}"


def validator_line(error: Mapping[str, Any]) -> str:
    """One pydantic error's message, a line of our own validators' as written.

    pydantic tags a ``ValueError`` a validator raised ``Value error, ``; every surface shows
    the line without the tag (REST's message, MCP's line, the CLI's, a spec's or dashboard's
    key). pydantic's own messages are unchanged.
    """
    return str(error.get("msg", "")).removeprefix("Value error, ")


def finite_number(text: str | float) -> float:
    """Return the finite number ``text`` spells (typed, or a float a request carries).

    What the CLI's float flags and the tools' float arguments (``spend_cap_usd``) take: a
    number as typed, never one that reads as something else.

    Raises:
        ValueError: ``text`` is no number, ``nan``, infinite (``inf``, or too large to be
            read: ``1e400``), or a number other than 0 too small to be read (``1e-400``);
            the message quotes ``text`` as typed.
    """
    typed = str(text)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{typed!r} is not a number") from None
    if math.isnan(value):
        raise ValueError(f"{typed!r} is not a number")
    digits = [c for c in typed.lower().partition("e")[0] if c.isdigit()]
    if math.isinf(value):
        why = " (too large: it reads as infinity)" if digits else ""
        raise ValueError(f"{typed!r} is not a finite number{why}")
    if value == 0 and any(c != "0" for c in digits):
        raise ValueError(f"{typed!r} is too close to 0 to be read (it reads as 0)")
    return value


def not_finite(field: str, value: float | str | None) -> Refusal | None:
    """Refuse the number field ``field`` when ``value`` is not a finite number; else None.

    The one wording of a number that is not finite, for every surface's number (a tool's
    argument, a request field, a CLI flag: :func:`finite_number`'s line):
    ``spend_cap_usd: 'inf' is not a finite number``. None is no value (nothing to refuse).
    """
    if value is None:
        return None
    try:
        finite_number(value)
    except ValueError as exc:
        return Refusal(field=field, reason=str(exc), colon=True)
    return None


def above_zero(field: str, value: float | None, unit: str) -> Refusal | None:
    """Refuse a limit ``value`` (``unit``: ``seconds``, ``USD``) not a finite number above 0.

    Not finite: :func:`not_finite`'s line; else ``<field> must be a number of <unit> above 0,
    got -1``. None is no limit (nothing to refuse). The one check of ``run_timeout_seconds``
    and ``spend_cap_usd`` for a launch and a derived run alike.
    """
    refused = not_finite(field, value)
    if refused is None and value is not None and not value > 0:
        refused = Refusal(field=field, reason=f"must be a number of {unit} above 0, got {value:g}")
    return refused


class Refusal(BaseModel):
    """One request value refused.

    Attributes:
        field: The request field refused (``max_agent_turns``, ``spend_cap_usd``,
            ``run_timeout_seconds``, ``after_round``, ``rounds_after``, ...), or the operation
            a refusal points to instead (``fork``: a run that ended is forked, not resumed).
        value: The value as the refusal shows it (``0.0001``, ``6``), or "" when the reason
            states it (a bound: ``must be at least 1, got 0``).
        reason: Why, one line, without the field's name.
        asks: True when the reason asks for the field rather than refusing its value: worded
            ``"<reason>: pass <name>"``.
        also: Further fields named together with ``field`` (``model`` and ``provider``, the
            judge): worded ``"<name> and <name>"``.
        colon: With no value shown, a reason that does not read on from the name: worded
            ``"<name>: <reason>"``.
        runs_on: With a value shown, a reason that reads on from it: worded
            ``"<name> <value> <reason>"`` (``out '/x' is a file, not a folder``).
        trails: The name ends the line: ``"<reason> <name>"`` (``replacing an agent needs``).
        listed: Fields named after the reason, comma-separated:
            ``"<name> <reason> <name>, <name>"`` (``run_ids cannot be combined with``).
        inline: The reason is the whole line and holds ``{name}`` where the name goes
            (``name run folders or a runs dir ({name}), not both``).
        called: How the line names ``field`` when the surface gives it no name of its own
            ("": by the field's name; ``fork-at-round`` for a resume refused as a fork).
        sent: Texts of the request the reason quotes as sent, besides ``value`` (a knob
            condition's knob and value, the folder of a path ``out`` names): what
            :meth:`served` never cuts.
    """

    model_config = ConfigDict(frozen=True)

    field: str
    value: str = ""
    reason: str
    asks: bool = False
    also: tuple[str, ...] = ()
    colon: bool = False
    runs_on: bool = False
    trails: bool = False
    listed: tuple[str, ...] = ()
    inline: bool = False
    called: str = ""
    sent: tuple[str, ...] = ()

    def served(self, cut: Callable[[str], str]) -> Refusal:
        """This refusal with ``cut`` applied to the words the library wrote, never to what was sent.

        A server cuts its own runs directory from what it answers a client
        (``export.served_refusal_line``); the refused ``value`` and each of :attr:`sent` echo
        the request as the client sent it, so they stay as sent, in the reason too, whichever
        the field (a run id, a knob condition, an ``out`` path holding the runs dir's path).
        """
        kept = sorted({text for text in (self.value, *self.sent) if text}, key=len, reverse=True)
        if not kept:
            return self.model_copy(update={"reason": cut(self.reason)})
        pieces = re.split("(" + "|".join(map(re.escape, kept)) + ")", self.reason)
        reason = "".join(piece if i % 2 else cut(piece) for i, piece in enumerate(pieces))
        return self.model_copy(update={"reason": reason})

    def worded(self, names: str | Mapping[str, str] | None = None) -> str:
        """Return the one-line refusal naming each field as a surface does.

        Args:
            names: The surface's name for each field (a field not in it keeps its own name),
                or one name for ``field``; None: every field by its own name.

        Returns:
            ``"<name> <value>: <reason>"`` (``"<name> <value> <reason>"`` with ``runs_on``),
            ``"<name> <reason>"`` when no value is shown
            (``"<name>: <reason>"`` with ``colon``), ``"<reason> <name>"`` with ``trails``,
            ``"<reason>: pass <name>"`` when the reason asks for the field, or
            ``"<name> <reason> <name>, <name>"`` with ``listed``, or the reason with the name
            in place of ``{name}`` with ``inline``.
        """
        table = {self.field: names} if isinstance(names, str) else dict(names or {})
        own = {self.field: self.called} if self.called else {}
        named = " and ".join(table.get(f, own.get(f, f)) for f in (self.field, *self.also))
        if self.inline:
            return self.reason.replace("{name}", named)
        if self.listed:
            return f"{named} {self.reason} {', '.join(table.get(f, f) for f in self.listed)}"
        if self.asks:
            return f"{self.reason}: pass {named}"
        if self.trails:
            return f"{self.reason} {named}"
        if self.value:
            return f"{named} {self.value}{' ' if self.runs_on else ': '}{self.reason}"
        return f"{named}: {self.reason}" if self.colon else f"{named} {self.reason}"


class NothingSelected(BaseModel):
    """A selection of runs that matched none: where, the filters given, how many were scanned.

    Attributes:
        runs_dir: The runs directory searched.
        filters: Each filter given, as ``(field, value shown)``, a list filter once per value.
        scanned: Runs scanned.
        verb: What was to be done (``verify``, ``rejudge``).
    """

    model_config = ConfigDict(frozen=True)

    runs_dir: str
    filters: tuple[tuple[str, str], ...] = ()
    scanned: int = 0
    verb: str

    def worded(self, names: Mapping[str, str] | None = None) -> str:
        """Return the one line, each filter named as ``names`` says (default: its field)."""
        table = dict(names or {})
        asked = " ".join(f"{table.get(f, f)} {value}" for f, value in self.filters)
        what = (
            f"no run under {self.runs_dir} matches {asked} ({self.scanned} scanned)"
            if asked
            else f"{self.runs_dir} holds no run"
        )
        return f"{what}: nothing to {self.verb}"


def refusal_of(exc: BaseException) -> Refusal | NothingSelected | None:
    """Return the refusal an error carries (``exc.refusal``), or None.

    A pydantic ``ValidationError`` whose first error a validator raised carrying one gives
    that one (its ``ctx["error"]``).
    """
    found = getattr(exc, "refusal", None)
    if found is None and isinstance(exc, ValidationError) and exc.errors():
        found = getattr(exc.errors()[0].get("ctx", {}).get("error"), "refusal", None)
    return found if isinstance(found, (Refusal, NothingSelected)) else None


def worded(exc: BaseException, names: Mapping[str, str] | None = None) -> str:
    """Return an error's one line, a refused request value named as ``names`` says.

    An error that carries no :class:`Refusal` (nor :class:`NothingSelected`) is its ``str()``.
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
