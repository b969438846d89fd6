"""Hydra-style ``key=value`` overrides from the command line, parsed into a nested dict.

Values parse as JSON (``round_count=20`` is an int, ``enabled=true`` a bool, ``x=null`` None);
a value that is not JSON stays a string ("bare word": ``model=claude-sonnet-4-6``,
``model=meta-llama/Llama-3.3-70B-Instruct``), unless it starts like JSON (``{``, ``[`` or
``"``) and is malformed, which is refused. Dotted keys nest, and the per-agent shorthand
``agents.<id>.model|provider|model_settings.<setting>`` lands in ``model_overrides.<id>``.
"""

from __future__ import annotations

import json
from typing import Any

from glossogen.knobs._errors import ConfigError

AGENT_FIELDS = ("model", "provider", "model_settings")
"""What ``agents.<id>.<field>`` may name; ``model_settings`` takes sub-keys."""

_JSON_OPENERS = ("{", "[", '"')


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_value(key: str, raw: str) -> Any:
    """Parse one override value: JSON when it is JSON, else the bare word as a string.

    ``NaN`` and ``Infinity`` are not JSON here, so they stay strings.

    Args:
        key: The override's key, named in the error.
        raw: The text after the first ``=``.

    Returns:
        The JSON value, or ``raw`` itself when it is a bare word.

    Raises:
        ConfigError: (65) ``raw`` starts with ``{``, ``[`` or ``"`` but is malformed JSON.
    """
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except ValueError as exc:
        if raw.lstrip().startswith(_JSON_OPENERS):
            reason = (
                f"{exc.msg} at line {exc.lineno} column {exc.colno}"
                if isinstance(exc, json.JSONDecodeError)
                else str(exc)
            )
            raise ConfigError(
                f"override '{key}' has malformed JSON value {raw!r}: {reason}"
            ) from exc
        return raw


def _split_item(item: str) -> tuple[str, list[str], str]:
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep:
        raise ConfigError(f"override {item!r} is not key=value")
    if not key:
        raise ConfigError(f"override {item!r} names no key before '='")
    path = key.split(".")
    if any(not part for part in path):
        raise ConfigError(f"override {item!r} has an empty part in its key {key!r}")
    return key, path, raw


def _normalise_agent_path(item: str, path: list[str]) -> list[str]:
    """Map ``agents.<id>.<field>...`` onto ``model_overrides.<id>.<field>...``."""
    if len(path) < 3 or path[2] not in AGENT_FIELDS:
        raise ConfigError(
            f"override {item!r}: agents.<id>.* takes only "
            f"{', '.join(AGENT_FIELDS)} (e.g. agents.<id>.model=...)"
        )
    if path[2] != "model_settings" and len(path) > 3:
        raise ConfigError(f"override {item!r}: agents.<id>.{path[2]} takes no sub-key")
    return ["model_overrides", *path[1:]]


def _assign(tree: dict[str, Any], path: list[str], value: Any, item: str) -> None:
    node = tree
    for depth, part in enumerate(path[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            prefix = ".".join(path[: depth + 1])
            raise ConfigError(
                f"override {item!r} conflicts with an earlier one: '{prefix}' is not an object"
            )
        node = child
    node[path[-1]] = value


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """Parse ``key=value`` overrides into one nested dict, later items winning.

    ``agent_model_settings.thinking=medium`` becomes
    ``{"agent_model_settings": {"thinking": "medium"}}``;
    ``agents.field_observer.model=x`` becomes ``{"model_overrides": {"field_observer":
    {"model": "x"}}}``. Only the syntax is checked here: knob names and bounds are checked by
    :func:`resolve_knobs`.

    Args:
        items: The trailing command-line arguments, each ``key=value``.

    Returns:
        The overrides as a nested dict, keyed by top-level knob.

    Raises:
        ConfigError: (65) an item has no ``=`` or an empty key (or key part); a value starting
            with ``{``, ``[`` or ``"`` is malformed JSON; ``agents.<id>.<x>`` names something
            other than ``model``, ``provider`` or ``model_settings.<setting>``; the
            ``agents.<id>.*`` entries for an agent name no ``model``; a dotted key descends into
            a value an earlier item set to a non-object.
    """
    tree: dict[str, Any] = {}
    first_agent_item: dict[str, str] = {}
    for item in items:
        key, path, raw = _split_item(item)
        value = parse_value(key, raw)
        if path[0] == "agents":
            path = _normalise_agent_path(item, path)
            first_agent_item.setdefault(path[1], item)
        _assign(tree, path, value, item)
    entries = tree.get("model_overrides", {})
    for agent_id, item in first_agent_item.items():
        entry = entries.get(agent_id) if isinstance(entries, dict) else None
        if not isinstance(entry, dict) or "model" not in entry:
            raise ConfigError(
                f"override {item!r}: an override must name a model "
                f"(add agents.{agent_id}.model=<model>)"
            )
    return tree
