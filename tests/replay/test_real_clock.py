"""A run played on the real clock (a hosted seat, no virtual-clock setting), replayed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.eventlog import RoundEnded, RunView
from glossogen.launch import VIRTUAL_CLOCK_SETTING
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.played_runs import play_run
from tests.fixtures.winning_players import pd_player, veyru_player
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


QUIET = ["max_round_duration_seconds=1", "postmortem_enabled=false", "postmortem_after_swap=false"]
"""veyru's main phase cut by its time limit (1 s) before any seat's first answer (a scripted
seat answers after 2 s): no seat logs anything in it."""


@pytest.mark.parametrize("clock", ["real", "virtual"])
def test_a_phase_its_time_limit_ended_before_any_seat_logged_anything_replays_identically(
    clock: str,
    model_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the real clock (its judge hosted) it diverged: ``first divergence: event 8
    (agent_history_appended, field_observer, round 1): the replay logged agent_run_cycle_failed``
    (a seat's call past its last answer on the tape failed instead of waiting to be cut off)."""
    if clock == "real":
        monkeypatch.delenv(VIRTUAL_CLOCK_SETTING)
        monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
        model_stub.responder = veyru_player
        run_dir = asyncio.run(play_over_http(tmp_path, "veyru", HTTP_RUNS["veyru"] + QUIET))
        monkeypatch.delenv("OPENAI_API_KEY")
    else:
        run_dir = play_run(str(tmp_path), "veyru", rounds=2, overrides=tuple(QUIET)).url
    recorded = RunView.load(f"{run_dir}/veyru.jsonl")
    assert recorded.started is not None and recorded.started.clock == clock
    rounds = [
        [e.event_type for e in recorded.events if e.round_number == n and e.phase == "main"]
        for n in (1, 2)
    ]
    rounds[1].remove("simulation_ended")
    assert rounds == [
        ["round_started", "veyru_case_started", "injection_delivered", "injection_delivered",
         "agent_history_appended", "agent_history_appended", "round_ended",
         "round_result_recorded", "round_completed"]
    ] * 2  # fmt: skip
    assert [e.trigger for e in recorded.events if isinstance(e, RoundEnded)] == ["timeout"] * 2
    report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert (report.calls, report.events, report.identical) == (0, 22, True)
