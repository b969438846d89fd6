"""Replay of runs whose hosted seats had model calls in flight at the same time.

Over HTTP, which answer came back first was the network's doing; the replay takes each answer
up where the recorded run took it up (the seats step in the recorded order). The committed tape
(both seats of a prisoners' dilemma over the stub, ``tests/replay/record_tapes.py``) replays
identically every time, and so does each of a batch of fresh recordings.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.eventlog import LlmResponseReceived, ModelRequestAbandoned, ModelRequestSent, RunView
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.model_stubs import StubModelServer
from tests.replay.record_tapes import BOTH_HOSTED, OVERLAP_TAPES, SECOND, paired, play_over_http

TRIES = 8
FRESH = 8
"""Fresh recordings over the stub servers, each replayed: which answer came back first, where a
phase end caught a seat's next request, which requests it cut off, differ from one to the next."""


def _overlapping(view: RunView) -> int:
    """How many times a seat sent a request while another seat's was still unanswered."""
    open_by: dict[str, int] = {}
    overlaps = 0
    for event in view.events:
        match event:
            case ModelRequestSent(agent_id=seat):
                overlaps += any(n for other, n in open_by.items() if other != seat)
                open_by[seat] = open_by.get(seat, 0) + 1
            case LlmResponseReceived(agent_id=seat) | ModelRequestAbandoned(agent_id=seat):
                open_by[seat] -= 1
    return overlaps


@pytest.mark.parametrize("scenario", sorted(BOTH_HOSTED))
def test_a_committed_tape_whose_hosted_seats_overlap_replays_identically(
    scenario: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # nowhere to send anything
    (run_dir,) = (OVERLAP_TAPES / scenario).iterdir()
    recorded = RunView.load(f"{run_dir}/{scenario}.jsonl")
    assert (_overlapping(recorded), recorded.tape.count) == (9, 17)
    reports = [
        replay_run(ReplayRequest(run_dir=str(run_dir), runs_dir=str(tmp_path / f"replay-{n}")))
        for n in range(TRIES)
    ]
    assert [r.identical for r in reports] == [True] * TRIES
    assert {r.source_run_id for r in reports} == {f"{scenario}/{SECOND}"}
    assert {r.replayed_cost_usd for r in reports} == {recorded.spend.total_cost_usd}


def test_fresh_recordings_whose_hosted_seats_overlap_each_replay_identically(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fresh recording interleaves differently (the network's doing); each replays exactly.

    Where the record's phase end came between a seat's answers and its next request, and which
    requests it cut off (logged ``model_request_abandoned`` when their answers came), are taken
    up at the same places in the replay.
    """
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    (overrides,) = BOTH_HOSTED.values()
    run_dirs = []
    for n in range(FRESH):
        model_stub.responder, model_stub.hold_until_in_flight = paired(model_stub), 2
        run_dirs.append(
            asyncio.run(play_over_http(tmp_path / f"rec-{n}", "prisoners_dilemma", overrides))
        )
    served = len(model_stub.requests)
    monkeypatch.delenv("OPENAI_API_KEY")  # no key: nothing may be sent
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # and nowhere to send it
    recorded = [RunView.load(f"{d}/prisoners_dilemma.jsonl") for d in run_dirs]
    assert all(_overlapping(view) > 0 for view in recorded)
    reports = [
        replay_run(ReplayRequest(run_dir=d, runs_dir=str(tmp_path / f"replay-{n}")))
        for n, d in enumerate(run_dirs)
    ]
    assert len(model_stub.requests) == served
    diverged = [
        (n, r.divergence and r.divergence.line(), r.event_divergence, r.stalled)
        for n, r in enumerate(reports)
        if not r.identical
    ]
    assert diverged == []
    assert [r.replayed_cost_usd for r in reports] == [v.spend.total_cost_usd for v in recorded]
