"""Knob values are strict: a boolean is not a number, a number not a boolean, a digit string
not a number. One line naming the knob and the value, exit 65, no run folder claimed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.knobs import BaseKnobs, ConfigError, parse_overrides, resolve_knobs

REFUSED = [
    (["round_count=true"], "invalid knob 'round_count' = true: Input should be a valid integer"),
    (["seed=true"], "invalid knob 'seed' = true: Input should be a valid integer"),
    (["seed=false"], "invalid knob 'seed' = false: Input should be a valid integer"),
    (["postmortem_enabled=1"],
     "invalid knob 'postmortem_enabled' = 1: Input should be a valid boolean"),
    (["postmortem_enabled=0"],
     "invalid knob 'postmortem_enabled' = 0: Input should be a valid boolean"),
    (['seed="42"'], "invalid knob 'seed' = \"42\": Input should be a valid integer"),
    (["round_count=5.0"], "invalid knob 'round_count' = 5.0: Input should be a valid integer"),
    (["max_round_duration_seconds=true"],
     "invalid knob 'max_round_duration_seconds' = true: Input should be a valid number"),
    (["agent_model_settings.max_tokens=true"],
     "invalid knob 'agent_model_settings.max_tokens' = true: Input should be a valid integer"),
]  # fmt: skip


@pytest.mark.parametrize(("items", "message"), REFUSED, ids=[c[0][0] for c in REFUSED])
def test_a_value_of_the_wrong_kind_is_refused_naming_knob_and_value(
    items: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        resolve_knobs(BaseKnobs, {}, parse_overrides(items))
    assert str(refused.value) == message
    assert refused.value.exit_code == 65


def test_values_of_the_right_kind_still_read() -> None:
    items = ["round_count=20", "seed=7", "postmortem_enabled=false",
             "max_round_duration_seconds=30", "agent_model_settings.thinking=true",
             "labels.cohort=pilot"]  # fmt: skip
    knobs = resolve_knobs(BaseKnobs, {}, parse_overrides(items))
    assert (knobs.round_count, knobs.seed, knobs.postmortem_enabled) == (20, 7, False)
    assert knobs.max_round_duration_seconds == 30.0
    assert isinstance(knobs.max_round_duration_seconds, float)
    assert knobs.agent_model_settings.thinking is True
    assert knobs.labels == {"cohort": "pilot"}


def test_a_config_file_is_as_strict_as_the_command_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        resolve_knobs(BaseKnobs, {"round_count": 3, "seed": "9"}, {})
    assert str(refused.value) == "invalid knob 'seed' = \"9\": Input should be a valid integer"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("round_count=true", "invalid knob 'round_count' = true: Input should be a valid integer"),
        ("seed=true", "invalid knob 'seed' = true: Input should be a valid integer"),
    ],
)
def test_glossogen_run_refuses_it_with_65_and_claims_nothing(
    item: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--config", "knobs_default", "--runs-dir", str(runs), item]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 65
    assert capsys.readouterr().err == f"glossogen: error: {message}\n"
    assert not runs.exists()


def test_a_config_file_with_a_digit_string_is_refused_by_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "knobs.json"
    config.write_text(json.dumps({"round_count": "2"}))
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--config", str(config), "--runs-dir", str(runs)]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 65
    assert capsys.readouterr().err == (
        "glossogen: error: invalid knob 'round_count' = \"2\": Input should be a valid integer\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["knobs.json"]


CACHE_VALUES = "true, false, 5m, 30m, 1h, 12h"  # pydantic-ai's CacheRetention tiers
CHOICE_REFUSED = [
    ("agent_model_settings.cache=2h", "agent_model_settings.cache", '"2h"', CACHE_VALUES),
    ("agent_model_settings.cache=1", "agent_model_settings.cache", "1", CACHE_VALUES),
    ("agent_model_settings.cache=null", "agent_model_settings.cache", "null", CACHE_VALUES),
    ("judge_model_settings.cache=yes", "judge_model_settings.cache", '"yes"', CACHE_VALUES),
    ('model_overrides={"player_a": {"model": "claude-haiku-4-5", "model_settings": '
     '{"cache": "1d"}}}', "model_overrides.player_a.model_settings.cache", '"1d"',
     CACHE_VALUES),
    ("agent_model_settings.thinking=huge", "agent_model_settings.thinking", '"huge"',
     "minimal, low, medium, high, xhigh, max, true, false, null"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("item", "knob", "shown", "accepted"), CHOICE_REFUSED, ids=[c[1] + c[2] for c in CHOICE_REFUSED]
)
def test_a_value_no_choice_accepts_is_refused_listing_the_choices(
    item: str,
    knob: str,
    shown: str,
    accepted: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A knob taking true, false or a named value (cache, thinking) lists them all, not
    pydantic's 'Input should be a valid boolean' for one member; nothing is claimed or sent."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # never reached
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "claude-sonnet-4-6", "--provider",
            "anthropic", "--config", "knobs_default", "--runs-dir", str(runs), item]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 65
    assert capsys.readouterr().err == (
        f"glossogen: error: invalid knob '{knob}' = {shown}: accepted values are {accepted}\n"
    )
    assert not runs.exists()
