"""A replay's game time moves where the record's moved: sleeps pass between the same events."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.eventlog import (
    JudgeCalled,
    LlmResponseReceived,
    RoundEnded,
    RunView,
    ToolResultReceived,
)
from glossogen.replay import ReplayRequest, replay_run
from tests.replay.test_replay import _nowhere

RACES = Path(__file__).parent / "races" / "spot_the_difference"
ANSWERED_BEFORE_THE_LAST_RULING = RACES / "1796421700"
"""A spot_the_difference recorded over the stub servers (viewer_left_a and the judge over HTTP,
the others scripted), the one of 20 fresh recordings that replayed with a divergence after the
fix of tests/replay/test_request_in_preparation.py (``first divergence: viewer_right_a call 10
(round 2)``, then ``replay stalled after event 243, the record's last``). In round 2 the
answer to the last ruling's judge request came back over HTTP, releasing the game clock, before
its ruling was logged: viewer_right_a's and viewer_right_b's scripted latency (they had built
call 11 from their submit results) passed there (game time 58.5 s to 62.5 s, the timestamps
show it) and both answers to call 11 were taken up before the last ``judge_called``. The replay
held the judge's request in a task the sequencer kept to the recorded order, so the clock stayed
held, the latency could not pass, and the ruling was logged first."""
CUT_OFF_BEFORE_THE_LATENCY_PASSED = RACES / "1796500003"
"""One of 40 fresh recordings (h47fix34's first batch, the other 39 identical): round 2 was
settled by the last ruling at 18.0 s, viewer_right_a's and viewer_right_b's scripted latency
for the calls built from their submit results not yet passed (the round's end cut both off).
The replay passed both latencies first and ended the round at 22.0 s: ``first divergence: event
190 (round_ended, round 2): elapsed_seconds differs``."""


@pytest.mark.parametrize(
    ("run_dir", "calls", "events", "elapsed"),
    [
        (ANSWERED_BEFORE_THE_LAST_RULING, 60, 242, [22.0, 22.0]),
        (CUT_OFF_BEFORE_THE_LATENCY_PASSED, 59, 240, [22.0, 18.0]),
    ],
    ids=["answered-before-the-last-ruling", "cut-off-before-the-latency-passed"],
)
def test_a_sleep_passes_between_the_events_the_record_shows(
    run_dir: Path,
    calls: int,
    events: int,
    elapsed: list[float],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _nowhere(monkeypatch)
    recorded = RunView.load(f"{run_dir}/spot_the_difference.jsonl")
    ends = [e for e in recorded.events if isinstance(e, RoundEnded) and e.phase == "main"]
    assert [e.elapsed_seconds for e in ends] == elapsed
    report = replay_run(ReplayRequest(run_dir=str(run_dir), runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert (report.calls, report.events, report.identical) == (calls, events, True)
    replayed = RunView.load(f"{report.replay_url}/spot_the_difference.jsonl")
    replayed_ends = [e for e in replayed.events if isinstance(e, RoundEnded) and e.phase == "main"]
    assert [e.elapsed_seconds for e in replayed_ends] == elapsed


def test_the_answers_taken_up_before_the_last_ruling_are_the_records() -> None:
    recorded = RunView.load(f"{ANSWERED_BEFORE_THE_LAST_RULING}/spot_the_difference.jsonl")
    events = recorded.events
    last_ruling = max(
        i for i, e in enumerate(events) if isinstance(e, JudgeCalled) and e.round_number == 2
    )
    submit = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, ToolResultReceived)
        and e.agent_id == "viewer_right_a"
        and e.tool_name == "submit_differences"
        and e.round_number == 2
    )
    answer = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, LlmResponseReceived) and e.agent_id == "viewer_right_a" and e.cycle == 11
    )
    assert submit < answer < last_ruling
    first = events[0].timestamp
    assert [(events[i].timestamp - first).total_seconds() for i in (submit, answer)] == [58.5, 62.5]
