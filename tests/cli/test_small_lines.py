"""Lines of the CLI and MCP that were each one word off: --version, serve's help naming the
browser, an empty --config named as empty, MCP money rounded, one-line argument refusals."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from glossogen.launch import RunRequest, estimate_cost, plan_run
from tests.mcp.conftest import call, in_process_session, refusal


def _glossogen(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "glossogen", *argv],
                          capture_output=True, text=True)  # fmt: skip


def test_version() -> None:
    done = _glossogen("--version")
    assert (done.returncode, done.stdout, done.stderr) == (
        0, f"glossogen {version('glossogen')}\n", "")  # fmt: skip


def _in_process(
    capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int | str | None, str, str]:
    """``glossogen ARGV`` by the CLI's own entry: exit code, stdout, stderr (the lines are the
    point here, not a process: ``test_version`` keeps one, whose stderr is empty)."""
    capsys.readouterr()  # what came before is not this command's
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_serve_help_names_the_browser(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _in_process(capsys, "serve", "--help")
    assert code == 0
    assert "The run browser: open http://HOST:PORT/ in a web browser" in " ".join(out.split())
    _, listed, _ = _in_process(capsys, "--help")
    assert "Serve the run browser (/), the REST export endpoints and MCP at /mcp." in " ".join(
        listed.split()
    )


def test_an_empty_config_is_named_as_empty_not_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _in_process(capsys, "run", "veyru", "--model", "scripted", "--provider",
                                 "scripted", "--runs-dir", str(tmp_path), "--config", "",
                                 "--dry-run")  # fmt: skip
    assert (code, out) == (64, "")
    assert err == "glossogen: error: --config '' is empty: give it a value\n"
    _, _, missing = _in_process(capsys, "run", "veyru", "--model", "scripted", "--provider",
                                "scripted", "--runs-dir", str(tmp_path), "--dry-run")  # fmt: skip
    assert missing == "glossogen: error: Missing option '--config'.\n"


def test_mcp_rounds_money_and_refuses_an_extra_argument_in_one_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()

    async def go() -> tuple[dict[str, Any], str, str]:
        async with in_process_session(runs, tmp_path) as s:
            estimate = await call(s, "estimate_run", scenario="prisoners_dilemma",
                                  model="gpt-4.1-mini", provider="openai",
                                  overrides=["round_count=3"])  # fmt: skip
            extra = await refusal(s, "estimate_run", scenario="veyru", model="scripted",
                                  provider="scripted", rounds=3)  # fmt: skip
            two = await refusal(s, "list_runs", limit=1, page_size="many")
            return estimate, extra, two

    estimate, extra, two = asyncio.run(go())
    plan = plan_run(RunRequest(scenario="prisoners_dilemma", model="gpt-4.1-mini",
                               provider="openai", runs_dir=str(runs), config="knobs_default",
                               overrides=["round_count=3"]))  # fmt: skip
    raw = estimate_cost(plan)
    seats = [e.usd for e in raw.seats]
    # Float sums such as 0.038400000000000004 come back rounded to a millionth of a dollar.
    assert any(round(x, 6) != x for x in (*seats, raw.total_usd) if x is not None)
    assert [s["cost_usd"] for s in estimate["seats"]] == [round(x, 6) for x in seats if x]
    assert (estimate["cost_per_round_usd"], estimate["total_cost_usd"]) == (
        round(raw.per_round_usd, 6), round(raw.total_usd, 6))  # fmt: skip
    assert extra == "rounds 3: Extra inputs are not permitted"  # the value echoed, as REST
    assert two == (
        "page_size: Input should be a valid integer; limit 1: Extra inputs are not permitted"
    )
