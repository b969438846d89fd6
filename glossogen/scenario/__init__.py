"""The scenario contract and registry: what scenario authors import."""

from glossogen.scenario._contract import (
    AgentDeps,
    AgentSpec,
    ChannelSpec,
    ItemRuling,
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
    render_prompt,
    scenario_dir,
    scenario_names,
)
from glossogen.scenario._staging import (
    Code,
    CodeLeakError,
    MajorityRuling,
    StageProgress,
    codes_in,
    hidden_codes,
    judge_by_majority,
)
from glossogen.scenario._submissions import SubmissionBook

__all__ = [
    "ENTRY_POINT_GROUP",
    "UnknownScenarioError",
    "load_scenario",
    "render_prompt",
    "scenario_dir",
    "scenario_names",
    "Code",
    "CodeLeakError",
    "MajorityRuling",
    "StageProgress",
    "SubmissionBook",
    "codes_in",
    "hidden_codes",
    "judge_by_majority",
    "AgentDeps",
    "AgentSpec",
    "ChannelSpec",
    "ItemRuling",
    "JudgeDecision",
    "Observation",
    "RoundContext",
    "Scenario",
    "ScriptedMove",
    "ScriptedView",
    "ToolContext",
]
