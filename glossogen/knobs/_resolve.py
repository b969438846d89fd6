"""Merge overrides onto a base config and validate the result with a scenario's knobs model.

The unit of replacement is the top-level knob: an override naming any part of one replaces
that knob's value whole (``judge_model_settings.thinking=low`` drops a preset's
``temperature``). ``model_overrides`` is the exception: its unit is the agent entry, so
``agents.field_observer.model=x`` replaces the preset's ``field_observer`` entry whole and keeps
the other agents'. A validation failure becomes one :class:`ConfigError` line naming the knob.

Values are strict (pydantic's strict mode, validated from JSON): a boolean is not a number
(``round_count=true`` is refused, not read as 1), a number is not a boolean, and a string of
digits is not a number (``"seed": "7"`` is refused). A float knob takes an integer; an integer
knob refuses ``5.0``. A value from the command line has already been parsed as JSON
(:func:`~glossogen.knobs.parse_value`), so ``round_count=20`` is the integer 20.
"""

from __future__ import annotations

import copy
import difflib
import json
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, to_json

from glossogen.knobs._base import BaseKnobs, lift_legacy_knobs
from glossogen.knobs._errors import ConfigError
from glossogen.refusals import validator_line

PER_AGENT_KNOB = "model_overrides"
"""The knob merged per agent entry rather than replaced whole."""

_SHOWN_INPUT_CHARS = 80


