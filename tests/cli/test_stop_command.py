"""``glossogen stop``: a run started in the background from a script (SIGINT ignored, as a shell
hands it to ``cmd &``) still stops ``interrupted`` (real processes, signalled); a remote folder
is refused in one line, and a claim whose log never began is cancelled (the CLI's entry,
in-process: the result is the point, not a process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prefect.client.schemas.objects import StateType

from flows.simulate import STOPPED
from glossogen.cli import main
from glossogen.eventlog import RoundCompleted, SimulationEnded, read_events
from tests.fixtures.artifacts import run_table_artifact
from tests.fixtures.played_runs import claim_cancelled, claim_unbegun, play_run
from tests.fixtures.polling import wait_until
from tests.fixtures.processes import (
    SERVER_START,
    children_of,
    processes_with_home,
    reaped,
    started_at,
    the_server_of,
)
from tests.orchestration.flow_runs import read_flow_run


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does for a background job


def test_a_background_run_that_started_with_sigint_ignored_stops_interrupted(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    run = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--model", "scripted",
         "--provider", "scripted", "--config", "knobs_default", "round_count=1000",
         "--runs-dir", str(runs)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        preexec_fn=_ignore_sigint, start_new_session=True,  # a group reaped() ends
    )  # fmt: skip
    with reaped(run):
        _stop_a_background_run(run)


def _stop_a_background_run(run: subprocess.Popen[str]) -> None:
    assert run.stdout is not None
    line = ""
    while not line.startswith("new_run_dir="):  # after the preset and resolved-config lines
        line = run.stdout.readline()
        assert line, "the run printed no new_run_dir= line"
    run_dir = Path(line.strip().removeprefix("new_run_dir="))
    log = run_dir / "veyru.jsonl"

    def a_round_done() -> bool:
        return log.is_file() and any(
            isinstance(e, RoundCompleted) for e in read_events(str(log)).events
        )

    wait_until(a_round_done, "the first round to end")
    stop = subprocess.run(
        [sys.executable, "-m", "glossogen", "stop", str(run_dir)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.startswith(f"stopping veyru/{run_dir.name} (pid {run.pid}): ")
    _, err = run.communicate()
    assert run.returncode == 130, err
    ended = read_events(str(log)).events[-1]
    assert isinstance(ended, SimulationEnded) and ended.status == "interrupted"
    # The round the stop lands in depends on when it arrives (a live process): a bound.
    assert ended.rounds_played is not None and 1 <= ended.rounds_played < 1000
    # The interrupted run published its round table too, once its log was sealed.
    artifact = run_table_artifact(str(run_dir))
    played = ended.rounds_played
    assert [row["round"] for row in artifact["rows"]] == list(range(1, played + 1))
    assert artifact["description"].startswith(
        f"run veyru/{run_dir.name}: interrupted, {ended.rounds_won} of {played} rounds won, "
        f"{ended.total_messages} messages, {ended.total_chars} chars, $0.000000; folder "
    )
    # A stop is a user's cancel: the flow run ends Cancelled (it was Crashed, "Execution was
    # cancelled by the runtime environment.", though the log ends 'interrupted': issue 32).
    flow_run = read_flow_run(artifact["flow_run_id"])
    assert flow_run.state is not None
    assert (flow_run.state_type, flow_run.state.message) == (StateType.CANCELLED, STOPPED)


def test_a_stopped_run_without_an_api_leaves_no_temporary_server_behind(
    fresh_prefect_home: Path, tmp_path: Path
) -> None:
    home = fresh_prefect_home
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(home)  # marks every process of this run, the server's included
    runs = tmp_path / "runs"
    run = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "run", "veyru", "--model", "scripted",
         "--provider", "scripted", "--config", "knobs_default", "round_count=1000",
         "--runs-dir", str(runs)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        start_new_session=True,  # a group reaped() ends
    )  # fmt: skip
    with reaped(run, home=home):  # the temporary server, in a session of its own, too
        _stop_a_run_on_its_temporary_server(run, home)


def _stop_a_run_on_its_temporary_server(run: subprocess.Popen[str], home: Path) -> None:
    assert run.stdout is not None
    line = ""
    while not line.startswith("new_run_dir="):
        line = run.stdout.readline()
        assert line, "the run printed no new_run_dir= line"
    run_dir = Path(line.strip().removeprefix("new_run_dir="))
    log = run_dir / "veyru.jsonl"
    wait_until(
        lambda: (
            log.is_file()
            and any(isinstance(e, RoundCompleted) for e in read_events(str(log)).events)
        ),
        "the first round to end",
    )
    assert len(processes_with_home(home)) == 2  # the run and its temporary Prefect server
    # The CLI's entry in-process: the run's and its server's ends are the point here (the stop's
    # own process is test_a_background_run_that_started_with_sigint_ignored_stops_interrupted's).
    with pytest.raises(SystemExit) as stopped:
        main(["stop", str(run_dir)])
    assert stopped.value.code == 0
    _, err = run.communicate()
    assert run.returncode == 130, err
    assert processes_with_home(home) == []
    ended = read_events(str(log)).events[-1]
    assert isinstance(ended, SimulationEnded) and ended.status == "interrupted"


def _stop(run_dir: str, capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str, str]:
    """``glossogen stop RUN_DIR`` by the CLI's own entry: its exit code, stdout and stderr."""
    capsys.readouterr()  # what came before is not this command's
    with pytest.raises(SystemExit) as exited:
        main(["stop", run_dir])
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_a_remote_folder_is_refused_without_reading_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No credentials for this bucket: the refusal must not need to read it.
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    code, _, err = _stop("s3://no-such-bucket/runs/veyru/1796145904", capsys)
    assert code == 65
    assert err == (
        "glossogen: error: s3://no-such-bucket/runs/veyru/1796145904 is remote: "
        "glossogen stop reaches local writers only\n"
    )


