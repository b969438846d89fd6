"""Sweeps that were interrupted, crashed, launched twice or could not reach their servers."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from flows.sweep import launch_all
from glossogen.cli import main
from glossogen.cli.sweep import play_until_interrupted
from glossogen.eventlog import read_events
from glossogen.storage import RunFolder, RunLock, RunStore
from glossogen.sweep import RunRecord, SweepOptions, SweepRun, load_spec, plan_sweep, scan_sweep
from glossogen.sweep._claim import CLAIM_TTL_SECONDS, TrialClaims
from glossogen.sweep._ledger import writer_alive
from tests.sweep.test_spec import ISSUE_SPEC

ONE_RUN = """\
scenario: prisoners_dilemma
model: scripted
provider: scripted
knobs: {round_count: 2}
trials: 1
"""


def _sweep(spec: Path, *options: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", str(spec), *options])
    return int(exited.value.code)


def _summary(runs: Path, sweep_id: str) -> dict[str, Any]:
    return json.loads((runs / "sweeps" / sweep_id / "run_summary.json").read_text())


@pytest.fixture(scope="module")
def one_run_played(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where ``ONE_RUN`` was swept to its end, once for the tests that copy it."""
    folder = tmp_path_factory.mktemp("one-run")
    spec = folder / "one.yaml"
    spec.write_text(ONE_RUN)
    assert _sweep(spec) == 0
    return folder


def _one_run_swept(tmp_path: Path, played: Path) -> tuple[Path, Path, Path, Path]:
    """A copy of ``ONE_RUN`` swept to its end (``played``) in ``tmp_path``; return the spec,
    runs folder, run folder and its log. The copy's files are the sweep's, its paths this
    test's own: a sweep records no absolute path but in ``run_summary.json``, which each launch
    writes anew."""
    shutil.copytree(played, tmp_path, dirs_exist_ok=True)
    spec, runs = tmp_path / "one.yaml", tmp_path / "runs"
    (first,) = sorted((runs / "prisoners_dilemma").iterdir())
    log = first / "prisoners_dilemma.jsonl"
    ended = read_events(str(log)).events[-1]
    assert (ended.event_type, ended.status) == ("simulation_ended", "completed")
    return spec, runs, first, log


def _plan(spec_file: Path) -> Any:
    spec, sweep_id = load_spec(spec_file)
    return plan_sweep(spec, sweep_id, str(spec_file), SweepOptions())


