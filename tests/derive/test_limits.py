"""A run's limits are recorded once and read back by every path that continues or derives it.

The source: an 8-round scripted veyru run launched with ``--max-agent-turns 48`` and
``--run-timeout 86400``. Its agents run out in round 6 (the field observer in round 5, the
stabilization engineer in round 6, which then ends ``turn_limit``), and the run ends
``incomplete`` after 6 rounds; under the default of 200 requests the same run plays all 8.
The kill is made by the log: the run's log is cut right after round 3's ``round_started``
(what a process killed at that moment leaves). Then ``--resume`` without the flag, the path a
Prefect retry takes (the simulate flow entered again with its folder), and ``reconcile`` each
end exactly as the source did, after round 6, where a fall-back to the default would have
played all 8; a fork after round 3 of the resumed run ends the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from flows.reconcile import reconcile
from flows.simulate import resume, simulate
from glossogen.cli import main
from glossogen.derive import DeriveError, ForkRequest, prepare_fork
from glossogen.eventlog import (
    AgentTurnLimitReached,
    RoundEnded,
    RunResumed,
    SimulationEnded,
    SimulationStarted,
    read_events,
)
from glossogen.launch import ResumeRequest, RunRequest, plan_resume, plan_run

ROUNDS = 8
TURNS = 48
TIMEOUT = 86400.0
LIMITED = ("incomplete", 6, 2, [6])
"""The source's outcome under its recorded 48 requests per agent (see ``_outcome``)."""
UNLIMITED = ("completed", ROUNDS, 0, [])
"""The same run's outcome under the default 200."""


def _request(runs: Path, *overrides: str, turns: int = TURNS) -> RunRequest:
    return RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(runs),
        config="knobs_default",
        overrides=[f"round_count={ROUNDS}", *overrides],
        max_agent_turns=turns,
        run_timeout_seconds=TIMEOUT,
    )


def _cut_at_round_3(finished: Path, runs: Path, name: str) -> Path:
    """Copy ``finished`` into ``runs`` with its log cut right after round 3 started."""
    run = runs / "veyru" / name
    shutil.copytree(finished, run)
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    started = next(
        i
        for i, line in enumerate(lines)
        if json.loads(line)["event_type"] == "round_started"
        and json.loads(line)["round_number"] == 3
        and json.loads(line)["phase"] == "main"
    )
    (run / "veyru.jsonl").write_text("".join(lines[: started + 1]))
    (run / ".writer.lock").unlink(missing_ok=True)
    return run


def _outcome(run: Path) -> tuple[str, int, int, list[int]]:
    """(status, rounds played, turn-limit events, rounds that ended on the turn limit)."""
    events = read_events(str(run / "veyru.jsonl")).events
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    limited = [e for e in events if isinstance(e, AgentTurnLimitReached)]
    turn_limit_rounds = [
        e.round_number for e in events if isinstance(e, RoundEnded) and e.trigger == "turn_limit"
    ]
    return ended.status, ended.rounds_played or 0, len(limited), turn_limit_rounds


