"""Replay of runs whose hosted seats had model calls in flight at the same time.

Over HTTP, which answer came back first was the network's doing; the replay takes each answer
up where the recorded run took it up (the seats step in the recorded order). The committed tape
(both seats of a prisoners' dilemma over the stub, ``tests/replay/record_tapes.py``) replays
identically every time; a fresh recording does not yet always (see README's replay limits).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.eventlog import RunView
from glossogen.replay import ReplayRequest, replay_run
from tests.replay.record_tapes import BOTH_HOSTED, OVERLAP_TAPES, SECOND

TRIES = 8


def _overlapping(view: RunView) -> int:
    """How many times a seat sent a request while another seat's was still unanswered."""
    open_by: dict[str, int] = {}
    overlaps = 0
    for event in view.events:
        if event.event_type == "model_request_sent":
            overlaps += any(n for seat, n in open_by.items() if seat != event.agent_id)
            open_by[event.agent_id] = open_by.get(event.agent_id, 0) + 1
        elif event.event_type in ("llm_response_received", "model_request_abandoned"):
            open_by[event.agent_id] -= 1
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