def test_a_claimed_run_whose_log_never_began_is_cancelled_and_its_folder_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = claim_unbegun(str(tmp_path / "runs"))  # a launcher's claim, its player not begun
    code, out, err = _stop(folder.url, capsys)
    assert (code, err) == (0, "")
    assert out == claim_cancelled(folder.run_id) + "\n"
    assert not Path(folder.url).exists()
    again = _stop(folder.url, capsys)
    assert (again[0], again[2]) == (
        66,
        f"glossogen: error: run ids that no longer resolve: {folder.url}\n",  # as typed
    )


def test_a_file_where_the_run_folder_should_be_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "veyru").mkdir()
    (tmp_path / "veyru" / "1700000001").write_text("")
    code, _, err = _stop(str(tmp_path / "veyru" / "1700000001"), capsys)
    assert code == 66
    assert err == (
        f"glossogen: error: {tmp_path / 'veyru' / '1700000001'} is a file, not a run folder\n"
    )


STOP_PATH_PROBE = """
import sys
from glossogen.cli.stop import stop
code = stop(%r)
heavy = %r
print(code, sorted(name for name in heavy if name in sys.modules))
"""
HEAVY_FOR_A_STOP = [
    "glossogen.engine", "glossogen.launch._plan", "glossogen.launch._session",
    "glossogen.eventlog", "glossogen.mcp", "glossogen.server", "pydantic_ai", "mcp",
    "fastapi", "polars", "prefect", "orchestration", "flows",
]  # fmt: skip