@pytest.fixture(scope="module")
def source(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("source")
    result = asyncio.run(simulate(_request(runs)))
    assert (result.status, result.rounds_played) == ("incomplete", 6)
    assert result.error == f"every agent reached max_agent_turns {TURNS}"  # the log names the field
    return Path(result.run_url)


def test_the_source_records_every_limit_and_would_play_on_under_the_default(
    prefect_api: str, source: Path, tmp_path: Path
) -> None:
    started = read_events(str(source / "veyru.jsonl")).events[0]
    assert isinstance(started, SimulationStarted)
    assert (started.max_agent_turns, started.run_timeout_seconds) == (TURNS, TIMEOUT)
    assert _outcome(source) == LIMITED
    # The same run under 200 requests per agent: the limit the derived runs used to fall back to.
    free = asyncio.run(simulate(_request(tmp_path, turns=200)))
    assert _outcome(Path(free.run_url)) == UNLIMITED
    assert free.error is None


def test_resume_without_the_flag_keeps_the_recorded_limits(
    prefect_api: str, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _cut_at_round_3(source, tmp_path, source.name)
    with pytest.raises(SystemExit) as exited:  # the command, in this process
        main(["run", "veyru", "--resume", str(run)])
    assert exited.value.code == 1, capsys.readouterr().err  # README: 1, the run ended incomplete
    assert _outcome(run) == LIMITED
    (resumed,) = [
        e for e in read_events(str(run / "veyru.jsonl")).events if isinstance(e, RunResumed)
    ]
    assert (resumed.config_changes, resumed.limit_changes) == ({}, {})


def test_the_prefect_retry_path_keeps_the_limits_of_its_flow_run(
    prefect_api: str, source: Path, tmp_path: Path
) -> None:
    run = _cut_at_round_3(source, tmp_path, source.name)
    # A retry of the crashed flow run enters simulate again with its parameters and gets its
    # cached folder back; the folder's log has begun, so the run resumes in place.
    result = asyncio.run(simulate(plan_run(_request(tmp_path)), run_dir=str(run)))
    assert (result.status, result.run_url) == ("incomplete", str(run))
    assert _outcome(run) == LIMITED


def test_reconcile_resumes_with_the_recorded_limits(
    prefect_api: str, source: Path, tmp_path: Path
) -> None:
    run = _cut_at_round_3(source, tmp_path, source.name)
    log = run / "veyru.jsonl"
    os.utime(log, (0, os.path.getmtime(log) - 3600))  # silent for an hour
    resumed = asyncio.run(reconcile(str(tmp_path), silent_seconds=600, use_deployments=False))
    assert resumed == [f"veyru/{run.name}"]
    assert _outcome(run) == LIMITED


def test_a_fork_after_round_3_of_the_resumed_run_keeps_the_limits(
    prefect_api: str, source: Path, tmp_path: Path
) -> None:
    run = _cut_at_round_3(source, tmp_path / "resumed", source.name)
    asyncio.run(resume(run_dir=str(run)))
    prepared = prepare_fork(ForkRequest("veyru", str(run), 3, str(tmp_path / "forks")))
    started = read_events(prepared.folder.log_url).events[0]
    assert isinstance(started, SimulationStarted)
    assert (started.max_agent_turns, started.run_timeout_seconds) == (TURNS, TIMEOUT)
    assert "limit_changes" not in prepared.lineage
    result = asyncio.run(resume(run_dir=prepared.folder.url))
    assert (result.status, result.rounds_played) == ("incomplete", 6)
    assert _outcome(Path(prepared.folder.url)) == LIMITED


def test_a_fork_s_limit_flags_are_its_explicit_changes(source: Path, tmp_path: Path) -> None:
    prepared = prepare_fork(
        ForkRequest(
            "veyru", str(source), 3, str(tmp_path), max_agent_turns=7000, run_timeout_seconds=60.0
        )
    )
    started = read_events(prepared.folder.log_url).events[0]
    assert isinstance(started, SimulationStarted)
    assert (started.max_agent_turns, started.run_timeout_seconds) == (7000, 60.0)
    assert prepared.lineage["limit_changes"] == {
        "max_agent_turns": {"recorded": TURNS, "now": 7000},
        "run_timeout_seconds": {"recorded": TIMEOUT, "now": 60.0},
    }
    assert json.loads((Path(prepared.folder.url) / "lineage.json").read_text()) == prepared.lineage
    config, _ = plan_resume(ResumeRequest(run_dir=prepared.folder.url))
    assert (config.limits.max_agent_turns, config.limits.run_timeout_seconds) == (7000, 60.0)


def test_a_recorded_run_timeout_is_in_force_on_resume(prefect_api: str, tmp_path: Path) -> None:
    request = _request(tmp_path, "round_count=6").model_copy(update={"run_timeout_seconds": 1e-6})
    first = asyncio.run(simulate(request))
    assert (first.status, first.rounds_played) == ("incomplete", 1)  # past it after round 1
    # The log ends incomplete; cut its ending off, as a crash after round 1 would have left it.
    run = Path(first.run_url)
    log = run / "veyru.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))
    again = asyncio.run(resume(run_dir=str(run)))  # no flag: the recorded 1 µs holds
    assert (again.status, again.rounds_played) == ("incomplete", 2)
    assert again.error == "run timeout: 1e-06 s passed after round 2 of 6"


def test_a_resume_flag_that_differs_from_the_record_is_refused_unless_allowed(
    source: Path, tmp_path: Path
) -> None:
    run = _cut_at_round_3(source, tmp_path, source.name)
    with pytest.raises(DeriveError) as refused:
        plan_resume(ResumeRequest(run_dir=str(run), max_agent_turns=200))
    assert str(refused.value) == (
        "the config differs from the one the run recorded (max_agent_turns 48 -> 200); "
        "pass allow_config_change to resume under the new one"
    )
    config, point = plan_resume(
        ResumeRequest(run_dir=str(run), max_agent_turns=60, allow_config_change=True)
    )
    assert config.limits.max_agent_turns == 60
    assert point.limit_changes == {"max_agent_turns": {"recorded": TURNS, "now": 60}}
    same, _ = plan_resume(ResumeRequest(run_dir=str(run), max_agent_turns=TURNS))
    assert same.limits.max_agent_turns == TURNS
