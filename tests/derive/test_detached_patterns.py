"""A detached derived run is counted by the reference pages' ``pgrep -f`` patterns while it plays.

The pages' sweep script caps live runs per model with
``pgrep -f "python -m glossogen run <scenario> --model $1"`` and lists them with
``pgrep -af "python -m glossogen run <scenario> .* --resume"`` (``Python`` on macOS). The
replaced seat calls the stub OpenAI server, which holds each request, so the run is live (in a
model call) while both patterns are asked.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.simulate import simulate
from glossogen.cli import main
from glossogen.launch import RunRequest
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.polling import wait_until

SCENARIO = "prisoners_dilemma"
MODEL = "gpt-4.1-mini"
BY_MODEL = f"python -m glossogen run {SCENARIO} --model {MODEL}"
RESUMED = f"python -m glossogen run {SCENARIO} .* --resume"


def _pgrep(pattern: str) -> set[int]:
    done = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return {int(pid) for pid in done.stdout.split()}


@pytest.fixture
def held(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    """The stub OpenAI endpoint answering each request after 120 s (released at reset)."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-detached")
    model_stub.latency = 120.0
    return model_stub


@pytest.fixture
def detached(
    prefect_api: str, held: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[tuple[Path, int]]:
    """A replace-agent run started detached; yields its folder and pid, and ends it after."""
    source = asyncio.run(
        simulate(
            RunRequest(
                scenario=SCENARIO,
                model="scripted",
                provider="scripted",
                runs_dir=str(tmp_path / "source"),
                config="knobs_default",
                overrides=["round_count=2"],
            )
        )
    )
    with pytest.raises(SystemExit) as exited:
        main(
            ["replace-agent", SCENARIO, "--source-run-dir", source.run_url, "--after-round", "1",
             "--replaced-agent-id", "player_a", "--model", MODEL, "--provider", "openai",
             "--runs-dir", str(tmp_path / "runs")]
        )  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert exited.value.code == 0
    run_dir = Path(next(x for x in out if x.startswith("new_run_dir=")).split("=", 1)[1])
    (pid,) = wait_until(lambda: _pgrep(str(run_dir)), "the detached run's process")
    try:
        yield run_dir, pid
    finally:
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not _pgrep(str(run_dir)), "the detached run to end")


def test_both_patterns_of_the_pages_count_a_live_detached_run(
    detached: tuple[Path, int], held: StubModelServer
) -> None:
    run_dir, pid = detached
    wait_until(lambda: held.in_flight, "the replaced seat's first model request")
    assert pid in _pgrep(BY_MODEL)
    assert pid in _pgrep(RESUMED)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in cmdline[1:]] == [
        "-m", "glossogen", "run", SCENARIO, "--model", MODEL, "--provider", "openai",
        "--resume", str(run_dir),
    ]  # fmt: skip
    assert os.path.basename(cmdline[0]) == b"python"