def merge_overrides(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Put ``overrides`` on top of ``base``, one top-level knob (or agent entry) at a time.

    A legacy ``agent_max_tokens`` on either side is first read as
    ``agent_model_settings.max_tokens``. Neither input is modified.

    Args:
        base: The preset's or file's config.
        overrides: The parsed ``key=value`` overrides, as :func:`parse_overrides` returns them.

    Returns:
        The merged config, not yet validated.
    """
    merged = copy.deepcopy(lift_legacy_knobs(base))
    for knob, value in lift_legacy_knobs(overrides).items():
        current = merged.get(knob)
        if knob == PER_AGENT_KNOB and isinstance(value, dict) and isinstance(current, dict):
            merged[knob] = {**current, **copy.deepcopy(value)}
        else:
            merged[knob] = copy.deepcopy(value)
    return merged


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _walk(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[list[str], Any]:
    """Turn a pydantic error location into a knob path, dropping union-member tags.

    Returns:
        The path parts, and the type found at the end of the path (``None`` when lost; a
        union of several members when the path ends on one).
    """
    parts: list[str] = []
    tp: Any = model
    skip_tag = False
    for step in loc:
        if skip_tag:
            skip_tag = False
            continue
        parts.append(str(step))
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(step))
            tp = field.annotation if field is not None else None
        elif get_origin(tp) in (dict, list, tuple):
            tp = get_args(tp)[-1] if get_args(tp) else None
        else:
            tp = None
        tp = _unwrap(tp)
        if get_origin(tp) in (Union, types.UnionType):
            members = [arg for arg in get_args(tp) if arg is not type(None)]
            skip_tag = len(members) > 1
            tp = members[0] if len(members) == 1 else tp
    return parts, _unwrap(tp)


_CHOICE_ERRORS = frozenset({"bool_type", "literal_error", "none_required"})
"""Errors of the members of a union of booleans and literals (``cache: bool | "1h" | ...``)."""


def _choices(tp: Any) -> list[str] | None:
    """The values a union of booleans, literals and None accepts, spelled as typed; else None."""
    tp = _unwrap(tp)
    members = get_args(tp) if get_origin(tp) in (Union, types.UnionType, Literal) else (tp,)
    if get_origin(tp) is Literal:
        return [json.dumps(v) if isinstance(v, bool) or v is None else str(v) for v in members]
    spelled: list[str] = []
    for member in members:
        if member is bool:
            spelled += ["true", "false"]
        elif member is type(None):
            spelled.append("null")
        elif get_origin(member) is Literal:
            spelled += _choices(member) or []
        else:
            return None
    return spelled


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    if len(text) > _SHOWN_INPUT_CHARS:
        text = text[: _SHOWN_INPUT_CHARS - 3] + "..."
    return text


def _reason(error: ErrorDetails) -> str:
    return validator_line(error).removeprefix("Assertion failed, ")


def _describe(error: ErrorDetails, knobs_model: type[BaseModel]) -> tuple[str, str]:
    """Return (knob path, one-line message) for one pydantic error."""
    parts, _ = _walk(knobs_model, tuple(error["loc"]))
    path = ".".join(parts)
    if error["type"] == "extra_forbidden":
        _, parent = _walk(knobs_model, tuple(error["loc"])[:-1])
        known = (
            sorted(parent.model_fields)
            if isinstance(parent, type) and issubclass(parent, BaseModel)
            else []
        )
        close = difflib.get_close_matches(parts[-1], known, n=1)
        hint = f", did you mean '{'.'.join([*parts[:-1], close[0]])}'?" if close else ""
        listed = f" (known: {', '.join(known)})" if known else ""
        return path, f"unknown knob '{path}'{hint}{listed}"
    if not parts:
        return path, f"invalid knobs: {_reason(error)}"
    if error["type"] == "missing":
        return path, f"missing knob '{path}': {_reason(error)}"
    return path, f"invalid knob '{path}' = {_show(error['input'])}: {_reason(error)}"


def _choice_message(
    path: str, details: ErrorDetails, errors: list[ErrorDetails], knobs_model: type[BaseModel]
) -> str | None:
    """One line for a value no member of a union of booleans and literals accepts, or None.

    pydantic reports each member's failure apart (``Input should be a valid boolean`` for
    ``cache="2h"``, as if only booleans were allowed); the knob's accepted values are listed
    instead: ``invalid knob 'agent_model_settings.cache' = "2h": accepted values are true,
    false, 5m, 30m, 1h, 12h``.
    """
    loc = tuple(details["loc"])
    if details["type"] not in _CHOICE_ERRORS or len(loc) < 2:
        return None
    siblings = [e for e in errors if tuple(e["loc"])[:-1] == loc[:-1]]
    if len(siblings) < 2 or any(e["type"] not in _CHOICE_ERRORS for e in siblings):
        return None
    _, field = _walk(knobs_model, loc[:-1])
    accepted = _choices(field)
    if accepted is None:
        return None
    return (
        f"invalid knob '{path}' = {_show(details['input'])}: accepted values are "
        f"{', '.join(accepted)}"
    )


def validation_message(error: ValidationError, knobs_model: type[BaseModel]) -> str:
    """Summarise a knobs ``ValidationError`` in one line: the first problem, and how many more.

    Args:
        error: What ``knobs_model.model_validate`` raised.
        knobs_model: The model that raised it, used to name knob paths and known knobs.

    Returns:
        For example ``invalid knob 'round_count' = 0: Input should be greater than or equal to
        1``, followed by ``(and N more)`` when other knobs failed too.
    """
    described: dict[str, str] = {}
    errors = error.errors()
    for details in errors:
        path, message = _describe(details, knobs_model)
        described.setdefault(path, _choice_message(path, details, errors, knobs_model) or message)
    first, *rest = described.values()
    return f"{first} (and {len(rest)} more)" if rest else first


def resolve_knobs(
    knobs_model: type[BaseKnobs], base: dict[str, Any], overrides: dict[str, Any]
) -> BaseKnobs:
    """Merge the overrides onto the base config and validate it with the scenario's knobs.

    Args:
        knobs_model: The scenario's knobs model, a :class:`BaseKnobs` subclass.
        base: The base config (:func:`load_config`'s dict).
        overrides: The parsed overrides (:func:`parse_overrides`'s dict).

    Returns:
        The validated knobs, an instance of ``knobs_model``.

    Raises:
        ConfigError: (65) a knob is unknown (with a close match when there is one), a value is
            of the wrong type (strictly: see the module's docstring) or out of bounds, or a
            cross-field validator refuses the
            combination; the message names the knob path, the value and the reason.
    """
    merged = merge_overrides(base, overrides)
    try:
        # Validated from JSON, not from Python objects: strict mode then still reads a JSON
        # array as a tuple knob and a string as a Literal, while refusing bool-as-int and
        # digit strings, which is the strictness wanted here.
        return knobs_model.model_validate_json(to_json(merged), strict=True)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, knobs_model)) from exc
