import pytest

from glossogen.knobs import EXIT_REFUSED, ConfigError, parse_overrides

PARSED = [
    (["round_count=20"], {"round_count": 20}),
    (["enabled=true"], {"enabled": True}),
    (["enabled=false"], {"enabled": False}),
    (["x=null"], {"x": None}),
    (["ratio=0.25"], {"ratio": 0.25}),
    (["name=alice"], {"name": "alice"}),
    (['name="alice"'], {"name": "alice"}),
    (["name="], {"name": ""}),
    (["x=NaN"], {"x": "NaN"}),
    (["version=1.2.3"], {"version": "1.2.3"}),
    (["model=claude-sonnet-4-6"], {"model": "claude-sonnet-4-6"}),
    (
        ["model=meta-llama/Llama-3.3-70B-Instruct"],
        {"model": "meta-llama/Llama-3.3-70B-Instruct"},
    ),
    (["model=ft:gpt-4.1-mini:org::id"], {"model": "ft:gpt-4.1-mini:org::id"}),
    (["note=a=b"], {"note": "a=b"}),
    (['labels={"a":1}'], {"labels": {"a": 1}}),
    (["xs=[1, 2]"], {"xs": [1, 2]}),
    (
        ["agent_model_settings.thinking=medium"],
        {"agent_model_settings": {"thinking": "medium"}},
    ),
    (
        ["agent_model_settings.thinking=medium", "agent_model_settings.max_tokens=8192"],
        {"agent_model_settings": {"thinking": "medium", "max_tokens": 8192}},
    ),
    (["round_count=1", "round_count=2"], {"round_count": 2}),
    (
        ["agents.field_observer.model=claude-opus-4-7"],
        {"model_overrides": {"field_observer": {"model": "claude-opus-4-7"}}},
    ),
    (
        [
            "agents.field_observer.model=claude-opus-4-7",
            "agents.stabilization_engineer.model=gpt-5.4",
            "agents.stabilization_engineer.provider=openai",
        ],
        {
            "model_overrides": {
                "field_observer": {"model": "claude-opus-4-7"},
                "stabilization_engineer": {"model": "gpt-5.4", "provider": "openai"},
            }
        },
    ),
    (
        ["agents.fo.model_settings.thinking=high", "agents.fo.model=claude-opus-4-7"],
        {
            "model_overrides": {
                "fo": {"model": "claude-opus-4-7", "model_settings": {"thinking": "high"}}
            }
        },
    ),
    (
        ['agents.fo.model_settings={"max_tokens":2048}', "agents.fo.model=m"],
        {"model_overrides": {"fo": {"model": "m", "model_settings": {"max_tokens": 2048}}}},
    ),
    (
        ["model_overrides.fo.model=m", "agents.fo.provider=openai"],
        {"model_overrides": {"fo": {"model": "m", "provider": "openai"}}},
    ),
    ([], {}),
]


@pytest.mark.parametrize(("items", "expected"), PARSED)
def test_parse_overrides(items, expected):
    assert parse_overrides(items) == expected


REFUSED = [
    (["round_count"], "override 'round_count' is not key=value"),
    (["=3"], "override '=3' names no key before '='"),
    (["a..b=1"], "override 'a..b=1' has an empty part in its key 'a..b'"),
    (
        ["labels={bad"],
        "override 'labels' has malformed JSON value '{bad': "
        "Expecting property name enclosed in double quotes at line 1 column 2",
    ),
    (
        ["xs=[1,"],
        "override 'xs' has malformed JSON value '[1,': Expecting value at line 1 column 4",
    ),
    (
        ['name="alice'],
        "override 'name' has malformed JSON value '\"alice': "
        "Unterminated string starting at at line 1 column 1",
    ),
    (
        ["agents.field_observer.provider=openai"],
        "override 'agents.field_observer.provider=openai': an override must name a model "
        "(add agents.field_observer.model=<model>)",
    ),
    (
        ["agents.fo.model_settings.thinking=high"],
        "override 'agents.fo.model_settings.thinking=high': an override must name a model "
        "(add agents.fo.model=<model>)",
    ),
    (
        ["agents.fo.temperature=0"],
        "override 'agents.fo.temperature=0': agents.<id>.* takes only "
        "model, provider, model_settings (e.g. agents.<id>.model=...)",
    ),
    (
        ["agents.fo=x"],
        "override 'agents.fo=x': agents.<id>.* takes only "
        "model, provider, model_settings (e.g. agents.<id>.model=...)",
    ),
    (
        ["agents.fo.model.name=x"],
        "override 'agents.fo.model.name=x': agents.<id>.model takes no sub-key",
    ),
    (
        ["round_count=3", "round_count.x=1"],
        "override 'round_count.x=1' conflicts with an earlier one: 'round_count' is not an object",
    ),
]


@pytest.mark.parametrize(("items", "message"), REFUSED)
def test_parse_overrides_refuses(items, message):
    with pytest.raises(ConfigError) as caught:
        parse_overrides(items)
    assert str(caught.value) == message
    assert caught.value.exit_code == EXIT_REFUSED == 65
