"""A scripted seat's request built from its tool's result, then cut off by the round's end."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.eventlog import LlmResponseReceived, RoundEnded, RunView, ToolResultReceived
from glossogen.replay import ReplayRequest, replay_run
from tests.replay.test_replay import _nowhere

SPOT_RACE = Path(__file__).parent / "races" / "spot_the_difference" / "1796421391"
"""A spot_the_difference recorded over the stub servers (viewer_left_a and the judge over HTTP,
the others scripted), one of 8 fresh recordings that replayed with a divergence before this
was fixed (``first divergence: viewer_right_a call 11 (round 2)``). In round 2 viewer_right_a's
submit returned (its result logged as its next request, call 11, was built) before the last
ruling came back and settled the round: the round's end cut call 11 off before its answer
came, so the log holds no call 11, and the seat's history keeps that request as pydantic-ai
had prepared it for the model (with the seat's instructions). The replay held the seat's
steps after its result until the record's next event was its own, so the round's end cut it
off before the request was prepared (no instructions): its postmortem call 12 sent another
history."""


def test_a_request_the_rounds_end_cut_off_is_prepared_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nowhere(monkeypatch)
    recorded = RunView.load(f"{SPOT_RACE}/spot_the_difference.jsonl")
    seat = [
        e
        for e in recorded.events
        if e.round_number == 2 and getattr(e, "agent_id", None) == "viewer_right_a"
    ]
    cycles = [e.cycle for e in seat if isinstance(e, LlmResponseReceived)]
    assert cycles == [8, 9, 10, 12, 13, 14]  # call 11 built, cut off, never answered
    submit = next(e for e in seat if isinstance(e, ToolResultReceived) and e.tool_name ==
                  "submit_differences")  # fmt: skip
    end = next(e for e in recorded.events if isinstance(e, RoundEnded) and e.round_number == 2)
    assert recorded.events.index(submit) < recorded.events.index(end)
    assert not submit.interrupted
    report = replay_run(ReplayRequest(run_dir=str(SPOT_RACE), runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert (report.calls, report.events, report.identical) == (59, 240, True)
