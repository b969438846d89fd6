"""The scenario contract and registry: what scenario authors import."""

from typing import TYPE_CHECKING, Any

from glossogen.scenario._contract import (
    AgentDeps,
    AgentSpec,
    ChannelSpec,
    CostProfile,
    ItemRuling,
    JudgeDecision,
    Observation,
    RoundContext,
    Scenario,
    ScriptedMove,
    ScriptedView,
    TeamOutcome,
    outcome_word,
    round_outcomes,
    scenario_tool,
)
from glossogen.scenario._registry import (
    ENTRY_POINT_GROUP,
    SCENARIO_PATH,
    ScenarioSource,
    UnknownScenarioError,
    load_scenario,
    path_scenarios,
    render_prompt,
    scenario_dir,
    scenario_names,
    scenario_sources,
)
from glossogen.scenario._scripted import Seen, debrief_move, debrief_outcome, timeline
from glossogen.scenario._staging import (
    ActionGuard,
    Code,
    CodeLeakError,
    MajorityRuling,
    ScriptedPolicies,
    StagedScenario,
    StageProgress,
    codes_in,
    hidden_codes,
    hidden_fields,
    judge_by_majority,
)
from glossogen.scenario._submissions import SubmissionBook

if TYPE_CHECKING:
    from glossogen.scenario._contract import ToolContext


def __getattr__(name: str) -> Any:
    """``ToolContext`` is built on first use (see ``glossogen.scenario._contract``)."""
    if name == "ToolContext":
        from glossogen.scenario import _contract

        return _contract.ToolContext
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENTRY_POINT_GROUP",
    "SCENARIO_PATH",
    "ScenarioSource",
    "scenario_sources",
    "UnknownScenarioError",
    "load_scenario",
    "path_scenarios",
    "render_prompt",
    "scenario_dir",
    "scenario_names",
    "ActionGuard",
    "Code",
    "CodeLeakError",
    "MajorityRuling",
    "ScriptedPolicies",
    "StagedScenario",
    "StageProgress",
    "SubmissionBook",
    "Seen",
    "debrief_move",
    "debrief_outcome",
    "timeline",
    "codes_in",
    "hidden_codes",
    "hidden_fields",
    "judge_by_majority",
    "AgentDeps",
    "AgentSpec",
    "ChannelSpec",
    "CostProfile",
    "ItemRuling",
    "JudgeDecision",
    "Observation",
    "RoundContext",
    "Scenario",
    "ScriptedMove",
    "ScriptedView",
    "ToolContext",
    "outcome_word",
    "round_outcomes",
    "TeamOutcome",
    "scenario_tool",
]
