"""A run played on the real clock (a hosted seat, no virtual-clock setting), replayed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.eventlog import RoundEnded, RunView
from glossogen.launch import VIRTUAL_CLOCK_SETTING
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import pd_player
from tests.replay.record_tapes import HTTP_RUNS, play_over_http


@pytest.mark.parametrize(
    ("limit", "trigger"), [([], "settled"), (["max_round_duration_seconds=1"], "timeout")]
)
def test_a_run_over_http_on_the_real_clock_replays_identically(
    limit: list[str],
    trigger: str,
    model_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(VIRTUAL_CLOCK_SETTING)  # the real clock, as a run of a real provider
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    model_stub.responder = pd_player
    overrides = HTTP_RUNS["prisoners_dilemma"] + limit
    run_dir = asyncio.run(play_over_http(tmp_path, "prisoners_dilemma", overrides))
    recorded = RunView.load(f"{run_dir}/prisoners_dilemma.jsonl")
    ends = [e.trigger for e in recorded.events if isinstance(e, RoundEnded)]
    assert ends == [trigger, trigger]
    assert recorded.started is not None and recorded.started.clock == "real"
    monkeypatch.delenv("OPENAI_API_KEY")
    report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert report.identical


RACE = Path(__file__).parent / "races" / "prisoners_dilemma" / "1796401733"
"""A prisoners' dilemma with both seats over the stub servers, recorded on a real clock ten
times faster (1 of 14 such recordings): player_b's answer to its call 3 came in the very moment
round 1's main phase settled, and the record logs it ``llm_response_received`` as the phase's end
cut player_b off, after player_a's closed tool call and before ``round_ended``."""


def test_an_answer_that_came_as_its_phase_ended_is_taken_up_as_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # nowhere to send anything
    recorded = RunView.load(f"{RACE}/prisoners_dilemma.jsonl")
    cut = [(e.event_type, getattr(e, "agent_id", None)) for e in recorded.events[25:30]]
    assert cut == [
        ("tool_result_received", "player_a"),  # the phase's end closing player_a's lock_in
        ("llm_response_received", "player_b"),  # the answer that had come: taken up, not left
        ("agent_history_appended", "player_a"),
        ("agent_history_appended", "player_b"),
        ("round_ended", None),
    ]
    assert recorded.events[26].timestamp < recorded.events[29].timestamp  # before the end
    report = replay_run(ReplayRequest(run_dir=str(RACE), runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert (report.calls, report.events, report.identical) == (18, 102, True)
