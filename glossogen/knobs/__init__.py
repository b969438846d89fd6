"""Knobs: the shared base model, presets, ``key=value`` overrides, validation and JSON Schema.

A launch reads its config in three steps: :func:`load_config` (a preset or a JSON file),
:func:`parse_overrides` (the trailing ``key=value`` items) and :func:`resolve_knobs` (merge,
then the scenario's knobs model). Each step raises :class:`ConfigError` with the exit code the
CLI returns.
"""

from glossogen.knobs._base import (
    DEFAULT_MAX_TOKENS,
    AgentModelSettings,
    BaseKnobs,
    JudgeModelSettings,
    ModelOverride,
    ScheduledEvent,
    ThinkingLevel,
    lift_legacy_knobs,
)
from glossogen.knobs._errors import EXIT_REFUSED, EXIT_UNREADABLE, ConfigError
from glossogen.knobs._overrides import parse_overrides
from glossogen.knobs._presets import list_presets, load_config
from glossogen.knobs._resolve import merge_overrides, resolve_knobs
from glossogen.knobs._schema import knobs_json_schema, knobs_to_config

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EXIT_REFUSED",
    "EXIT_UNREADABLE",
    "AgentModelSettings",
    "BaseKnobs",
    "ConfigError",
    "JudgeModelSettings",
    "ModelOverride",
    "ScheduledEvent",
    "ThinkingLevel",
    "knobs_json_schema",
    "knobs_to_config",
    "lift_legacy_knobs",
    "list_presets",
    "load_config",
    "merge_overrides",
    "parse_overrides",
    "resolve_knobs",
]
