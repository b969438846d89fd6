"""The scenario tools: installed scenarios, their seats and channels, knobs schema and presets."""

from __future__ import annotations

from glossogen.knobs import ConfigError
from glossogen.launch import (
    KnobsPreset,
    KnobsSchema,
    ScenarioInfo,
    ScenarioList,
    describe_scenario,
    knobs_preset,
    knobs_schema,
    list_scenarios,
)
from glossogen.mcp._base import ToolBase, refuse
from glossogen.scenario import UnknownScenarioError


class ScenarioTools(ToolBase):
    """Discovering scenarios without reading their source."""

    def list_scenarios(self) -> ScenarioList:
        """List every installed scenario with its presets and a description."""
        return list_scenarios()

    def get_scenario(self, scenario: str) -> ScenarioInfo:
        """A scenario's seats and channels (as its knobs_default preset lays them out)."""
        try:
            return describe_scenario(scenario, self.runs_dir)
        except UnknownScenarioError as exc:
            raise refuse(exc) from None

    def get_knobs_schema(self, scenario: str) -> KnobsSchema:
        """The JSON Schema of a scenario's knobs, as ``glossogen schema`` prints it."""
        try:
            return knobs_schema(scenario)
        except UnknownScenarioError as exc:
            raise refuse(exc) from None

    def get_knobs_preset(self, scenario: str, preset: str = "knobs_default") -> KnobsPreset:
        """The knobs a shipped preset holds."""
        try:
            return knobs_preset(scenario, preset)
        except (UnknownScenarioError, ConfigError) as exc:
            raise refuse(exc) from None
