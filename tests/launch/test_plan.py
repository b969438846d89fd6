"""Launch planning: resolution, refusals before any folder exists, and run folder claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.launch import (
    VIRTUAL_CLOCK_SETTING,
    LaunchError,
    RunRequest,
    check_credentials,
    claim_run,
    plan_run,
)


def _request(tmp_path: Path, **changes: object) -> RunRequest:
    fields: dict[str, object] = dict(
        scenario="prisoners_dilemma",
        model="scripted",
        provider="scripted",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
    )
    fields.update(changes)
    return RunRequest(**fields)  # type: ignore[arg-type]  # each test names valid fields


def test_scripted_agents_get_the_scripted_judge_and_the_virtual_clock(tmp_path: Path) -> None:
    plan = plan_run(
        _request(tmp_path, overrides=["round_count=2", "agents.player_b.model=other-script"])
    )
    assert plan.knobs.round_count == 2
    assert [(s.agent_id, s.model, s.provider) for s in plan.seats] == [
        ("player_a", "scripted", "scripted"),
        ("player_b", "other-script", "scripted"),
    ]
    assert plan.virtual_clock is True
    assert check_credentials(plan) == ["scripted"]


def test_two_claims_in_the_same_second_get_two_folders(tmp_path: Path) -> None:
    plan = plan_run(_request(tmp_path))
    first = claim_run(plan, str(tmp_path), now_unix=1_800_000_000)
    second = claim_run(plan, str(tmp_path), now_unix=1_800_000_000)
    assert first.run_id == "prisoners_dilemma/1800000000"
    assert second.run_id == "prisoners_dilemma/1800000001"
    assert sorted(p.name for p in Path(first.url).iterdir()) == ["config.json", "labels.json"]


def test_a_hosted_provider_without_its_key_is_refused_with_exit_77(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    plan = plan_run(
        _request(
            tmp_path, overrides=["agents.player_a.model=gpt-5.4", "agents.player_a.provider=openai"]
        )
    )
    with pytest.raises(LaunchError) as refused:
        check_credentials(plan, cwd=tmp_path)
    assert refused.value.exit_code == 77
    assert (
        str(refused.value)
        == "missing credentials: OPENAI_API_KEY (provider openai, agent player_a)"
    )
    assert not (tmp_path / "runs").exists()


def test_a_dotenv_above_the_working_directory_supplies_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-test-not-real\n")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    plan = plan_run(
        _request(
            tmp_path, overrides=["agents.player_a.model=gpt-5.4", "agents.player_a.provider=openai"]
        )
    )
    assert check_credentials(plan, cwd=work) == ["openai", "scripted"]


def test_an_override_for_an_agent_the_scenario_lacks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LaunchError) as refused:
        plan_run(_request(tmp_path, overrides=["agents.nobody.model=x"]))
    assert refused.value.exit_code == 65
    assert str(refused.value) == (
        "unknown agent 'nobody' in model_overrides or scheduled_events (agents: player_a, player_b)"
    )


def _openai_seat(tmp_path: Path) -> RunRequest:
    return _request(
        tmp_path, overrides=["agents.player_a.model=gpt-5.4", "agents.player_a.provider=openai"]
    )


# Port 9 is only parsed here (is the host loopback?), never dialled: no refused_port needed.
@pytest.mark.parametrize(
    ("setting", "base_url", "virtual"),
    [
        ("1", "http://127.0.0.1:9/v1", True),
        ("1", "http://localhost:9/v1", True),
        ("0", "http://127.0.0.1:9/v1", False),
        ("", "http://127.0.0.1:9/v1", False),
    ],
)
def test_the_test_clock_setting_plays_a_run_over_a_loopback_stub_on_game_time(
    tmp_path: Path, setting: str, base_url: str, virtual: bool
) -> None:
    plan = plan_run(_openai_seat(tmp_path))
    assert plan.virtual_clock is False  # not every seat is scripted
    environ = {VIRTUAL_CLOCK_SETTING: setting, "OPENAI_BASE_URL": base_url}
    assert plan.plays_on_virtual_clock(environ) is virtual


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {VIRTUAL_CLOCK_SETTING: "1"},
            "GLOSSOGEN_TEST_VIRTUAL_CLOCK=1 is for stub model servers on loopback; "
            "provider 'openai' is not one",
        ),
        (
            {VIRTUAL_CLOCK_SETTING: "1", "OPENAI_BASE_URL": "https://api.openai.com/v1"},
            "GLOSSOGEN_TEST_VIRTUAL_CLOCK=1 is for stub model servers on loopback; "
            "provider 'openai' is not one",
        ),
        ({VIRTUAL_CLOCK_SETTING: "yes"}, "GLOSSOGEN_TEST_VIRTUAL_CLOCK='yes': use 1 or 0"),
    ],
)
def test_the_test_clock_setting_is_refused_with_a_real_provider(
    tmp_path: Path, environ: dict[str, str], message: str
) -> None:
    plan = plan_run(_openai_seat(tmp_path))
    with pytest.raises(LaunchError) as refused:
        plan.plays_on_virtual_clock(environ)
    assert (str(refused.value), refused.value.exit_code) == (message, 65)


def test_the_cli_refuses_the_test_clock_with_a_real_provider_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(VIRTUAL_CLOCK_SETTING, "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["run", "prisoners_dilemma", "--model", "gpt-5.4", "--provider", "openai",
              "--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default"])  # fmt: skip
    assert exited.value.code == 65
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "glossogen: error: GLOSSOGEN_TEST_VIRTUAL_CLOCK=1 is for stub model servers on "
        "loopback; provider 'openai' is not one"
    )
    assert not (tmp_path / "runs").exists()