def test_a_stop_imports_neither_the_engine_nor_another_surface_nor_prefect(
    tmp_path: Path,
) -> None:
    """``glossogen stop`` of a local claim: run control from the library, nothing heavier."""
    folder = claim_unbegun(str(tmp_path / "runs"))
    done = subprocess.run(
        [sys.executable, "-c", STOP_PATH_PROBE % (folder.url, HEAVY_FOR_A_STOP)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [claim_cancelled(folder.run_id), "0 []"]


def test_a_cancel_request_cancels_a_queued_run_and_refuses_a_begun_one(tmp_path: Path) -> None:
    """``StopRequest(mode="cancel")``: a queued claim goes as under ``stop``; a run whose log
    has begun is refused (65) and left as it is, nothing signalled."""
    from glossogen.launch import StopError, StopRequest, stop_run

    runs = str(tmp_path / "runs")
    queued = claim_unbegun(runs)
    done = stop_run(StopRequest(run_dir=queued.url + "/", mode="cancel"))
    assert (done.run_id, done.message, done.pid) == (
        queued.run_id, claim_cancelled(queued.run_id), None
    )  # fmt: skip
    assert not Path(queued.url).exists()
    begun = play_run(runs, rounds=1)
    files = sorted(p.name for p in Path(begun.url).iterdir())
    with pytest.raises(StopError) as refused:
        stop_run(StopRequest(run_dir=begun.url, mode="cancel"))
    assert (str(refused.value), refused.value.exit_code) == (
        f"run {begun.run_id} has begun its log: only a queued run is cancelled; stop it "
        "instead (it ends 'interrupted', resumable)",
        65,
    )
    assert sorted(p.name for p in Path(begun.url).iterdir()) == files


def test_a_stop_request_naming_no_run_folder_is_refused_as_usage(tmp_path: Path) -> None:
    """A folder whose last two parts are no run id is usage (64); one whose are, but that
    names no run (``<tmp>/notes``: no timestamp), is an id that resolves to no run (66): the
    export's words for each (``launch.stop_folder``; was ``'...' is not a run folder
    (<runs-dir>/<scenario>/<unix_ts>)`` for both)."""
    from glossogen.launch import StopError, StopRequest, stop_run

    said = []
    for run_dir in ("notes", str(tmp_path / "notes")):
        with pytest.raises(StopError) as refused:
            stop_run(StopRequest(run_dir=run_dir))
        said.append((str(refused.value), refused.value.exit_code))
    assert said == [
        ("run_dir 'notes': not a run id (<scenario>/<run_dir_name>, relative to the runs "
         "directory)", 64),
        (f"run ids that no longer resolve: {tmp_path}/notes", 66),  # as typed (was <tmp>/notes)
    ]  # fmt: skip


SIGTERMED_RUN = [
    sys.executable, "-m", "glossogen", "run", "prisoners_dilemma", "--model", "scripted",
    "--provider", "scripted", "--config", "knobs_default", "round_count=1000",
    "--max-agent-turns", "10000", "--runs-dir",
]  # fmt: skip
"""A 1000-round run that plays until SIGTERM comes (its runs dir to follow)."""


def test_a_sigterm_ends_a_run_interrupted(prefect_api: str, tmp_path: Path) -> None:
    """``timeout`` or ``kill`` sends SIGTERM: the run ends ``interrupted``, sealed.

    Prefect raised it wherever the main thread was; in a seat's tool call it only ended that
    seat, and the round waited on it for ever (idle, the lock held, the log unsealed).
    """
    run = subprocess.Popen(
        [*SIGTERMED_RUN, str(tmp_path / "runs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        start_new_session=True,  # a group reaped() ends
    )  # fmt: skip
    with reaped(run):
        log = _three_rounds_played(run)
        assert children_of(run.pid) == []  # a PREFECT_API_URL: it started no process
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate()
        assert run.returncode == -signal.SIGTERM
        _assert_interrupted_after_three_rounds(log)
        assert stderr == (  # why it ended short, as a Ctrl-C says it (README's exit codes)
            "glossogen: error: interrupted; the run's log ends with simulation_ended status "
            "'interrupted'\n"
        )


def test_a_sigterm_stops_the_temporary_server_the_run_started(
    fresh_prefect_home: Path, tmp_path: Path
) -> None:
    """With no ``PREFECT_API_URL`` the run started a Prefect server, in a session of its own:
    SIGTERM stops it too, before the run's process ends by the signal.

    Prefect's handler sent the signal again to the default handler once the run's log was
    sealed, which ended the process before it stopped its server: the server played on.
    """
    home = fresh_prefect_home
    run = _started_without_an_api(home, tmp_path)
    with reaped(run, home=home):  # the temporary server, in a session of its own, too
        log = _three_rounds_played(run)
        server = the_server_of(run.pid)  # the one process the run started: its server
        run.send_signal(signal.SIGTERM)
        run.communicate()
        assert run.returncode == -signal.SIGTERM
        server.assert_stopped()  # that process no longer lives, nothing listens on its port
        _assert_interrupted_after_three_rounds(log)


def _started_without_an_api(home: Path, tmp_path: Path) -> subprocess.Popen[str]:
    """Start :data:`SIGTERMED_RUN` with no ``PREFECT_API_URL`` (it starts a temporary server),
    every process of it marked by ``PREFECT_HOME=<home>`` for reaped() to end."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(home)
    return subprocess.Popen(
        [*SIGTERMED_RUN, str(tmp_path / "runs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        start_new_session=True,  # a group reaped() ends
    )  # fmt: skip


def _three_rounds_played(run: subprocess.Popen[str]) -> Path:
    """Wait (bounded) until ``run`` (:data:`SIGTERMED_RUN`) has played 3 rounds; its log."""
    assert run.stdout is not None
    line = ""
    while not line.startswith("new_run_dir="):
        line = run.stdout.readline()
        assert line, "the run printed no new_run_dir= line"
    log = Path(line.strip().removeprefix("new_run_dir=")) / "prisoners_dilemma.jsonl"

    def rounds_done() -> int:
        if not log.is_file():
            return 0
        return sum(isinstance(e, RoundCompleted) for e in read_events(str(log)).events)

    wait_until(lambda: rounds_done() >= 3, "three rounds to end", watching=run)
    return log


def _assert_interrupted_after_three_rounds(log: Path) -> None:
    ended = read_events(str(log)).events[-1]
    assert isinstance(ended, SimulationEnded) and ended.status == "interrupted"
    # The round SIGTERM lands in depends on when it arrives (a live process): a bound.
    assert ended.rounds_played is not None and 3 <= ended.rounds_played < 1000


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)]
)
def test_a_run_interrupted_while_its_temporary_server_starts_stops_the_server(
    signum: int, code: int, fresh_prefect_home: Path, tmp_path: Path
) -> None:
    """SIGTERM or Ctrl-C (SIGINT, which the server's own session does not reach) while the
    temporary server starts: the server is stopped, nothing claimed (was: the server went on)."""
    home = fresh_prefect_home
    run = _started_without_an_api(home, tmp_path)
    with reaped(run, home=home):

        def the_server() -> int | None:
            for child in children_of(run.pid):
                try:
                    command = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
                except OSError:  # gone meanwhile
                    continue
                if command[1:5] == SERVER_START:  # exec'd
                    return child
            return None

        server = wait_until(the_server, "the run to start its server", watching=run)
        server_started = started_at(server)
        assert server_started is not None
        run.send_signal(signum)  # long before it answers: it takes seconds to import
        out, err = run.communicate()
        assert run.returncode == code
        assert started_at(server) != server_started  # that process no longer lives
        assert "new_run_dir=" not in out
        # No run was claimed: no line tells of a log's end (was, for SIGTERM: `glossogen:
        # error: interrupted; the run's log ends with simulation_ended status 'interrupted'`).
        assert err.splitlines()[-1].startswith("No PREFECT_API_URL set: waiting for a temporary")
        assert not (tmp_path / "runs").exists()


CLAIMED_THEN_SIGTERM = """
import os, signal, sys
from glossogen.cli._server import stopped_on_sigterm
from glossogen.launch import RunRequest, claim_run, plan_run

with stopped_on_sigterm("interrupted; the run's log ends with simulation_ended status 'interrupted'"):
    if sys.argv[2] == "claim":
        request = RunRequest(scenario="prisoners_dilemma", model="scripted", provider="scripted",
                             config="knobs_default", runs_dir=sys.argv[1])
        claim_run(plan_run(request), request.runs_dir)
    os.kill(os.getpid(), signal.SIGTERM)
"""
"""A process that claims a run (or not) inside ``stopped_on_sigterm``, then gets SIGTERM."""


@pytest.mark.parametrize(
    ("claim", "said"),
    [
        ("claim", "glossogen: error: interrupted; the run's log ends with simulation_ended "
                  "status 'interrupted'\n"),
        ("none", ""),
    ],
)  # fmt: skip
def test_a_sigterm_says_the_runs_log_ends_once_a_run_was_claimed(
    claim: str, said: str, tmp_path: Path
) -> None:
    """The SIGTERM handler is told of the claim (``run_claimed``), not left to infer it: with no
    temporary server at all (a ``PREFECT_API_URL``), a SIGTERM before the claim says nothing of a
    log (was: the line, though no run was claimed)."""
    done = subprocess.run(
        [sys.executable, "-c", CLAIMED_THEN_SIGTERM, str(tmp_path / "runs"), claim],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (-signal.SIGTERM, said)
    claimed = list((tmp_path / "runs").glob("prisoners_dilemma/*/config.json"))
    assert len(claimed) == (claim == "claim")
