import json

from pydantic import Field

from glossogen.knobs import BaseKnobs, knobs_json_schema, knobs_to_config, resolve_knobs


class DemoKnobs(BaseKnobs):
    """Knobs of a demo scenario."""

    crew_size: int = Field(default=3, ge=1, le=10, description="Agents per team.")


def test_json_schema():
    schema = knobs_json_schema(DemoKnobs)
    assert schema["title"] == "DemoKnobs"
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["properties"]["crew_size"] == {
        "default": 3,
        "description": "Agents per team.",
        "maximum": 10,
        "minimum": 1,
        "title": "Crew Size",
        "type": "integer",
    }
    assert schema["properties"]["round_count"]["minimum"] == 1
    assert set(schema["$defs"]) >= {"AgentModelSettings", "JudgeModelSettings", "ModelOverride"}
    json.dumps(schema)


def test_config_round_trips():
    knobs = resolve_knobs(
        DemoKnobs,
        {"round_count": 8, "agent_model_settings": {"thinking": True, "timeout": 30}},
        {"model_overrides": {"fo": {"model": "m", "provider": "openai"}}},
    )
    config = knobs_to_config(knobs)
    assert json.loads(json.dumps(config)) == config
    assert config["round_count"] == 8
    assert config["crew_size"] == 3
    assert config["agent_model_settings"] == {
        "max_tokens": 16384,
        "temperature": None,
        "top_p": None,
        "seed": None,
        "thinking": True,
        "parallel_tool_calls": None,
        "timeout": 30.0,
        "cache": True,
    }
    assert config["model_overrides"] == {
        "fo": {"model": "m", "provider": "openai", "model_settings": None}
    }
    assert config["judge_model_settings"]["max_tokens"] is None
    assert DemoKnobs.model_validate(config) == knobs
