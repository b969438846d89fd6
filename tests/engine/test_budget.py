"""The per-round character budget: the meter alone, then as agents feel it through the engine."""

import pytest

from glossogen.engine import WARNING_THRESHOLDS, BudgetMeter
from tests.engine._tiny import Tiny, by_agent, knobs, play, sends

pytestmark = pytest.mark.timeout(30)


def test_warning_thresholds_are_half_four_fifths_and_all():
    assert WARNING_THRESHOLDS == (0.5, 0.8, 1.0)


# Budget 150: the marks sit at 0.5*150 = 75, 0.8*150 = 120 and 1.0*150 = 150 characters.
# Each row: characters charged, then (thresholds newly crossed, used so far, exceeded).
METER_STEPS = [
    (60, [], 60, False),  # 60 < 75: no mark
    (20, [0.5], 80, False),  # 80 >= 75: half mark only (80 < 120)
    (0, [], 80, False),  # nothing new: a mark never fires twice
    (80, [0.8, 1.0], 160, True),  # 160 >= 120 and >= 150: both marks, ascending
    (10, [], 170, True),  # every mark already fired this round
]


def test_meter_crosses_each_mark_once_in_ascending_order():
    meter = BudgetMeter(150)
    seen = [(meter.charge(n), meter.used_chars, meter.exceeded) for n, *_ in METER_STEPS]
    assert seen == [tuple(step[1:]) for step in METER_STEPS]


@pytest.mark.parametrize(
    ("charges", "exceeded"),
    [
        ([150], False),  # used == budget: spent, not overspent
        ([150, 1], True),  # 151 > 150
        ([149], False),
        ([151], True),
    ],
)
def test_exceeded_only_when_more_than_the_budget_was_charged(charges, exceeded):
    meter = BudgetMeter(150)
    for n in charges:
        meter.charge(n)
    assert meter.exceeded is exceeded


def test_hitting_the_budget_exactly_fires_the_full_mark():
    meter = BudgetMeter(150)
    assert meter.charge(150) == [0.5, 0.8, 1.0]


# Agent a sends 60, 20 chars on the metered link, 10 on the free chat, then 80 on the link.
SCRIPT = (("link", "m" * 60), ("link", "m" * 20), ("chat", "f" * 10), ("link", "m" * 80))


def budget_run(rounds=1, budget=150):
    scenario = Tiny(knobs(), by_agent(a=sends(*SCRIPT)), budget=budget)
    return scenario, play(scenario, rounds=rounds)


def test_message_sent_records_the_charge_and_the_running_total():
    _, played = budget_run()
    sent = [
        (e.channel_id, e.chars, e.charged_chars, e.budget_used_chars, e.budget_chars)
        for e in played.of("message_sent")
    ]
    assert sent == [
        ("link", 60, 60, 60, 150),
        ("link", 20, 20, 80, 150),  # 60 + 20
        ("chat", 10, 0, None, None),  # free channel: no charge, no budget fields
        ("link", 80, 80, 160, 150),  # 80 + 80
    ]


def test_the_sender_is_told_what_it_has_used():
    _, played = budget_run()
    replies = [
        {k: v for k, v in r.items() if k != "message_id"}
        for r in played.results("a", "send_message")
    ]
    assert replies == [
        {"status": "sent", "chars": 60, "budget_used_chars": 60, "budget_chars": 150},
        {"status": "sent", "chars": 20, "budget_used_chars": 80, "budget_chars": 150},
        {"status": "sent", "chars": 10},
        {"status": "sent", "chars": 80, "budget_used_chars": 160, "budget_chars": 150},
    ]


def test_warnings_are_logged_in_order_after_the_message_that_crossed_them():
    _, played = budget_run()
    round_1 = [e for e in played.events if e.event_type in ("message_sent", "budget_warning")]
    assert [
        (e.event_type, getattr(e, "threshold", None), getattr(e, "used_chars", None))
        for e in round_1
    ] == [
        ("message_sent", None, None),
        ("message_sent", None, None),
        ("budget_warning", 0.5, 80),
        ("message_sent", None, None),
        ("message_sent", None, None),
        ("budget_warning", 0.8, 160),
        ("budget_warning", 1.0, 160),
    ]


def test_every_member_is_told_of_each_warning():
    _, played = budget_run()
    told = [(e.agent_id, e.text) for e in played.of("world_event_delivered", kind="budget_warning")]
    assert told == [
        ("a", "Budget: 80 of 150 characters used this round (50% mark)."),
        ("b", "Budget: 80 of 150 characters used this round (50% mark)."),
        ("a", "Budget: 160 of 150 characters used this round (80% mark)."),
        ("b", "Budget: 160 of 150 characters used this round (80% mark)."),
        ("a", "Budget: 160 of 150 characters used this round (100% mark)."),
        ("b", "Budget: 160 of 150 characters used this round (100% mark)."),
    ]


def test_the_budget_starts_afresh_each_round_and_each_mark_fires_once_per_round():
    scenario, played = budget_run(rounds=2)
    warnings = [(e.round_number, e.threshold, e.used_chars) for e in played.of("budget_warning")]
    assert warnings == [(r, t, u) for r in (1, 2) for t, u in ((0.5, 80), (0.8, 160), (1.0, 160))]
    first_link = [e.budget_used_chars for e in played.of("message_sent", channel_id="link")]
    assert first_link == [60, 80, 160, 60, 80, 160]
    assert scenario.exceeded == [(1, "link", 160), (2, "link", 160)]


def test_without_a_budget_a_metered_channel_charges_nothing():
    _, played = budget_run(budget=None)
    assert [(e.charged_chars, e.budget_used_chars) for e in played.of("message_sent")] == [
        (0, None)
    ] * 4
    assert played.of("budget_warning") == []


def test_overspending_after_hitting_the_budget_exactly_is_reported_to_the_scenario():
    # 150 chars: every mark fires at used == 150, not yet exceeded; 10 more: 160 > 150.
    scenario = Tiny(knobs(), by_agent(a=sends(("link", "m" * 150), ("link", "m" * 10))), budget=150)
    play(scenario)
    assert scenario.exceeded == [(1, "link", 160)]
