import pytest
from pydantic import Field, model_validator

from glossogen.knobs import (
    DEFAULT_MAX_TOKENS,
    AgentModelSettings,
    BaseKnobs,
    ConfigError,
    JudgeModelSettings,
    ModelOverride,
    merge_overrides,
    parse_overrides,
    resolve_knobs,
)


class DemoKnobs(BaseKnobs):
    """A scenario's knobs: one field of its own, a judge default and a cross-field rule."""

    crew_size: int = Field(default=3, ge=1, le=10, description="Agents per team.")
    postmortem_after_swap: bool = False
    judge_model_settings: JudgeModelSettings = Field(
        default_factory=lambda: JudgeModelSettings(temperature=0.0)
    )

    @model_validator(mode="after")
    def _swap_needs_postmortem(self) -> "DemoKnobs":
        if self.postmortem_after_swap and not self.postmortem_enabled:
            raise ValueError("postmortem_after_swap=true requires postmortem_enabled=true")
        return self


PRESET = {
    "round_count": 12,
    "postmortem_after_swap": True,
    "judge_model_settings": {"temperature": 0.0, "max_tokens": 4096},
    "agent_model_settings": {"parallel_tool_calls": False},
    "model_overrides": {
        "stabilization_engineer": {"model": "gpt-5.4", "provider": "openai"},
        "field_observer": {
            "model": "claude-opus-4-6",
            "provider": "anthropic",
            "model_settings": {"thinking": "high"},
        },
    },
}


def resolve(items, base=PRESET):
    return resolve_knobs(DemoKnobs, base, parse_overrides(items))


def test_defaults_from_an_empty_config():
    knobs = resolve_knobs(DemoKnobs, {}, {})
    assert isinstance(knobs, DemoKnobs)
    assert (knobs.round_count, knobs.crew_size, knobs.seed) == (5, 3, 42)
    assert knobs.agent_model_settings == AgentModelSettings(max_tokens=DEFAULT_MAX_TOKENS)
    assert knobs.judge_model_settings == JudgeModelSettings(temperature=0.0)


def test_override_wins_over_preset():
    knobs = resolve(["round_count=20", "crew_size=4", "labels.cohort=pilot"])
    assert (knobs.round_count, knobs.crew_size, knobs.labels) == (20, 4, {"cohort": "pilot"})


def test_judge_model_settings_replaced_whole():
    knobs = resolve(["judge_model_settings.thinking=low"])
    assert knobs.judge_model_settings == JudgeModelSettings(thinking="low")
    assert knobs.judge_model_settings.to_model_settings() == {"thinking": "low", "cache": True}


def test_judge_model_settings_restated():
    knobs = resolve(["judge_model_settings.thinking=low", "judge_model_settings.temperature=0"])
    assert knobs.judge_model_settings.to_model_settings() == {
        "thinking": "low",
        "temperature": 0,
        "cache": True,
    }


def test_agent_model_settings_replaced_whole():
    knobs = resolve(["agent_model_settings.thinking=medium"])
    assert knobs.agent_model_settings.to_model_settings() == {
        "max_tokens": 16384,
        "thinking": "medium",
        "cache": True,
    }


def test_model_overrides_merged_per_agent():
    knobs = resolve(["agents.field_observer.model=claude-opus-4-7"])
    assert knobs.model_overrides == {
        "stabilization_engineer": ModelOverride(model="gpt-5.4", provider="openai"),
        "field_observer": ModelOverride(model="claude-opus-4-7"),
    }


def test_model_overrides_new_agent_with_own_settings():
    knobs = resolve(
        ["agents.analyst.model=qwen", "agents.analyst.model_settings.max_tokens=2048"],
        base={},
    )
    entry = knobs.model_overrides["analyst"]
    assert entry == ModelOverride(model="qwen", model_settings=AgentModelSettings(max_tokens=2048))


def test_merge_leaves_inputs_alone():
    base = {"agent_model_settings": {"thinking": "low"}, "model_overrides": {"a": {"model": "x"}}}
    overrides = {"model_overrides": {"b": {"model": "y"}}}
    merged = merge_overrides(base, overrides)
    merged["model_overrides"]["a"]["model"] = "changed"
    assert base == {
        "agent_model_settings": {"thinking": "low"},
        "model_overrides": {"a": {"model": "x"}},
    }
    assert overrides == {"model_overrides": {"b": {"model": "y"}}}


