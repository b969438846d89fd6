"""A request in flight when its process is killed (``kill -9``) is in the log: logged as sent
before it went out, and marked abandoned, cost unknown, by the resume.

The killed process is a real ``glossogen run`` over real HTTP to the stub model server (as
Anthropic), which holds both players' first requests: once both are at the stub (and so, by
the write-ahead rule, both ``model_request_sent`` events are in the log), the test SIGKILLs it.
The stub then sees both clients leave and answers nothing. ``glossogen run --resume`` (the CLI,
in this process) plays the round again with the stub answering.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import (
    ModelRequestAbandoned,
    ModelRequestSent,
    RunResumed,
    RunView,
    SimulationEnded,
    read_events,
)
from glossogen.storage import RunFolder
from glossogen.verify import verify_run
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.polling import wait_until
from tests.fixtures.processes import reaped
from tests.providers.test_wire_formats import pd_player

MODEL = "claude-sonnet-4-6"
ARGS = ["--model", MODEL, "--provider", "anthropic", "--config", "knobs_default",
        "round_count=1", "idle_floor_seconds=0.05", "postmortem_enabled=false"]  # fmt: skip
KILLED = "no answer: the process that sent it was killed before it answered; its cost is unknown"


def _sent(log: Path) -> list[ModelRequestSent]:
    if not log.exists():
        return []
    return [e for e in read_events(str(log)).events if isinstance(e, ModelRequestSent)]


def test_a_request_in_flight_at_a_kill_is_marked_cost_unknown_on_resume(
    prefect_api: str,
    model_stub: StubModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.hold_until_in_flight = math.inf  # nothing is answered until the test says so
    child = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "run", "prisoners_dilemma",
         "--runs-dir", str(tmp_path), *ARGS],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group reaped() ends
    )  # fmt: skip
    with reaped(child):
        assert child.stdout is not None
        run_dir = ""
        for line in child.stdout:
            if line.startswith("new_run_dir="):
                run_dir = line.strip().removeprefix("new_run_dir=")
                break
        assert run_dir
        log = Path(run_dir) / "prisoners_dilemma.jsonl"
        model_stub.wait_in_flight(2)
        # Logged before any byte went out: both are in the log while the stub holds them.
        wait_until(lambda: len(_sent(log)) == 2, "both requests logged as sent")
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    wait_until(lambda: model_stub.in_flight == 0, "the killed process's requests to leave")
    assert model_stub.served_usd(MODEL, "anthropic") == []  # the dead process was answered nothing
    sent = _sent(log)
    assert sorted((e.agent_id, e.call, e.round_number, e.model, e.provider) for e in sent) == [
        ("player_a", 1, 1, MODEL, "anthropic"),
        ("player_b", 1, 1, MODEL, "anthropic"),
    ]
    cut = read_events(str(log)).events
    assert not [e for e in cut if isinstance(e, ModelRequestAbandoned | SimulationEnded)]

    model_stub.end_holds()
    model_stub.responder = pd_player
    with pytest.raises(SystemExit) as exited:
        main(["run", "prisoners_dilemma", "--resume", run_dir, *ARGS])
    assert exited.value.code == 0

    events = read_events(str(log)).events
    resumed = next(i for i, e in enumerate(events) if isinstance(e, RunResumed))
    # The resume's first act: each killed request logged once, naming it, cost unknown.
    first = events[resumed + 1 : resumed + 3]
    assert [(type(e), e.request_id, e.agent_id, e.sent_in_round, e.answered, e.cost_usd, e.error)
            for e in first if isinstance(e, ModelRequestAbandoned)] == [
        (ModelRequestAbandoned, s.request_id, s.agent_id, 1, False, None, KILLED) for s in sent
    ]  # fmt: skip
    unknown = [e for e in events if isinstance(e, ModelRequestAbandoned) and e.cost_usd is None]
    assert unknown == first  # no other request's cost is unknown
    ended = events[-1]
    assert isinstance(ended, SimulationEnded) and ended.status == "completed"
    # The total is unknown; its note gives the lower bound: what the stub served the resume.
    served = sum(model_stub.served_usd(MODEL, "anthropic"))
    assert served > 0
    assert ended.total_cost_usd is None
    assert ended.cost_note == (
        "2 model request(s) never answered (abandoned at a phase end, or in flight when a process "
        f"was killed): what they cost is unknown; the calls priced sum to {served:.6f} USD, a "
        "lower bound"
    )
    # Every request sent (the killed process's and the resume's) is settled exactly once.
    assert len(_sent(log)) == 2 + len(model_stub.served_usd(MODEL, "anthropic"))
    assert verify_run(RunFolder.at(run_dir)).broken == []
    # The tape keeps the killed requests' fingerprints: their sends are in a round the resume
    # played again (not counted), their abandonment is counted. Without them the whole tape
    # read as recorded before fingerprints, and replay skipped its request check.
    tape = RunView.load(str(log)).tape
    killed_calls = [c for calls in tape.calls.values() for c in calls if c.error == KILLED]
    assert sorted(c.request_sha256 or "" for c in killed_calls) == sorted(
        s.request_sha256 or "" for s in sent
    )
    assert all(s.request_sha256 for s in sent) and tape.fingerprinted
