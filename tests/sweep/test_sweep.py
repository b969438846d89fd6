"""Sweeps played in-process (no workers): census, statistics, idempotency, --replace, retries."""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.filters import (
    ArtifactCollectionFilter,
    ArtifactCollectionFilterKey,
)

from glossogen.cli import main
from glossogen.eventlog import read_events
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.polling import wait_until
from tests.fixtures.processes import reaped, the_server_of
from tests.sweep.conftest import HELD_MODEL
from tests.sweep.test_spec import ISSUE_SPEC


def _summary(runs: Path, sweep_id: str) -> dict[str, Any]:
    return json.loads((runs / "sweeps" / sweep_id / "run_summary.json").read_text())


def _run_folders(runs: Path) -> list[Path]:
    return sorted((runs / "prisoners_dilemma").iterdir())


def _sweep(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", *args])
    return int(exited.value.code)


def _wilson(c: int, n: int) -> tuple[float, float]:
    z = 1.959964
    p = c / n
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (
        max(0.0, (p + z * z / (2 * n) - half) / (1 + z * z / n)),
        min(1.0, (p + z * z / (2 * n) + half) / (1 + z * z / n)),
    )


def test_the_issue_spec_runs_every_cell_twice_then_launches_nothing_then_replaces(
    prefect_api: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Played in this process (the CLI process itself, its exit and its last line on a server of
    its own, is ``test_a_sweep_on_its_temporary_server_sends_everything_before_stopping_it``)."""
    (tmp_path / "pd.yaml").write_text(ISSUE_SPEC)
    monkeypatch.chdir(tmp_path)  # the spec path as typed in its folder
    assert _sweep("pd.yaml") == 0
    runs = tmp_path / "runs"
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"summary: {runs}/sweeps/pd/run_summary.json"
    )
    summary = _summary(runs, "pd")
    assert summary["census"] == {
        "planned": 0,
        "running": 0,
        "done": 4,
        "failed": 0,
        "incomplete": 0,
    }
    assert (summary["exit_code"], summary["aborted"], summary["mode"]) == (0, None, "in-process")
    assert [c["params"] for c in summary["cells"]] == [{"round_count": 2}, {"round_count": 3}]
    folders = _run_folders(runs)
    assert len(folders) == 4
    seen = set()
    for folder in folders:
        labels = json.loads((folder / "labels.json").read_text())
        config = json.loads((folder / "config.json").read_text())
        cell = next(c for c in summary["cells"] if c["cell_id"] == labels["cell"])
        assert config["round_count"] == cell["params"]["round_count"]
        ended = read_events(str(folder / "prisoners_dilemma.jsonl")).events[-1]
        assert (ended.event_type, ended.status) == ("simulation_ended", "completed")
        seen.add((labels["cell"], labels["trial"], labels["sweep"], labels["epoch"]))
    assert seen == {(c["cell_id"], t, "pd", "1") for c in summary["cells"] for t in ("1", "2")}
    for cell in summary["cells"]:
        assert [t["state"] for t in cell["trials"]] == ["done", "done"]
        assert all(t["run_id"].startswith("prisoners_dilemma/") for t in cell["trials"])
        assert cell["trials"][0]["scores"]["rounds_played"] == cell["params"]["round_count"]
    assert summary["spend"]["spent_usd"] == 0.0
    assert summary["spend"]["cap_usd"] == 1.0

    # Launching the same spec again launches nothing.
    assert _sweep(str(tmp_path / "pd.yaml")) == 0
    assert _run_folders(runs) == folders
    again = _summary(runs, "pd")
    assert again["census"] == summary["census"]
    assert [t["run_id"] for c in again["cells"] for t in c["trials"]] == [
        t["run_id"] for c in summary["cells"] for t in c["trials"]
    ]

    # --replace starts over: four new runs, a new epoch; the old ones stay on disk.
    monkeypatch.setenv("GLOSSOGEN_BROWSER_URL", "http://127.0.0.1:8123")  # census links pages
    assert _sweep(str(tmp_path / "pd.yaml"), "--replace") == 0
    assert len(_run_folders(runs)) == 8
    # The sweep kept its start-up objects out of the collector while its runs played here,
    # and handed them back at its end (a process that goes on collects them as before).
    assert gc.get_freeze_count() == 0
    replaced = _summary(runs, "pd")
    assert replaced["epoch"] == 2
    old = {t["run_id"] for c in summary["cells"] for t in c["trials"]}
    new = {t["run_id"] for c in replaced["cells"] for t in c["trials"]}
    assert len(new) == 4 and not new & old
    # The census artifact's latest version is the final census.
    digest = hashlib.sha256(str(runs / "sweeps" / "pd").encode()).hexdigest()[:8]
    artifact = _latest_artifact(f"sweep-pd-{digest}")
    assert artifact.description.startswith(
        "sweep pd: planned 0 · running 0 · done 4 · failed 0 · incomplete 0"
    )
    assert sorted(row["run_id"] for row in json.loads(artifact.data)) == sorted(new)
    assert sorted(row["page"] for row in json.loads(artifact.data)) == sorted(
        f"http://127.0.0.1:8123/runs/{run_id}" for run_id in new
    )


def _latest_artifact(key: str) -> Any:
    import asyncio

    from prefect.client.orchestration import get_client

    async def read() -> Any:
        async with get_client() as client:
            return await client.read_latest_artifacts(
                artifact_filter=ArtifactCollectionFilter(
                    key=ArtifactCollectionFilterKey(any_=[key])
                )
            )

    (latest,) = asyncio.run(read())
    return latest


KNOWN_COUNTS_SPEC = """\
scenario: prisoners_dilemma
model: scripted
provider: scripted
runs_dir: ./runs
knobs:
  postmortem_enabled: false
  round_count: 2
grid:
  scripted_misplay_share: [0.0, 1.0]
trials: 2
vary_seed: true
"""


def test_known_pass_counts_give_hand_computed_wilson_intervals_and_stable_failures(
    prefect_api: str, tmp_path: Path
) -> None:
    spec = tmp_path / "known.yaml"
    spec.write_text(KNOWN_COUNTS_SPEC)
    assert _sweep(str(spec), "--stability-retry", "agent_rerun", "--concurrency", "2") == 0
    runs = tmp_path / "runs"
    summary = _summary(runs, "known")
    assert summary["census"]["done"] == 4
    winning, losing = summary["cells"]
    assert [t["verdicts"] for t in winning["trials"]] == [[True, True]] * 2
    assert [t["verdicts"] for t in losing["trials"]] == [[False, False]] * 2
    for cell, passes in ((winning, 2), (losing, 0)):
        metric = cell["metrics"]["round_success"]
        assert (metric["trials"], metric["passes"]) == (2, passes)
        assert (metric["wilson_low"], metric["wilson_high"]) == pytest.approx(_wilson(passes, 2))
        expected_k = {str(k): math.comb(passes, k) / math.comb(2, k) for k in (1, 2)}
        assert metric["pass_hat_k"] == expected_k
        # every run completed, whatever its verdicts
        assert cell["metrics"]["completed"]["passes"] == 2
    assert winning["metrics"]["round_success"]["consistency"] == "passed_consistently"
    assert losing["metrics"]["round_success"]["consistency"] == "failed_consistently"
    # The second sample of each failed trial failed again: the failures reproduce.
    assert (winning["stability"], winning["stability_detail"]) == (
        "stable",
        "no failed trial to re-sample",
    )
    assert (losing["stability"], losing["stability_detail"]) == (
        "stable",
        "all 2 failure(s) reproduced",
    )
    samples = [t["stability_sample"] for t in losing["trials"]]
    assert [s["outcome"] for s in samples] == ["reproduced"] * 2
    assert len(_run_folders(runs)) == 6  # 4 trials + 2 second samples, outside the census
    parts = sorted(json.loads((f / "labels.json").read_text())["part"] for f in _run_folders(runs))
    assert parts == ["main"] * 4 + ["stability"] * 2


def test_qualification_plays_one_short_run_first_and_keeps_the_users_budgets(
    prefect_api: str, tmp_path: Path
) -> None:
    spec = tmp_path / "q.yaml"
    spec.write_text(
        "scenario: prisoners_dilemma\nmodel: scripted\nprovider: scripted\n"
        "knobs: {postmortem_enabled: false}\ngrid:\n  seed: [1, 2]\n"
    )
    assert _sweep(str(spec), "--qualification", "--max-turns", "50") == 0
    summary = _summary(tmp_path / "runs", "q")
    (qualification,) = summary["qualification"]
    assert (qualification["state"], qualification["scores"]["rounds_played"]) == ("done", 1)
    folder = tmp_path / "runs" / qualification["run_id"]
    started = read_events(str(folder / "prisoners_dilemma.jsonl")).events[0]
    assert started.max_agent_turns == 50  # --max-turns was set: qualification keeps it
    assert started.scenario_config["labels"]["part"] == "qualification"
    assert summary["census"]["done"] == 2
    assert [c["trials"][0]["scores"]["rounds_played"] for c in summary["cells"]] == [5, 5]
    for cell in summary["cells"]:
        log = tmp_path / "runs" / cell["trials"][0]["run_id"] / "prisoners_dilemma.jsonl"
        assert read_events(str(log)).events[0].max_agent_turns == 50  # --max-turns


@pytest.mark.parametrize("server", ["configured", "temporary"])
def test_ctrl_c_exits_130_and_every_run_ends_interrupted_with_its_verdicts(
    prefect_api: str,
    tmp_path: Path,
    server: str,
    fresh_prefect_home: Path,
    slow_players: StubModelServer,
) -> None:
    """Ctrl-C reaches the whole process group, as a terminal sends it.

    ``temporary``: no ``PREFECT_API_URL``, so the sweep starts its own server (in a session
    of its own, which the Ctrl-C must not reach). The runs' seats wait on the stub's held
    answers (``slow_players``): mid-game, they wait on I/O instead of burning CPU.
    """
    env = os.environ.copy()
    if server == "temporary":  # its own home: a temporary server of another test never shares it
        env.pop("PREFECT_API_URL")
        env["PREFECT_HOME"] = str(fresh_prefect_home)
    (tmp_path / "long.yaml").write_text(
        f"scenario: prisoners_dilemma\nmodel: {HELD_MODEL}\nprovider: self-hosted\n"
        "knobs: {round_count: 1000, postmortem_enabled: false}\ntrials: 3\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "sweep", "long.yaml", "--max-turns", "100000"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, signalled as a terminal's Ctrl-C is
    )
    runs = tmp_path / "runs" / "prisoners_dilemma"

    def all_mid_game() -> bool:
        assert process.poll() is None, process.communicate()
        logs = list(runs.glob("*/prisoners_dilemma.jsonl"))
        return len(logs) == 3 and all('"round_result_recorded"' in log.read_text() for log in logs)

    # However the test ends, the sweep's group and its temporary server (another session,
    # found by its PREFECT_HOME) are ended.
    with reaped(process, home=fresh_prefect_home if server == "temporary" else None):
        wait_until(all_mid_game, "all three runs to be mid-game")  # then interrupt
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate()
    assert process.returncode == 130
    assert err.strip().splitlines()[-1].startswith("glossogen: error: interrupted")
    summary = _summary(tmp_path / "runs", "long")
    assert (summary["exit_code"], summary["aborted"]["reason"]) == (130, "interrupted")
    assert summary["census"]["incomplete"] == 3
    logs = sorted(runs.glob("*/prisoners_dilemma.jsonl"))
    assert len(logs) == 3
    for log in logs:
        last = read_events(str(log)).events[-1]
        assert (last.event_type, last.status) == ("simulation_ended", "interrupted")
    shown = {t["run_id"]: t for t in summary["cells"][0]["trials"]}
    assert sorted(shown) == sorted(f"prisoners_dilemma/{log.parent.name}" for log in logs)
    for run_id, trial in shown.items():
        events = read_events(str(tmp_path / "runs" / run_id / "prisoners_dilemma.jsonl")).events
        verdicts = [e.success for e in events if e.event_type == "round_result_recorded"]
        assert (trial["state"], trial["status"]) == ("incomplete", "interrupted")
        assert trial["verdicts"] == verdicts and verdicts


def _long_sweep(tmp_path: Path, home: Path, knobs: str) -> subprocess.Popen[str]:
    """``glossogen sweep`` of prisoners_dilemma runs on its own temporary server, their seats
    played by the stub's held answers (the caller takes ``slow_players``)."""
    env = os.environ.copy()
    env.pop("PREFECT_API_URL", None)
    env["PREFECT_HOME"] = str(home)  # its own database, shared with no test
    (tmp_path / "long.yaml").write_text(
        f"scenario: prisoners_dilemma\nmodel: {HELD_MODEL}\nprovider: self-hosted\n" + knobs
    )
    return subprocess.Popen(
        [sys.executable, "-m", "glossogen", "sweep", "long.yaml", "--max-turns", "100000"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # a group reaped() ends
    )  # fmt: skip


def test_a_sigterm_stops_the_temporary_server_the_sweep_started(
    tmp_path: Path, fresh_prefect_home: Path, slow_players: StubModelServer
) -> None:
    """``timeout`` or ``kill`` sends SIGTERM to the sweep's process alone: with no
    ``PREFECT_API_URL`` the sweep started a Prefect server in a session of its own, which the
    signal does not reach; the sweep stops it before it ends by the signal, its run sealed
    ``interrupted`` (was: the process ended, the server played on)."""
    process = _long_sweep(
        tmp_path, fresh_prefect_home, "knobs: {round_count: 1000, postmortem_enabled: false}\n"
    )
    runs = tmp_path / "runs" / "prisoners_dilemma"

    def mid_game() -> bool:
        assert process.poll() is None, process.communicate()
        logs = list(runs.glob("*/prisoners_dilemma.jsonl"))
        return len(logs) == 1 and '"round_result_recorded"' in logs[0].read_text()

    with reaped(process, home=fresh_prefect_home):  # its server, in a session of its own, too
        wait_until(mid_game, "the run to be mid-game")
        server = the_server_of(process.pid)  # the one process the sweep started: its server
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate()
        assert process.returncode == -signal.SIGTERM
        server.assert_stopped()  # that process no longer lives, nothing listens on its port
    assert err.splitlines()[-1] == (
        "glossogen: error: interrupted; every run's log ends with simulation_ended "
        "(interrupted), run_summary.json says what ran"
    )
    (log,) = runs.glob("*/prisoners_dilemma.jsonl")
    ended = read_events(str(log)).events[-1]
    assert (ended.event_type, ended.status) == ("simulation_ended", "interrupted")


def test_a_sigterm_ends_a_sweep_of_several_runs_in_flight_like_ctrl_c(
    tmp_path: Path, fresh_prefect_home: Path, slow_players: StubModelServer
) -> None:
    """Four long runs in flight at once (issue 34): one SIGTERM seals every run ``interrupted``,
    stops the temporary server and ends the sweep by the signal (was: each run's subflow put
    Prefect's handler back, the signal was raised in one run's task, that run froze unsealed,
    the others played on and a second SIGTERM did nothing)."""
    process = _long_sweep(
        tmp_path,
        fresh_prefect_home,
        "knobs: {postmortem_enabled: false}\ngrid:\n  round_count: [990, 1000]\ntrials: 2\n",
    )
    runs = tmp_path / "runs" / "prisoners_dilemma"

    def all_mid_game() -> bool:
        assert process.poll() is None, process.communicate()
        logs = list(runs.glob("*/prisoners_dilemma.jsonl"))
        return len(logs) == 4 and all('"round_result_recorded"' in log.read_text() for log in logs)

    with reaped(process, home=fresh_prefect_home):  # its server, in a session of its own, too
        wait_until(all_mid_game, "the four runs to be mid-game")
        server = the_server_of(process.pid)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=300)  # bound: a hang's (was: it ignored SIGTERM)
        assert process.returncode == -signal.SIGTERM
        server.assert_stopped()
    assert err.splitlines()[-1] == (
        "glossogen: error: interrupted; every run's log ends with simulation_ended "
        "(interrupted), run_summary.json says what ran"
    )
    logs = sorted(runs.glob("*/prisoners_dilemma.jsonl"))
    assert len(logs) == 4
    for log in logs:
        ended = read_events(str(log)).events[-1]
        assert (ended.event_type, ended.status) == ("simulation_ended", "interrupted"), log


def _locked(folder: Path) -> bool:
    from glossogen.sweep._ledger import writer_alive

    return writer_alive(str(folder))


def test_a_sweep_on_its_temporary_server_sends_everything_before_stopping_it(
    tmp_path: Path, fresh_prefect_home: Path
) -> None:
    """Queued logs and events reach the temporary server before it stops, so nothing is retried
    against a stopped server at exit (``Error logging to API``, about a minute of waiting)."""
    env = os.environ.copy()
    env.pop("PREFECT_API_URL", None)
    env["PREFECT_HOME"] = str(fresh_prefect_home)  # its own database, shared with no test
    (tmp_path / "pd.yaml").write_text(ISSUE_SPEC.replace("round_count: [2, 3]", "round_count: [1]"))
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "sweep", "pd.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Error logging to API" not in done.stderr
    assert done.stdout.splitlines()[-1] == f"summary: {tmp_path}/runs/sweeps/pd/run_summary.json"


def test_a_failed_qualification_of_an_earlier_launch_is_named_with_the_way_out(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "q.yaml"
    spec.write_text(
        "scenario: prisoners_dilemma\nmodel: scripted\nprovider: scripted\n"
        "knobs: {postmortem_enabled: false, round_count: 2}\ntrials: 1\n"
    )
    assert _sweep(str(spec), "--qualification", "--max-turns", "1") == 65
    (qualification,) = _summary(tmp_path / "runs", "q")["qualification"]
    assert qualification["status"] == "incomplete"
    capsys.readouterr()
    # Launched again without --max-turns 1: the failed run stays authoritative, and says so.
    assert _sweep(str(spec), "--qualification") == 65
    summary = _summary(tmp_path / "runs", "q")
    cell_id = summary["cells"][0]["cell_id"]
    detail = (
        f"qualification run of {cell_id}: every agent reached max_agent_turns 1 "
        f"(run {qualification['run_id']} of an earlier launch, which stays authoritative; "
        "{replace} plays it again)"
    )
    # The summary names the request field; the CLI's line names its flag.
    assert summary["aborted"] == {
        "reason": "qualification_failed", "detail": detail.replace("{replace}", "replace")
    }  # fmt: skip
    assert capsys.readouterr().err.splitlines()[-1] == (
        "glossogen: error: sweep stopped early (qualification_failed): "
        + detail.replace("{replace}", "--replace")
    )
    assert len(list((tmp_path / "runs" / "prisoners_dilemma").iterdir())) == 1


def test_a_flow_run_handed_only_the_request_plans_it_once_and_plays_the_same_census(
    prefect_api: str, tmp_path: Path
) -> None:
    """The ``sweep`` deployment's flow run gets ``request`` alone (no plan): the flow plans it
    (the ``plan_sweep`` task) and plays what ``glossogen sweep`` would; a second launch plays
    nothing more."""
    import asyncio

    from flows.sweep import sweep
    from glossogen.sweep import SweepRequest

    spec = tmp_path / "pd.yaml"
    spec.write_text(ISSUE_SPEC)
    summary = asyncio.run(sweep(SweepRequest(spec_path=str(spec), concurrency=2)))
    c = summary.census
    assert (c.planned, c.running, c.done, c.failed, c.incomplete) == (0, 0, 4, 0, 0)
    assert (summary.exit_code, summary.mode) == (0, "in-process")
    assert len(_run_folders(tmp_path / "runs")) == 4
    again = asyncio.run(sweep({"spec_path": str(spec)}))  # type: ignore[arg-type]  # a deployment's JSON
    assert (again.census.done, again.exit_code) == (4, 0)
    assert len(_run_folders(tmp_path / "runs")) == 4
