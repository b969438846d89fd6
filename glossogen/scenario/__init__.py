"""The scenario contract and registry: what scenario authors import."""

from glossogen.scenario._contract import (
    AgentDeps,
    AgentSpec,
    ChannelSpec,
    JudgeDecision,
    Observation,
    RoundContext,
    Scenario,
    ScriptedMove,
    ScriptedView,
    ToolContext,
)

__all__ = [
    "AgentDeps",
    "AgentSpec",
    "ChannelSpec",
    "JudgeDecision",
    "Observation",
    "RoundContext",
    "Scenario",
    "ScriptedMove",
    "ScriptedView",
    "ToolContext",
]
