"""Channel noise: what a recipient reads after the channel hits some characters."""

import random

import pytest

from glossogen.engine import apply_noise
from tests.engine._tiny import Tiny, by_agent, knobs, play, sends

pytestmark = pytest.mark.timeout(30)

TEXT = "the quick brown fox jumps"
SEED = "42:1:noise:link:1"
"""The engine's key for the first message of round 1 on ``link`` under seed 42."""

# random.Random(SEED) draws, one per non-space character in order:
#   t .351  h .734  e .884 | q .804  u .411  i .006  c .338  k .717 | b .705  r .925  o .274
#   w .849  n .394 | f .911  o .271  x .968 | j .359  u .050  m .540  p .125  s .716
# Below 0.3 (a hit): i, o (brown), o (fox), u, p.
NOISY = [
    ("mask", "the qu_ck br_wn f_x j_m_s"),
    ("drop", "the quck brwn fx jms"),
]


@pytest.mark.parametrize(("mode", "expected"), NOISY)
def test_a_known_seed_hits_known_characters(mode, expected):
    assert apply_noise(TEXT, 0.3, mode, random.Random(SEED)) == expected


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_level_zero_returns_the_text_and_draws_nothing(mode):
    rng = random.Random(SEED)
    assert apply_noise(TEXT, 0.0, mode, rng) == TEXT
    assert rng.random() == random.Random(SEED).random()


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("mask", "___ _____ _____ ___ _____"), ("drop", "    ")],
)
def test_spaces_are_never_hit(mode, expected):
    # Level 1.0: every non-space character is hit, the four spaces survive.
    assert apply_noise(TEXT, 1.0, mode, random.Random(SEED)) == expected


def test_the_log_keeps_both_texts_and_the_charge_is_on_the_composed_text():
    scenario = Tiny(
        knobs(channel_noise_level=0.3),
        by_agent(a=sends(("link", TEXT), ("chat", TEXT))),
        budget=150,
    )
    played = play(scenario)
    link, chat = played.of("message_sent")
    # The first message of round 1 is message 1 on link: the same draws as SEED above.
    assert (link.text, link.delivered_text) == (TEXT, "the qu_ck br_wn f_x j_m_s")
    # Composed: 25 characters; delivered: also 25 (masking keeps length) and charged all 25.
    assert (link.chars, link.charged_chars, link.budget_used_chars) == (25, 25, 25)
    # Free channels are noisy too (message 2 on chat, its own draws), and charge nothing.
    assert (chat.text, chat.delivered_text, chat.charged_chars) == (
        TEXT,
        "t_e quic_ brown fox j_mp_",
        0,
    )


def test_dropped_characters_are_still_paid_for():
    scenario = Tiny(
        knobs(channel_noise_level=0.3, noise_replacement_mode="drop"),
        by_agent(a=sends(("link", TEXT))),
        budget=150,
    )
    (sent,) = play(scenario).of("message_sent")
    # 20 characters arrive (25 minus 5 hits), 25 are charged.
    assert (sent.delivered_text, sent.chars, sent.charged_chars) == ("the quck brwn fx jms", 25, 25)


def test_the_recipient_reads_the_delivered_text():
    scenario = Tiny(knobs(channel_noise_level=0.3), by_agent(a=sends(("link", TEXT))))
    play(scenario)
    heard = {m["text"] for v in scenario.views if v.agent_id == "b" for m in v.received_messages()}
    assert heard == {"the qu_ck br_wn f_x j_m_s"}
