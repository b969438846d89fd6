"""Mistakes on a ``glossogen run`` command line (scenario, config, knobs, providers, settings) are
refused at launch with one exact line and their own exit code, before any folder exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.launch import RunRequest, estimate_cost, plan_run

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "SELF_HOSTED_BASE_URLS",
    "SELF_HOSTED_API_KEY",
)
PD = ["prisoners_dilemma", "--config", "knobs_default"]
SCRIPTED = ["--provider", "scripted", "--model", "scripted"]
PROVIDERS = (
    "(known: anthropic, openai, google-gla, xai, groq, mistral, deepseek, openrouter, ollama, "
    "self-hosted, scripted, local)"
)
KNOBS = (
    "agent_model_settings, channel_noise_level, idle_floor_seconds, judge_model, "
    "judge_model_settings, judge_provider, labels, max_round_duration_seconds, model_overrides, "
    "noise_replacement_mode, payoff_punishment, payoff_reward, payoff_sucker, payoff_temptation, "
    "postmortem_duration_seconds, postmortem_enabled, round_count, scheduled_events, "
    "scripted_misplay_share, seed"
)

CASES = [
    # (id, env, arguments after `run`, exit code, the whole error line; {tmp} is the working folder)
    (
        "unknown scenario",
        {},
        ["no_such_scenario", "--config", "knobs_default", *SCRIPTED],
        64,
        "unknown scenario 'no_such_scenario' (installed: drive_module_repair, orbital_anomaly, "
        "prisoners_dilemma, signal_game, spot_the_difference, veyru)",
    ),
    (
        "unknown preset",
        {},
        ["prisoners_dilemma", "--config", "knobs_missing", *SCRIPTED],
        65,
        "unknown preset 'knobs_missing' (available: knobs_default, knobs_no_postmortem)",
    ),
    (
        "config file absent",
        {},
        ["prisoners_dilemma", "--config", "./absent.json", *SCRIPTED],
        66,
        "config file '{tmp}/absent.json' does not exist",
    ),
    (
        "config file not JSON",
        {},
        ["prisoners_dilemma", "--config", "./bad.json", *SCRIPTED],
        65,
        "config file '{tmp}/bad.json' is not valid JSON: "
        "Expecting property name enclosed in double quotes at line 1 column 19",
    ),
    (
        "override not JSON",
        {},
        ["prisoners_dilemma", "--config", "knobs_default", "labels={oops", *SCRIPTED],
        65,
        "override 'labels' has malformed JSON value '{oops': "
        "Expecting property name enclosed in double quotes at line 1 column 2",
    ),
    (
        "misspelt knob",
        {},
        ["prisoners_dilemma", "--config", "knobs_default", "round_cont=3", *SCRIPTED],
        65,
        f"unknown knob 'round_cont', did you mean 'round_count'? (known: {KNOBS})",
    ),
    (
        "payoffs out of order",
        {},
        ["prisoners_dilemma", "--config", "knobs_default", "payoff_reward=9", *SCRIPTED],
        65,
        "invalid knobs: payoffs must satisfy temptation > reward > punishment > sucker "
        "(got 5, 9, 1, 0)",
    ),
    (
        "round_count=0",
        {},
        ["prisoners_dilemma", "--config", "knobs_default", "round_count=0", *SCRIPTED],
        65,
        "invalid knob 'round_count' = 0: Input should be greater than or equal to 1",
    ),
    (
        "unsafe group slug",
        {},
        ["prisoners_dilemma", "--config", "knobs_default", "--group-slug", "../etc", *SCRIPTED],
        64,
        "--group-slug '../etc': use 1-64 of a-z, 0-9, '-' and '_'",
    ),
    (
        "missing key",
        {},
        [*PD, "--provider", "openai", "--model", "gpt-5.4"],
        77,
        "missing credentials: OPENAI_API_KEY (provider openai, agent player_a)",
    ),
    (
        "missing key of an overridden seat",
        {"ANTHROPIC_API_KEY": "k"},
        [
            *PD,
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-6",
            "agents.player_b.model=gpt-5.4",
            "agents.player_b.provider=openai",
        ],
        77,
        "missing credentials: OPENAI_API_KEY (provider openai, agent player_b)",
    ),
    (
        "provider not in the enum",
        {},
        [*PD, "--provider", "bedrock", "--model", "x"],
        64,
        f"--provider: unknown provider 'bedrock' {PROVIDERS}",
    ),
    (
        "judge provider outside the judge list",
        {},
        [*PD, "--provider", "scripted", "--model", "s", "judge_provider=mistral"],
        65,
        "invalid knob 'judge_provider' = \"mistral\": "
        "Input should be 'anthropic', 'huggingface', 'openai' or 'scripted'",
    ),
    (
        "self-hosted map not JSON",
        {"SELF_HOSTED_BASE_URLS": "{nope", "SELF_HOSTED_API_KEY": "t"},
        [*PD, "--provider", "self-hosted", "--model", "m"],
        65,
        "self-hosted:m: SELF_HOSTED_BASE_URLS is not JSON: "
        "Expecting property name enclosed in double quotes",
    ),
    (
        "self-hosted map lacks the model",
        {
            "SELF_HOSTED_BASE_URLS": json.dumps({"other": "http://127.0.0.1:9/v1"}),
            "SELF_HOSTED_API_KEY": "t",
        },
        [*PD, "--provider", "self-hosted", "--model", "m"],
        65,
        "self-hosted:m: model 'm' is not a key of SELF_HOSTED_BASE_URLS",
    ),
    (
        "thinking on a model that cannot think",
        {"OPENAI_API_KEY": "k"},
        [*PD, "--provider", "openai", "--model", "gpt-4.1", "agent_model_settings.thinking=high"],
        65,
        "agent player_a on openai:gpt-4.1 cannot think (pydantic-ai's profile), "
        "so thinking=high would be dropped",
    ),
    (
        "thinking=lots",
        {},
        [*PD, "--provider", "scripted", "--model", "s", "agent_model_settings.thinking=lots"],
        65,
        "invalid knob 'agent_model_settings.thinking' = \"lots\": "
        "accepted values are minimal, low, medium, high, xhigh, max, true, false, null",
    ),
    (
        "max_tokens=-1",
        {},
        [*PD, "--provider", "scripted", "--model", "s", "agent_model_settings.max_tokens=-1"],
        65,
        "invalid knob 'agent_model_settings.max_tokens' = -1: "
        "Input should be greater than or equal to 1",
    ),
    (
        "model setting without a model",
        {},
        [
            *PD,
            "--provider",
            "scripted",
            "--model",
            "s",
            "agents.player_a.model_settings.temperature=0.2",
        ],
        65,
        "override 'agents.player_a.model_settings.temperature=0.2': "
        "an override must name a model (add agents.player_a.model=<model>)",
    ),
]


@pytest.mark.parametrize(
    ("env", "args", "code", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_run_command_exits_with_its_code_and_one_exact_line_and_claims_nothing(
    env: dict[str, str],
    args: list[str],
    code: int,
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in PROVIDER_ENV:
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text('{"round_count": 3,,}')
    with pytest.raises(SystemExit) as exited:
        main(["run", *args, "--runs-dir", str(tmp_path / "runs")])
    assert exited.value.code == code
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: " + line.replace("{tmp}", str(tmp_path))
    ]
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
    # The figures are estimate_cost's (checked against played runs in tests/launch/
    # test_estimate.py); here: each seat on its own model and rates, the total, the assumptions.
    plan = plan_run(
        RunRequest(
            scenario="prisoners_dilemma",
            model="claude-sonnet-4-6",
            provider="anthropic",
            runs_dir=str(tmp_path / "runs"),
            config="knobs_default",
            overrides=[
                "round_count=4",
                "agents.player_b.model=gpt-5.4",
                "agents.player_b.provider=openai",
            ],  # fmt: skip
        )
    )
    estimate = estimate_cost(plan)
    a, b = estimate.seats
    assert (a.requests, b.requests) == (18, 18)  # 2.5 a round and 2 a postmortem, 4 rounds
    assert a.input_tokens == b.input_tokens and a.output_tokens == b.output_tokens
    assert a.usd is not None and b.usd is not None and estimate.total_usd == a.usd + b.usd
    assert out[1:] == [
        'agent player_a: anthropic:claude-sonnet-4-6 settings={"cache": true, "max_tokens": 16384} '
        f"~${a.usd:.4f} (18 requests)",
        'agent player_b: openai:gpt-5.4 settings={"cache": true, "max_tokens": 16384} '
        f"~${b.usd:.4f} (18 requests)",
        f"estimated cost: ${estimate.total_usd:.4f} for 4 rounds "
        f"(${estimate.total_usd / 4:.4f} per round)",
        *(f"  assuming {line}" for line in estimate.assumptions),
    ]
    assert estimate.assumptions[4] == (
        "cache (a request reads its previous request's prompt): player_a reads and writes, "
        "player_b reads"
    )
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
