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
from glossogen.scenario._registry import (
    ENTRY_POINT_GROUP,
    UnknownScenarioError,
    load_scenario,
    scenario_dir,
    scenario_names,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "UnknownScenarioError",
    "load_scenario",
    "scenario_dir",
    "scenario_names",
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
