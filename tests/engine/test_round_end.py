"""How the main phase ends: settled, all idle, timeout, turn limit, failing model.

Every scripted model call sleeps ``LATENCY`` = 1 s on the virtual clock, and the two seats' calls
add up: while both agents are thinking, each round of both their calls costs 2 s of game time.
"""

import pytest

from glossogen.scenario import ScriptedMove
from tests.engine._tiny import LATENCY, Tiny, by_agent, finish, knobs, play

pytestmark = pytest.mark.timeout(30)


def declare_once(view):
    return ScriptedMove.finish() if view.tool_results("declare") else ScriptedMove.call("declare")


def chatter(view):
    """After one's own sent message wait, else send; ``b`` opens by waiting."""
    last = view.observations[-1]
    if view.agent_id == "b" and len(view.observations) == 1:
        return ScriptedMove.call("wait_for_notifications")
    if (
        last.kind == "tool_result"
        and last.tool_name == "send_message"
        and last.data["status"] == "sent"
    ):
        return ScriptedMove.call("wait_for_notifications")
    n = len(view.tool_results("send_message"))
    return ScriptedMove.call("send_message", channel_id="chat", text=f"{view.agent_id}{n}")


def boom(view):
    raise RuntimeError("provider down")


def test_settled_ends_the_main_phase():
    scenario = Tiny(knobs(), by_agent(a=declare_once), settle_when=lambda s: "a" in s.declared)
    played = play(scenario)
    (ended,) = played.of("round_ended")
    # a's call (1 s) and b's call (1 s) add up; a's declare runs at 2 s and settles the round.
    assert (ended.trigger, ended.elapsed_seconds) == ("settled", 2.0)
    assert played.summaries[0].trigger == "settled"
    assert [v.success for v in played.summaries[0].verdicts] == [True]


def test_agents_that_stop_end_the_phase_all_idle_after_the_quiet_floor():
    played = play(Tiny(knobs(idle_floor_seconds=0.5), finish))
    (ended,) = played.of("round_ended")
    # Two 1 s calls, then the 0.5 s quiet floor: 2 * 1 + 0.5 = 2.5 s.
    assert (ended.trigger, ended.elapsed_seconds) == ("all_idle", 2 * LATENCY + 0.5)
    assert played.summaries[0].messages == 0


# Chatter: a sends, b waits; then they alternate, one message per 2 s of game time
# (a0 at 2 s, b0 at 4, a1 at 6, b1 at 8, a2 at 10, ...). The limit is checked when a pair of
# calls ends (every 2 s); the phase ends at the first such check >= the limit, and the calls
# ending there never act. So elapsed = 2 * ceil(limit / 2) and messages = elapsed / 2 - 1.
TIMEOUTS = [
    (8, 8.0, 3),
    (9, 10.0, 4),
    (10, 10.0, 4),
    (11, 12.0, 5),
]


@pytest.mark.parametrize(("limit", "elapsed", "messages"), TIMEOUTS)
def test_endless_chatter_ends_at_the_first_check_past_the_time_limit(limit, elapsed, messages):
    played = play(Tiny(knobs(max_round_duration_seconds=limit), chatter))
    (ended,) = played.of("round_ended")
    assert ended.trigger == "timeout"
    assert ended.elapsed_seconds >= limit
    assert ended.elapsed_seconds == elapsed
    assert len(played.of("message_sent")) == played.summaries[0].messages == messages


def test_chatter_cut_by_a_timeout_plays_on_next_round():
    played = play(Tiny(knobs(max_round_duration_seconds=10), chatter), rounds=2)
    texts = [(e.round_number, e.text) for e in played.of("message_sent")]
    assert texts == [(r, t) for r in (1, 2) for t in ("a0", "b0", "a1", "b1")]
    assert [s.trigger for s in played.summaries] == ["timeout", "timeout"]
    assert played.of("agent_run_cycle_failed") == []


