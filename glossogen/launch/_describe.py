"""Installed scenarios described: seats and channels as a run lays them out, knobs and presets.

What MCP's scenario tools return and the run browser's scenario pages show, one call each.
An unknown scenario raises ``UnknownScenarioError``, an unknown or unreadable preset
``ConfigError``; each surface words them its own way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from glossogen.knobs import ConfigError, knobs_json_schema, list_presets, load_config
from glossogen.scenario import load_scenario, scenario_dir, scenario_names


class ScenarioSummary(BaseModel):
    """One installed scenario."""

    name: str
    description: str
    presets: list[str]


class ScenarioList(BaseModel):
    """Every installed scenario."""

    scenarios: list[ScenarioSummary]


class SeatInfo(BaseModel):
    """A seat of a scenario as its default preset lays it out."""

    agent_id: str
    role: str
    display_name: str
    team_id: str
    tools: list[str]


class ChannelInfo(BaseModel):
    """A channel: metered ones charge every character sent to the round budget."""

    channel_id: str
    metered: bool
    phase: str
    members: list[str] | None = Field(description="Agent ids that may use it; null: everyone.")


class ScenarioInfo(BaseModel):
    """A scenario's seats, channels and presets (seats and channels under knobs_default)."""

    name: str
    description: str
    seats: list[SeatInfo]
    channels: list[ChannelInfo]
    presets: list[str]


class KnobsSchema(BaseModel):
    """A scenario's knobs as JSON Schema, exactly as ``glossogen schema`` prints it."""

    scenario: str
    json_schema: dict[str, Any]


class KnobsPreset(BaseModel):
    """A preset's knobs, as the scenario ships them."""

    scenario: str
    preset: str
    knobs: dict[str, Any]


def list_scenarios() -> ScenarioList:
    """Every installed scenario with its presets and a description."""
    rows = []
    for name in scenario_names():
        cls = load_scenario(name)
        rows.append(
            ScenarioSummary(
                name=name, description=cls.description, presets=list_presets(scenario_dir(cls))
            )
        )
    return ScenarioList(scenarios=rows)


def describe_scenario(scenario: str, runs_dir: str) -> ScenarioInfo:
    """A scenario's seats and channels (as its knobs_default preset lays them out)."""
    from glossogen.launch._plan import RunRequest, plan_run  # the engine: not for a listing

    cls = load_scenario(scenario)
    presets = list_presets(scenario_dir(cls))
    config = plan_run(
        RunRequest(
            scenario=scenario,
            model="scripted",
            provider="scripted",
            runs_dir=runs_dir,
            config="knobs_default",
        )
    )
    instance = config.build()
    # A seat's and a channel's attributes bear the fields' names (tuples read as lists).
    seats = [SeatInfo.model_validate(a, from_attributes=True) for a in instance.agents()]
    channels = [ChannelInfo.model_validate(c, from_attributes=True) for c in instance.channels()]
    return ScenarioInfo(
        name=scenario,
        description=cls.description,
        seats=seats,
        channels=channels,
        presets=presets,
    )


def knobs_schema(scenario: str) -> KnobsSchema:
    """The JSON Schema of a scenario's knobs, as ``glossogen schema`` prints it."""
    cls = load_scenario(scenario)
    return KnobsSchema(scenario=scenario, json_schema=knobs_json_schema(cls.knobs_model))


def knobs_preset(scenario: str, preset: str = "knobs_default") -> KnobsPreset:
    """The knobs a shipped preset holds.

    Raises:
        ConfigError: ``preset`` is not one the scenario ships, or cannot be read.
    """
    cls = load_scenario(scenario)
    presets = list_presets(scenario_dir(cls))
    if preset not in presets:
        raise ConfigError(
            f"unknown preset {preset!r} for {scenario} (presets: {', '.join(presets)})"
        )
    knobs, _ = load_config(preset, scenario_dir(cls))
    return KnobsPreset(scenario=scenario, preset=preset, knobs=knobs)


__all__ = [
    "ChannelInfo",
    "KnobsPreset",
    "KnobsSchema",
    "ScenarioInfo",
    "ScenarioList",
    "ScenarioSummary",
    "SeatInfo",
    "describe_scenario",
    "knobs_preset",
    "knobs_schema",
    "list_scenarios",
]