@pytest.mark.parametrize(
    ("base", "items", "max_tokens"),
    [
        ({"agent_max_tokens": 2048}, [], 2048),
        ({"agent_model_settings": {"agent_max_tokens": 1024}}, [], 1024),
        ({"agent_max_tokens": 2048, "agent_model_settings": {"max_tokens": 512}}, [], 512),
        ({}, ["agent_max_tokens=4096"], 4096),
        ({"agent_max_tokens": 2048}, ["agent_model_settings.thinking=low"], DEFAULT_MAX_TOKENS),
        (
            {"model_overrides": {"a": {"model": "m", "model_settings": {"agent_max_tokens": 7}}}},
            [],
            DEFAULT_MAX_TOKENS,
        ),
    ],
)
def test_legacy_agent_max_tokens(base, items, max_tokens):
    knobs = resolve(items, base=base)
    assert knobs.agent_model_settings.max_tokens == max_tokens


def test_legacy_agent_max_tokens_inside_an_override_entry():
    base = {"model_overrides": {"a": {"model": "m", "model_settings": {"agent_max_tokens": 7}}}}
    knobs = resolve([], base=base)
    assert knobs.model_overrides["a"].model_settings == AgentModelSettings(max_tokens=7)


def test_legacy_agent_max_tokens_on_the_model_itself():
    assert BaseKnobs(agent_max_tokens=300).agent_model_settings.max_tokens == 300


REFUSED = [
    (
        ["round_count=0"],
        "invalid knob 'round_count' = 0: Input should be greater than or equal to 1",
    ),
    (
        ["round_count=ten"],
        ("invalid knob 'round_count' = \"ten\": Input should be a valid integer"),
    ),
    (
        ["round_count=0", "crew_size=11", "seed=x"],
        ("invalid knob 'round_count' = 0: Input should be greater than or equal to 1 (and 2 more)"),
    ),
    (
        ["agent_model_settings.thinking=huge"],
        (
            "invalid knob 'agent_model_settings.thinking' = \"huge\": "
            "accepted values are minimal, low, medium, high, xhigh, max, true, false, null"
        ),
    ),
    (
        ["round_cuont=3"],
        (
            "unknown knob 'round_cuont', did you mean 'round_count'? (known: "
            "agent_model_settings, channel_noise_level, crew_size, idle_floor_seconds, "
            "judge_model, judge_model_settings, "
            "judge_provider, labels, max_round_duration_seconds, model_overrides, "
            "noise_replacement_mode, postmortem_after_swap, postmortem_duration_seconds, "
            "postmortem_enabled, round_count, scheduled_events, scripted_misplay_share, seed)"
        ),
    ),
    (
        ["judge_model_settings.temprature=0"],
        (
            "unknown knob 'judge_model_settings.temprature', did you mean "
            "'judge_model_settings.temperature'? (known: cache, max_tokens, parallel_tool_calls, "
            "seed, temperature, thinking, timeout, top_p)"
        ),
    ),
    (
        ["agents.field_observer.model=m", "agents.field_observer.model_settings.thinkng=high"],
        (
            "unknown knob 'model_overrides.field_observer.model_settings.thinkng', did you mean "
            "'model_overrides.field_observer.model_settings.thinking'? (known: cache, max_tokens, "
            "parallel_tool_calls, seed, temperature, thinking, timeout, top_p)"
        ),
    ),
    (
        ["agents.field_observer.model="],
        (
            "invalid knob 'model_overrides.field_observer.model' = \"\": "
            "String should have at least 1 character"
        ),
    ),
    (
        ["model_overrides.field_observer.provider=openai"],
        ("missing knob 'model_overrides.field_observer.model': Field required"),
    ),
    (
        ["postmortem_enabled=false"],
        ("invalid knobs: postmortem_after_swap=true requires postmortem_enabled=true"),
    ),
    (
        ['scheduled_events=[{"kind": "set_postmortem", "round": 13, "enabled": false}]'],
        ("invalid knobs: scheduled_events: round 13 is after round_count 12"),
    ),
    (
        ['scheduled_events=[{"kind": "swap_agent", "round": 2}]'],
        (
            'invalid knob \'scheduled_events.0\' = {"kind": "swap_agent", "round": 2}: '
            "a swap_agent event needs agent_id and model"
        ),
    ),
    (["labels.cohort=[1]"], "invalid knob 'labels.cohort' = [1]: Input should be a valid string"),
    (
        ["judge_provider=xai"],
        (
            "invalid knob 'judge_provider' = \"xai\": "
            "Input should be 'anthropic', 'huggingface', 'openai' or 'scripted'"
        ),
    ),
]


@pytest.mark.parametrize(("items", "message"), REFUSED)
def test_resolve_refuses(items, message):
    with pytest.raises(ConfigError) as caught:
        resolve(items)
    assert str(caught.value) == message
    assert caught.value.exit_code == 65


def test_long_input_is_shortened():
    with pytest.raises(ConfigError) as caught:
        resolve_knobs(DemoKnobs, {"judge_model": ["x" * 100]}, {})
    assert str(caught.value) == (
        f"invalid knob 'judge_model' = [\"{'x' * 75}...: Input should be a valid string"
    )
