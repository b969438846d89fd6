"""A dry run without keys still refuses what a launch would: settings a model would drop.

A dry run estimates without keys (issue 29), but ``cache=12h`` on a model that sells 5m and 1h
or ``thinking`` on a model that cannot think is refused by a launch with a key (exit 65); the
dry run builds the models with placeholder keys and refuses them the same, and leaves the
environment as it found it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from glossogen.cli import main


def _dry_run(tmp_path: Path, model: str, provider: str, *knobs: str) -> int:
    argv = ["run", "prisoners_dilemma", "--model", model, "--provider", provider]
    argv += ["--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default", *knobs]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--dry-run"])
    return int(exited.value.code or 0)


@pytest.mark.parametrize(
    ("model", "provider", "knob", "refusal"),
    [
        (
            "claude-sonnet-4-5",
            "anthropic",
            "agent_model_settings.cache=12h",
            "agent player_a on anthropic:claude-sonnet-4-5 sells 5m, 1h (pydantic-ai's profile), "
            "so cache=12h would be dropped; use cache=true for the provider's default",
        ),
        (
            "gpt-4.1",
            "openai",
            "agent_model_settings.thinking=high",
            "agent player_a on openai:gpt-4.1 cannot think (pydantic-ai's profile), so "
            "thinking=high would be dropped",
        ),
    ],
)
def test_a_dry_run_without_a_key_refuses_a_setting_the_model_would_drop(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    provider: str,
    knob: str,
    refusal: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    variable = f"{provider.upper()}_API_KEY"
    monkeypatch.delenv(variable, raising=False)
    assert _dry_run(tmp_path, model, provider, knob) == 65
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: warning: missing credentials: {variable} (provider {provider}, agent "
        "player_a) (a launch would be refused)",
        f"glossogen: error: {refusal}",
    ]
    assert variable not in os.environ  # the placeholder is gone again
    assert not (tmp_path / "runs").exists()
    # the same settings a model takes still estimate without a key
    assert _dry_run(tmp_path, model, provider) == 0
    assert variable not in os.environ


def test_a_dry_run_says_the_spend_cap_it_checked_the_estimate_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _dry_run(tmp_path, "gpt-5-mini", "openai", "--spend-cap-usd", "5") == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "dry run: prisoners_dilemma, preset 'knobs_default', 5 rounds, max_agent_turns 200, "
        "run timeout none, spend cap $5.000000"
    )
