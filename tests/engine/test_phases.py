"""Verdicts, the postmortem and scheduled events, as the event log shows them."""

import pytest

from glossogen.knobs import ScheduledEvent
from tests.engine._tiny import Tiny, by_agent, knobs, play, sends

pytestmark = pytest.mark.timeout(30)

POLICY = by_agent(a=sends(("chat", "hello"), postmortem=(("postmortem", "lesson"),)))
MARKS = (
    "round_started",
    "round_ended",
    "round_result_recorded",
    "postmortem_started",
    "postmortem_ended",
)


def marks(played, round_number):
    return [t for t in played.types(round_number) if t in MARKS]


def test_verdicts_are_recorded_before_the_postmortem_opens():
    played = play(Tiny(knobs(postmortem_enabled=True), POLICY))
    assert marks(played, 1) == list(MARKS)
    (started,) = played.of("postmortem_started")
    assert (started.channel_id, started.phase) == ("postmortem", "postmortem")


def test_the_postmortem_briefing_carries_the_verdict_and_talk_happens_on_its_channel():
    played = play(Tiny(knobs(postmortem_enabled=True), POLICY))
    briefings = [
        (e.agent_id, e.text) for e in played.of("injection_delivered") if e.phase == "postmortem"
    ]
    text = (
        "Round over. Outcome: team team: failure (declared: []). The postmortem channel is free "
        "of charge: agree on what to keep or change for the next round, then stop."
    )
    assert briefings == [("a", text), ("b", text)]
    sent = [(e.phase, e.channel_id, e.text) for e in played.of("message_sent")]
    assert sent == [("main", "chat", "hello"), ("postmortem", "postmortem", "lesson")]
    (ended,) = played.of("postmortem_ended")
    assert ended.trigger == "all_idle"


def test_postmortem_off_logs_nothing_of_it():
    played = play(Tiny(knobs(postmortem_enabled=False), POLICY), rounds=2)
    assert [e for e in played.events if e.phase == "postmortem"] == []
    assert (
        marks(played, 1)
        == marks(played, 2)
        == ["round_started", "round_ended", "round_result_recorded"]
    )
    assert [e.text for e in played.of("message_sent")] == ["hello", "hello"]


# (postmortem_enabled at start, set_postmortem enabled at round 2) -> postmortem held in rounds 1..3
SWITCHES = [
    (True, False, [True, False, False]),
    (False, True, [False, True, True]),
]


@pytest.mark.parametrize(("initially", "enabled", "held"), SWITCHES)
def test_set_postmortem_at_round_two_switches_the_postmortem_from_round_two(
    initially, enabled, held
):
    event = ScheduledEvent(kind="set_postmortem", round=2, enabled=enabled)
    scenario = Tiny(
        knobs(round_count=3, postmortem_enabled=initially, scheduled_events=[event]), POLICY
    )
    played = play(scenario, rounds=3)
    assert [("postmortem_started" in played.types(r)) for r in (1, 2, 3)] == held
    (fired,) = played.of("scheduled_event_fired")
    assert (fired.round_number, fired.kind) == (2, "set_postmortem")
    assert fired.detail == {"kind": "set_postmortem", "round": 2, "enabled": enabled}
    # It fires at the round boundary, before the round opens.
    assert played.types(2)[:2] == ["scheduled_event_fired", "round_started"]


def test_a_scheduled_swap_moves_one_seat_at_the_round_boundary_in_declared_order():
    events = [
        ScheduledEvent(
            kind="swap_agent", round=2, agent_id="a", model="script-2", provider="scripted"
        ),
        ScheduledEvent(kind="set_postmortem", round=2, enabled=False),
    ]
    scenario = Tiny(knobs(round_count=2, postmortem_enabled=True, scheduled_events=events), POLICY)
    played = play(scenario, rounds=2)
    assert [(e.round_number, e.kind) for e in played.of("scheduled_event_fired")] == [
        (2, "swap_agent"),
        (2, "set_postmortem"),
    ]
    (swap,) = played.of("agent_swapped_mid_run")
    assert (swap.agent_id, swap.old_model, swap.model, swap.provider) == (
        "a",
        "scripted",
        "script-2",
        "scripted",
    )
    models = {(e.round_number, e.agent_id): e.model for e in played.of("llm_response_received")}
    assert models[(1, "a")] == "scripted" and models[(2, "a")] == "script-2"
    assert models[(2, "b")] == "scripted"
