"""A run whose rounds ``--max-agent-turns`` cannot cover is warned of at launch and in
``--dry-run`` (and in MCP ``estimate_run``), with the assumption it rests on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.mcp.conftest import SCRIPTED, call, stdio_session


def _warning(scenario: str, cap: int, rounds: int, per_round: int) -> str:
    return (
        f"--max-agent-turns {cap} likely ends the run before its {rounds} rounds: a {scenario} "
        f"seat takes about {per_round} model requests a round (assumed from its scripted "
        f"players), so {cap} turns cover about {cap // per_round} rounds and the run would end "
        f"incomplete; --max-agent-turns {rounds * per_round} covers {rounds}"
    )


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exited:
        code = int(exited.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("scenario", "rounds", "per_round"),
    [("orbital_anomaly", 40, 13), ("signal_game", 20, 12), ("prisoners_dilemma", 60, 5)],
)
def test_dry_run_warns_when_the_cap_cannot_cover_the_rounds(
    scenario: str, rounds: int, per_round: int, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    argv = ["run", scenario, f"round_count={rounds}", "--runs-dir", str(tmp_path / "runs"),
            "--model", "scripted", "--provider", "scripted", "--config", "knobs_default",
            "--dry-run"]  # fmt: skip
    code, out, err = _run(argv, capsys)
    assert code == 0
    assert err.splitlines() == [f"glossogen: warning: {_warning(scenario, 200, rounds, per_round)}"]
    assert out.startswith(f"dry run: {scenario}, preset 'knobs_default', {rounds} rounds, ")
    # Enough turns: no warning.
    code, _, err = _run([*argv, "--max-agent-turns", str(rounds * per_round)], capsys)
    assert (code, err) == (0, "")


def test_a_launch_warns_before_it_plays_and_ends_incomplete_as_warned(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "prisoners_dilemma", "round_count=3", "--max-agent-turns", "10",
            "--runs-dir", str(tmp_path / "runs"), "--model", "scripted",
            "--provider", "scripted", "--config", "knobs_default"]  # fmt: skip
    code, _, err = _run(argv, capsys)
    assert err.splitlines()[0] == f"glossogen: warning: {_warning('prisoners_dilemma', 10, 3, 5)}"
    assert code == 1  # incomplete: the cap cut the run short, as warned


def test_mcp_estimate_run_carries_the_warning(tmp_path: Path) -> None:
    async def go() -> dict[str, object]:
        async with stdio_session(tmp_path / "runs", tmp_path) as s:
            return await call(s, "estimate_run", scenario="orbital_anomaly",
                              overrides=["round_count=40"], **SCRIPTED)  # fmt: skip

    (tmp_path / "runs").mkdir()
    assert asyncio.run(go())["warnings"] == [_warning("orbital_anomaly", 200, 40, 13)]