def test_max_agent_turns_caps_model_requests_per_agent():
    played = play(Tiny(knobs(max_round_duration_seconds=100), chatter), rounds=2, max_agent_turns=3)
    assert played.per_agent("llm_response_received") == {"a": 3, "b": 3}
    limits = [
        (e.round_number, e.agent_id, e.max_agent_turns)
        for e in played.of("agent_turn_limit_reached")
    ]
    assert limits == [(1, "a", 3), (1, "b", 3)]
    # a: send, wait, send; b: wait, send, wait -> a0, b0, a1 by 6 s (three pairs of calls).
    assert [e.text for e in played.of("message_sent")] == ["a0", "b0", "a1"]
    assert [(e.trigger, e.elapsed_seconds) for e in played.of("round_ended")] == [
        ("turn_limit", 6.0),
        ("turn_limit", 0.0),  # nobody left to play round 2
    ]
    assert played.out_after_round == [True, True]


def test_a_model_failing_every_call_takes_each_agent_out_after_three_failures():
    played = play(Tiny(knobs(postmortem_enabled=True), boom), rounds=3)
    attempts = {
        agent: [
            (e.attempts, e.error_kind, e.error)
            for e in played.of("agent_run_cycle_failed", agent_id=agent)
        ]
        for agent in ("a", "b")
    }
    # Three failed cycles each, and an agent that is out is never called again.
    assert attempts == {
        agent: [(n, "internal", "RuntimeError: provider down") for n in (1, 2, 3)] for agent in "ab"
    }
    assert played.engine.every_agent_out
    assert played.of("llm_response_received") == []
    assert played.summaries[-1].trigger == "agents_failed"  # nobody left in the last round


def test_a_model_failing_every_call_ends_the_first_round_with_every_agent_out():
    played = play(Tiny(knobs(), boom), rounds=1)
    assert played.per_agent("agent_run_cycle_failed") == {"a": 3, "b": 3}
    assert played.out_after_round == [True]
    assert played.summaries[0].trigger == "agents_failed"


def test_an_agent_out_of_turns_with_a_briefing_queued_lets_the_next_phase_end_all_idle():
    # An agent out of turns never drains its queue; if that kept it "busy", a phase on a
    # virtual clock would wait for its time limit (nobody else moves time). Found on a 24-round
    # veyru run. Each may make 2 model requests in the whole run: a declares on and on, so its
    # third request is refused in round 1; b stops at once, one request a round.
    policy = by_agent(a=lambda view: ScriptedMove.call("declare"), b=finish)
    played = play(Tiny(knobs(idle_floor_seconds=0.5), policy), rounds=2, max_agent_turns=2)
    assert [(e.round_number, e.agent_id) for e in played.of("agent_turn_limit_reached")] == [
        (1, "a")
    ]
    # Round 2 briefs a all the same: the briefing waits in the queue of an agent that is out.
    assert [e.text for e in played.of("injection_delivered", agent_id="a")] == [
        "Round 1 begins.",
        "Round 2 begins.",
    ]
    assert played.per_agent("llm_response_received") == {"a": 2, "b": 2}
    # Round 1: both call (2 s), a calls again (1 s), then the 0.5 s floor. Round 2: b's one
    # call and the floor, 1.5 s, not the 60 s time limit that a busy a would have waited for.
    assert [(e.round_number, e.trigger, e.elapsed_seconds) for e in played.of("round_ended")] == [
        (1, "all_idle", 3 * LATENCY + 0.5),
        (2, "all_idle", LATENCY + 0.5),
    ]
    assert played.out_after_round == [False, False]
    # a ran out of turns before either round settled: each round is void for the cap, never
    # scored on what a did not do.
    assert [(e.round_number, e.success, e.void, e.reason) for e in played.of("round_result_recorded")] == [
        (1, False, True, "void (turn_limit): declared: ['a', 'a']"),
        (2, False, True, "void (turn_limit): declared: []"),
    ]  # fmt: skip
    assert [s.trigger for s in played.summaries] == ["turn_limit", "turn_limit"]


def test_a_round_that_settled_before_a_seat_ran_out_of_turns_is_scored():
    # a declares with its second (last) request, which settles the round: the round was played
    # to its end, so it is scored though a is out of turns when it ends.
    policy = by_agent(a=lambda view: ScriptedMove.call("declare"), b=finish)
    scenario = Tiny(knobs(idle_floor_seconds=0.5), policy, settle_when=lambda s: bool(s.declared))
    played = play(scenario, rounds=1, max_agent_turns=1)
    (recorded,) = played.of("round_result_recorded")
    assert (recorded.success, recorded.void, recorded.reason) == (True, False, "declared: ['a']")
    assert [s.trigger for s in played.summaries] == ["settled"]
