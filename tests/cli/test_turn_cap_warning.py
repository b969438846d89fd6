"""A run whose rounds ``--max-agent-turns`` cannot cover is warned of at launch and in
``--dry-run`` (and in MCP ``estimate_run``), with the assumption it rests on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.mcp.conftest import SCRIPTED, call, in_process_session


def _warning(
    scenario: str, cap: int, rounds: int, needed: int, phases: str, covered: str,
    name: str = "--max-agent-turns",
) -> str:  # fmt: skip
    return (
        f"{name} {cap} likely ends the run before its {rounds} rounds: a {scenario} "
        f"seat takes about {needed} model requests over them (about {phases}, the scenario's "
        f"cost profile, as the estimate assumes), so {cap} turns cover about {covered} of them "
        f"and the run would end incomplete; {name} {needed} covers {rounds}"
    )


WARNED = {  # the estimate's own figures: a round's requests, the rounds the cap covers as the
    # estimate counts them (whole rounds, then the share of the next main phase it reaches)
    "orbital_anomaly": ("13 in a round's main phase and 3 in a postmortem", "12.6", 640),
    "signal_game": ("11 in a round's main phase and 2 in a postmortem", "15.5", 260),
    "prisoners_dilemma": ("2.5 in a round's main phase and 2 in a postmortem", "45.0", 270),
}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exited:
        code = int(exited.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("scenario", "rounds"),
    [("orbital_anomaly", 40), ("signal_game", 20), ("prisoners_dilemma", 60)],
)
def test_dry_run_warns_when_the_cap_cannot_cover_the_rounds(
    scenario: str, rounds: int, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    argv = ["run", scenario, f"round_count={rounds}", "--runs-dir", str(tmp_path / "runs"),
            "--model", "scripted", "--provider", "scripted", "--config", "knobs_default",
            "--dry-run"]  # fmt: skip
    code, out, err = _run(argv, capsys)
    assert code == 0
    phases, covered, needed = WARNED[scenario]
    warning = _warning(scenario, 200, rounds, needed, phases, covered)
    assert err.splitlines() == [f"glossogen: warning: {warning}"]
    assert out.startswith(f"dry run: {scenario}, preset 'knobs_default', {rounds} rounds, ")
    # Enough turns: no warning.
    code, _, err = _run([*argv, "--max-agent-turns", str(needed)], capsys)
    assert (code, err) == (0, "")


def test_a_launch_warns_before_it_plays_and_ends_incomplete_as_warned(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "prisoners_dilemma", "round_count=3", "--max-agent-turns", "10",
            "--runs-dir", str(tmp_path / "runs"), "--model", "scripted",
            "--provider", "scripted", "--config", "knobs_default"]  # fmt: skip
    code, _, err = _run(argv, capsys)
    phases = "2.5 in a round's main phase and 2 in a postmortem"
    warning = _warning("prisoners_dilemma", 10, 3, 13, phases, "2.5")
    assert err.splitlines()[0] == f"glossogen: warning: {warning}"
    assert code == 1  # incomplete: the cap cut the run short, as warned


def test_mcp_estimate_run_carries_the_warning(tmp_path: Path) -> None:
    async def go() -> dict[str, object]:
        async with in_process_session(tmp_path / "runs", tmp_path) as s:
            return await call(s, "estimate_run", scenario="orbital_anomaly",
                              overrides=["round_count=40"], **SCRIPTED)  # fmt: skip

    (tmp_path / "runs").mkdir()
    phases, covered, needed = WARNED["orbital_anomaly"]
    # MCP names the tool's argument, not the CLI's flag
    warned = _warning("orbital_anomaly", 200, 40, needed, phases, covered, "max_agent_turns")
    assert asyncio.run(go())["warnings"] == [warned]


def test_a_derived_run_warns_as_a_launch_does_its_copied_rounds_counted(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u46b: ``fork-at-round --max-agent-turns 3`` gave no warning, and the copied round's
    turns counted, so the next round was void (turn_limit): the shared check warns of it."""
    from tests.fixtures.played_runs import play_run

    source = play_run(str(tmp_path / "runs"), "veyru", rounds=3, now_unix=1_790_000_000)
    code, _, err = _run(["fork-at-round", "veyru", "--source-run-dir", source.url,
                         "--after-round", "1", "--runs-dir", str(tmp_path / "runs"),
                         "--max-agent-turns", "3", "--wait"], capsys)  # fmt: skip
    warning = _warning("veyru", 3, 3, 20, "4.5 in a round's main phase and 2.5 in a postmortem",
                       "0.8")  # fmt: skip
    assert (code, err.splitlines()) == (1, [
        f"glossogen: warning: {warning}",
        "glossogen: error: run incomplete: every agent reached --max-agent-turns 3",
    ])  # fmt: skip