def test_a_ctrl_c_the_kernel_hands_to_the_flows_thread_still_stops_the_sweep() -> None:
    """ci49b hung 600 s in ``play_until_interrupted``'s join: a process's signal may be handed
    to any of its threads, CPython runs the handler in the main thread only, and nothing woke
    the main thread's untimed wait. Here the SIGINT goes to the flow's thread itself."""
    sealed: list[str] = []

    async def flow() -> str:
        try:
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread alone
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            sealed.append("simulation_ended interrupted")
            raise
        return "not reached"

    with pytest.raises(KeyboardInterrupt):
        play_until_interrupted(flow)
    assert sealed == ["simulation_ended interrupted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_cancels_the_flow_lets_it_seal_and_reports_the_interrupt() -> None:
    sealed: list[str] = []

    async def flow() -> str:
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the main thread's handler cancels the flow
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            sealed.append("simulation_ended interrupted")
            # A temporary Prefect server killed by the same Ctrl-C: the flow's state report
            # fails; it is still the interrupt that is reported.
            raise ConnectionError("All connection attempts failed") from None
        return "not reached"

    with pytest.raises(KeyboardInterrupt):
        play_until_interrupted(flow)
    assert sealed == ["simulation_ended interrupted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_run_without_a_live_writer_is_resumed_in_place_and_nothing_stays_running(
    prefect_api: str, tmp_path: Path, one_run_played: Path
) -> None:
    spec, runs, first, log = _one_run_swept(tmp_path, one_run_played)
    # The process died before logging simulation_ended: cut that line off.
    lines = log.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["event_type"] == "simulation_ended"
    log.write_text("".join(lines[:-1]))

    lock = RunLock(RunFolder.at(str(first)))  # a live writer: the run is running
    try:
        assert writer_alive(str(first))
        (record,) = scan_sweep(str(runs), "prisoners_dilemma", "one")
        assert (record.status, record.ended) == ("running", False)
    finally:
        lock.release()
    assert not writer_alive(str(first))
    (record,) = scan_sweep(str(runs), "prisoners_dilemma", "one")
    assert (record.status, record.error, record.verdicts) == (
        "interrupted",
        "no live writer: the run stopped without logging simulation_ended",
        [True, True],
    )

    # The re-run continues that run in place (nothing paid twice) and nothing stays running.
    assert _sweep(spec) == 0
    assert sorted((runs / "prisoners_dilemma").iterdir()) == [first]
    events = read_events(str(log)).events
    assert [e.event_type for e in events].count("run_resumed") == 1
    assert (events[-1].event_type, events[-1].status) == ("simulation_ended", "completed")
    summary = _summary(runs, "one")
    assert summary["census"] == {
        "planned": 0,
        "running": 0,
        "done": 1,
        "failed": 0,
        "incomplete": 0,
    }
    (cell,) = summary["cells"]
    assert (cell["trials"][0]["run_id"], cell["trials"][0]["verdicts"]) == (
        f"prisoners_dilemma/{first.name}",
        [True, True],
    )
    assert sorted(p.name for p in (runs / "sweeps/one/claims").iterdir()) == [
        f"{cell['cell_id']}-1-main-e1-r0.json",
        f"{cell['cell_id']}-1-main-e1-r1.json",
    ]
    assert summary["spend"]["estimate_source"] == {
        cell["cell_id"]: "mean logged cost of 1 ended run(s)"
    }
    assert summary["spend"]["estimate_per_run_usd"] == {cell["cell_id"]: 0.0}


def test_two_launches_at_once_pay_each_trial_once(prefect_api: str, tmp_path: Path) -> None:
    from flows.sweep import launch_all, play_in_process

    spec = tmp_path / "pd.yaml"
    spec.write_text(ISSUE_SPEC.replace("round_count: [2, 3]", "round_count: [1]"))  # 2 trials
    plan = _plan(spec)
    first = SweepRun(plan, "in-process")
    second = SweepRun(plan, "in-process")
    keys = plan.main_keys()

    async def both() -> None:
        await asyncio.gather(
            launch_all(first, keys, play_in_process), launch_all(second, keys, play_in_process)
        )

    asyncio.run(both())
    assert len(keys) == 2
    assert len(list((tmp_path / "runs" / "prisoners_dilemma").iterdir())) == 2
    assert set(first.states.values()) == {"done"}
    assert set(second.states.values()) == {"running"}
    owner = f"pid {os.getpid()} on {socket.gethostname()}"
    assert set(second.errors.values()) == {
        f"claimed by another live launch of this sweep ({owner}): not launched here"
    }
    claims = sorted(p.name for p in (tmp_path / "runs/sweeps/pd/claims").iterdir())
    assert claims == sorted(f"{k.cell_id}-{k.trial}-main-e1-r0.json" for k in keys)
    first.close()
    second.close()
    again = SweepRun(plan, "in-process")
    assert again.missing(keys) == []
    assert set(again.states.values()) == {"done"}


def test_a_claim_whose_owner_is_dead_is_taken_over(tmp_path: Path) -> None:
    # No process has this pid: the kernel hands out pids below pid_max only (an exited
    # child's pid could be handed to a new process before the claim is read).
    dead_pid = int(Path("/proc/sys/kernel/pid_max").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(dead_pid, 0)
    url = str(tmp_path / "sweeps" / "s")
    now = 1_800_000_000.0
    gone = TrialClaims(url, clock=lambda: now, host="h1", pid=dead_pid)
    assert gone.take("c1-1-main-e1-r0.json")
    alive = TrialClaims(url, clock=lambda: now, host="h1", pid=os.getpid())
    nonce = gone.nonces["c1-1-main-e1-r0.json"]
    assert nonce is not None and len(nonce) == 12 and int(nonce, 16) >= 0
    assert alive.take("c1-1-main-e1-r0.json")  # its owner's process is gone
    assert alive.owner("c1-1-main-e1-r0.json") == {
        "host": "h1",
        "pid": os.getpid(),
        "token": alive.token,
        "nonce": nonce,  # kept: the launch's idempotency key gets the dead owner's flow run
        "claimed_at": now,
    }
    assert alive.nonces == {"c1-1-main-e1-r0.json": nonce}
    other = TrialClaims(url, clock=lambda: now + CLAIM_TTL_SECONDS - 1, host="h2", pid=1)
    assert not other.take("c1-1-main-e1-r0.json")  # another host's claim, not yet old
    assert other.nonces == {}
    late = TrialClaims(url, clock=lambda: now + CLAIM_TTL_SECONDS, host="h2", pid=1)
    assert late.take("c1-1-main-e1-r0.json")
    assert late.nonces == {"c1-1-main-e1-r0.json": nonce}
    # The same claim in another sweep folder (another runs dir, or a deleted one) is new.
    elsewhere = TrialClaims(str(tmp_path / "other" / "sweeps" / "s"), clock=lambda: now)
    assert elsewhere.take("c1-1-main-e1-r0.json")
    assert elsewhere.nonces["c1-1-main-e1-r0.json"] not in (None, nonce)
    # In one process, a closed launch's claims are dead, an open one's are not.
    mine = TrialClaims(url, clock=lambda: now, host="h1", pid=os.getpid())
    assert mine.take("c1-2-main-e1-r0.json")
    rival = TrialClaims(url, clock=lambda: now, host="h1", pid=os.getpid())
    assert not rival.take("c1-2-main-e1-r0.json")
    mine.close()
    assert rival.take("c1-2-main-e1-r0.json")


def _record(key: Any, status: str, kinds: list[str]) -> RunRecord:
    return RunRecord(
        run_id=f"prisoners_dilemma/{key.trial}",
        run_url="/nowhere",
        cell_id=key.cell_id,
        trial=key.trial,
        status=status,
        failure_kinds=kinds,
    )


def test_a_sweep_whose_runs_all_failed_for_transport_exits_69(tmp_path: Path) -> None:
    spec = tmp_path / "pd.yaml"
    spec.write_text(ISSUE_SPEC)
    plan = _plan(spec)

    run = SweepRun(plan, "in-process")
    keys = plan.main_keys()
    for key in keys:
        run.chosen[key] = _record(key, "error", ["connection", "timeout"])
        run.states[key] = "failed"
    assert run.exit_code() == 69
    run.chosen[keys[0]] = _record(keys[0], "error", ["connection", "internal"])
    assert run.exit_code() == 1
    run.chosen[keys[0]] = _record(keys[0], "completed", [])
    run.states[keys[0]] = "done"
    assert run.exit_code() == 69
    run.close()


def test_an_unreachable_prefect_api_exits_69_in_one_line(tmp_path: Path, refused_port: int) -> None:
    (tmp_path / "one.yaml").write_text(ONE_RUN)
    api_url = f"http://127.0.0.1:{refused_port}/api"
    env = {**os.environ, "PREFECT_API_URL": api_url}
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "sweep", "one.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 69, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"glossogen: error: cannot reach the Prefect API at {api_url}: connection refused"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.yaml"]  # nothing written


def test_a_rerun_without_the_option_keeps_the_stability_on_disk(
    prefect_api: str, tmp_path: Path
) -> None:
    spec = tmp_path / "st.yaml"
    spec.write_text(ONE_RUN.replace("round_count: 2", "round_count: 3"))
    # Scripted and seeded: the one trial fails the same round each time, so its rerun
    # reproduces the failure and the sweep itself succeeds.
    assert _sweep(spec, "--stability-retry", "agent_rerun") == 0
    measured = _summary(tmp_path / "runs", "st")["cells"][0]
    assert (measured["stability"], measured["stability_detail"]) == (
        "stable",
        "all 1 failure(s) reproduced",
    )
    sample = measured["trials"][0]["stability_sample"]
    assert (sample["mode"], sample["outcome"]) == ("agent_rerun", "reproduced")
    assert sample["run_id"].startswith("prisoners_dilemma/")
    _sweep(spec)
    again = _summary(tmp_path / "runs", "st")["cells"][0]
    assert (again["stability"], again["stability_detail"]) == (
        measured["stability"],
        measured["stability_detail"],
    )
    assert again["trials"][0]["stability_sample"] == sample
    assert len(RunStore(str(tmp_path / "runs")).list_runs("prisoners_dilemma")) == 2


def test_an_interrupted_run_is_resumed_in_place_on_the_next_launch(
    prefect_api: str, tmp_path: Path, one_run_played: Path
) -> None:
    spec, runs, first, log = _one_run_swept(tmp_path, one_run_played)
    lines = log.read_text().splitlines(keepends=True)
    ended = json.loads(lines[-1])
    ended.update(status="interrupted", error="interrupted")  # as Ctrl-C leaves it
    log.write_text("".join(lines[:-1]) + json.dumps(ended) + "\n")
    (record,) = scan_sweep(str(runs), "prisoners_dilemma", "one")
    assert (record.status, record.started, record.endings) == ("interrupted", True, 1)

    assert _sweep(spec) == 0
    assert sorted((runs / "prisoners_dilemma").iterdir()) == [first]
    endings = [e.status for e in read_events(str(log)).events if e.event_type == "simulation_ended"]
    assert endings == ["interrupted", "completed"]
    summary = _summary(runs, "one")
    (cell,) = summary["cells"]
    assert (cell["trials"][0]["run_id"], cell["trials"][0]["status"]) == (
        f"prisoners_dilemma/{first.name}",
        "completed",
    )
    assert f"{cell['cell_id']}-1-main-e1-r1-m1.json" in {
        p.name for p in (runs / "sweeps/one/claims").iterdir()
    }


@pytest.mark.parametrize("mode", ["in-process", "deployments"])
def test_an_interrupted_launch_says_which_trials_it_never_launched(
    tmp_path: Path, mode: str
) -> None:
    spec_file = tmp_path / "three.yaml"
    spec_file.write_text(ONE_RUN.replace("trials: 1", "trials: 3"))
    spec, sweep_id = load_spec(spec_file)
    plan = plan_sweep(spec, sweep_id, str(spec_file), SweepOptions(concurrency=1))
    launched: list[int] = []

    async def launcher(launch: Any) -> RunRecord:
        launched.append(launch.key.trial)
        await asyncio.Event().wait()  # in flight until the Ctrl-C
        raise AssertionError("not reached")

    async def interrupt() -> SweepRun:
        run = SweepRun(plan, mode)  # type: ignore[arg-type]  # the mode is a test parameter
        playing = asyncio.create_task(launch_all(run, plan.main_keys(), launcher))
        while not launched:
            await asyncio.sleep(0)
        playing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await playing
        run.interrupted()
        return run

    summary = asyncio.run(interrupt()).summary(130).model_dump()
    assert launched == [1]
    assert [
        (t["trial"], t["state"], t["run_id"], t["error"]) for t in summary["cells"][0]["trials"]
    ] == [
        (1, "incomplete", None, None),
        (2, "incomplete", None, "not launched: interrupted"),
        (3, "incomplete", None, "not launched: interrupted"),
    ]
    workers = "; runs on workers play on, and the next launch counts them"
    assert summary["aborted"] == {
        "reason": "interrupted",
        "detail": "interrupted (Ctrl-C or cancellation); each run kept its log"
        + (workers if mode == "deployments" else ""),
    }
    assert summary["census"]["incomplete"] == 3
