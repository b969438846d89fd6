"""Provider and settings mistakes are refused at launch with one line, before any folder exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main

CASES = [
    # (id, env, extra args, exit code, text the one-line error contains)
    (
        "missing key",
        {},
        ["--provider", "openai", "--model", "gpt-5.4"],
        77,
        "OPENAI_API_KEY (provider openai",
    ),
    (
        "missing key of an overridden seat",
        {"ANTHROPIC_API_KEY": "k"},
        [
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-6",
            "agents.player_b.model=gpt-5.4",
            "agents.player_b.provider=openai",
        ],
        77,
        "OPENAI_API_KEY (provider openai, agent player_b)",
    ),
    (
        "provider not in the enum",
        {},
        ["--provider", "bedrock", "--model", "x"],
        64,
        "unknown provider 'bedrock'",
    ),
    (
        "judge provider outside the judge list",
        {},
        ["--provider", "scripted", "--model", "s", "judge_provider=mistral"],
        65,
        "judge_provider",
    ),
    (
        "self-hosted map not JSON",
        {"SELF_HOSTED_BASE_URLS": "{nope", "SELF_HOSTED_API_KEY": "t"},
        ["--provider", "self-hosted", "--model", "m"],
        65,
        "SELF_HOSTED_BASE_URLS is not JSON",
    ),
    (
        "self-hosted map lacks the model",
        {
            "SELF_HOSTED_BASE_URLS": json.dumps({"other": "http://127.0.0.1:9/v1"}),
            "SELF_HOSTED_API_KEY": "t",
        },
        ["--provider", "self-hosted", "--model", "m"],
        65,
        "model 'm' is not a key of SELF_HOSTED_BASE_URLS",
    ),
    (
        "thinking on a model that cannot think",
        {"OPENAI_API_KEY": "k"},
        ["--provider", "openai", "--model", "gpt-4.1", "agent_model_settings.thinking=high"],
        65,
        "agent player_a on openai:gpt-4.1 cannot think",
    ),
    (
        "thinking=lots",
        {},
        ["--provider", "scripted", "--model", "s", "agent_model_settings.thinking=lots"],
        65,
        "agent_model_settings.thinking",
    ),
    (
        "max_tokens=-1",
        {},
        ["--provider", "scripted", "--model", "s", "agent_model_settings.max_tokens=-1"],
        65,
        "agent_model_settings.max_tokens",
    ),
    (
        "model setting without a model",
        {},
        [
            "--provider",
            "scripted",
            "--model",
            "s",
            "agents.player_a.model_settings.temperature=0.2",
        ],
        65,
        "must name a model",
    ),
]


@pytest.mark.parametrize(
    ("env", "args", "code", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_at_launch(
    env: dict[str, str],
    args: list[str],
    code: int,
    needle: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "SELF_HOSTED_BASE_URLS",
        "SELF_HOSTED_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--config",
                "knobs_default",
                *args,
            ]
        )
    err = capsys.readouterr().err.strip()
    assert exited.value.code == code, err
    assert len(err.splitlines()) == 1
    assert needle in err
    assert not (tmp_path / "runs").exists()


def test_dry_run_prints_each_seat_and_a_stated_estimate_and_claims_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--model",
                "claude-sonnet-4-6",
                "--provider",
                "anthropic",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--config",
                "knobs_default",
                "--dry-run",
                "round_count=4",
                "agents.player_b.model=gpt-5.4",
                "agents.player_b.provider=openai",
            ]
        )
    out = capsys.readouterr().out.splitlines()
    assert exited.value.code == 0
    # 20 requests x (4,000 in, 200 out): sonnet-4-6 $3/$15 per MTok -> 20 x $0.015 = $0.30;
    # gpt-5.4 $2.50/$15 per MTok -> 20 x $0.013 = $0.26.
    assert out[-3:] == [
        'agent player_a: anthropic:claude-sonnet-4-6 settings={"max_tokens": 16384} ~$0.3000/round',
        'agent player_b: openai:gpt-5.4 settings={"max_tokens": 16384} ~$0.2600/round',
        "estimated cost: $0.5600 per round, $2.2400 for 4 rounds (assuming 20 requests per agent per round of 4000 input and 200 output tokens)",
    ]
    assert not (tmp_path / "runs").exists()


def test_a_key_found_only_in_a_dotenv_reaches_the_model_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--model",
                "gpt-5.4",
                "--provider",
                "openai",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--config",
                "knobs_default",
                "--dry-run",
            ]
        )
    assert exited.value.code == 0, capsys.readouterr().err
    assert "sk-from-dotenv" not in capsys.readouterr().out
