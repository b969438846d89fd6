"""Knobs: the shared base model, presets, ``key=value`` overrides, validation and JSON Schema."""

from glossogen.knobs._base import (
    DEFAULT_MAX_TOKENS,
    AgentModelSettings,
    BaseKnobs,
    JudgeModelSettings,
    ModelOverride,
    ScheduledEvent,
    ThinkingLevel,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "AgentModelSettings",
    "BaseKnobs",
    "JudgeModelSettings",
    "ModelOverride",
    "ScheduledEvent",
    "ThinkingLevel",
]
