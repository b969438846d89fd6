"""The scenario tools: installed scenarios, their seats and channels, knobs schema and presets."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError

from glossogen.knobs import ConfigError, knobs_json_schema, list_presets, load_config
from glossogen.launch import (
    RunRequest,
    plan_run,
)
from glossogen.mcp._base import (
    ToolBase,
    refuse,
    scenario_class,
)
from glossogen.mcp._results import (
    ChannelInfo,
    KnobsPreset,
    KnobsSchema,
    ScenarioInfo,
    ScenarioList,
    ScenarioSummary,
    SeatInfo,
)
from glossogen.scenario import scenario_dir, scenario_names


class ScenarioTools(ToolBase):
    """Discovering scenarios without reading their source."""

    def list_scenarios(self) -> ScenarioList:
        """List every installed scenario with its presets and a description."""
        rows = []
        for name in scenario_names():
            cls = scenario_class(name)
            rows.append(
                ScenarioSummary(
                    name=name, description=cls.description, presets=list_presets(scenario_dir(cls))
                )
            )
        return ScenarioList(scenarios=rows)

    def get_scenario(self, scenario: str) -> ScenarioInfo:
        """A scenario's seats and channels (as its knobs_default preset lays them out)."""
        cls = scenario_class(scenario)
        presets = list_presets(scenario_dir(cls))
        config = plan_run(
            RunRequest(
                scenario=scenario,
                model="scripted",
                provider="scripted",
                runs_dir=self.runs_dir,
                config="knobs_default",
            )
        )
        instance = config.build()
        seats = [
            SeatInfo(
                agent_id=a.agent_id,
                role=a.role,
                display_name=a.display_name,
                team_id=a.team_id,
                tools=list(a.tools),
            )
            for a in instance.agents()
        ]
        channels = [
            ChannelInfo(
                channel_id=c.channel_id,
                metered=c.metered,
                phase=c.phase,
                members=None if c.members is None else list(c.members),
            )
            for c in instance.channels()
        ]
        return ScenarioInfo(
            name=scenario,
            description=cls.description,
            seats=seats,
            channels=channels,
            presets=presets,
        )

    def get_knobs_schema(self, scenario: str) -> KnobsSchema:
        """The JSON Schema of a scenario's knobs, as ``glossogen schema`` prints it."""
        cls = scenario_class(scenario)
        return KnobsSchema(scenario=scenario, json_schema=knobs_json_schema(cls.knobs_model))

    def get_knobs_preset(self, scenario: str, preset: str = "knobs_default") -> KnobsPreset:
        """The knobs a shipped preset holds."""
        cls = scenario_class(scenario)
        if preset not in list_presets(scenario_dir(cls)):
            raise ToolError(
                f"unknown preset {preset!r} for {scenario} "
                f"(presets: {', '.join(list_presets(scenario_dir(cls)))})"
            )
        try:
            knobs, _ = load_config(preset, scenario_dir(cls))
        except ConfigError as exc:
            raise refuse(exc) from None
        return KnobsPreset(scenario=scenario, preset=preset, knobs=knobs)
