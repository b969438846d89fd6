"""signal_game: the draw, the turn discipline, the verdict, topographic similarity, plays."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest

from glossogen.eventlog import MessageSent, ToolResultReceived
from glossogen.knobs import load_config, resolve_knobs
from glossogen.scenario import ScriptedMove, ScriptedView, scenario_dir
from scenarios.signal_game.events import (
    SignalGameChoiceMade,
    SignalGameRolesAssigned,
    SignalGameTargetRevealed,
)
from scenarios.signal_game.knobs import SignalGameKnobs
from scenarios.signal_game.metrics import edit_distance, topographic
from scenarios.signal_game.scenario import SignalGame, sender_of
from scenarios.signal_game.space import draw_target, hamming
from tests.scenarios._play import Play, Round, call, play, played, preset

# -- the draw and the knobs -------------------------------------------------------------------


def test_distractors_share_exactly_the_overlap_and_labels_are_fresh_per_target():
    rng = random.Random("draw")
    orders = set()
    for _ in range(200):
        t = draw_target(rng, attributes=4, values=4, candidates=8, overlap=2)
        assert len(t.candidates) == 8 and t.target in t.candidates
        assert len({tuple(c) for c in t.candidates}) == 8
        for c in t.candidates:
            if c != t.target:
                assert 4 - hamming(tuple(c), tuple(t.target)) == 2
        orders.add((t.candidates.index(t.target), t.answer))
    assert len({i for i, _ in orders}) == 8  # the target shows up at every position


def test_the_preset_turns_parallel_tool_calls_off_and_sets_the_budget():
    data, _ = load_config("knobs_default", scenario_dir(SignalGame))
    knobs = resolve_knobs(SignalGameKnobs, data, {})
    assert knobs.agent_model_settings.parallel_tool_calls is False
    assert knobs.round_budget_chars == 200 and SignalGame(knobs).budget_chars() == 200


def test_each_seat_is_registered_with_its_first_rounds_role():
    seats = SignalGame(SignalGameKnobs()).agents()
    assert [(a.agent_id, a.role, a.tools) for a in seats] == [
        ("agent_a", "sender", ("choose",)),
        ("agent_b", "receiver", ("choose",)),
    ]


def test_roles_swap_every_n_rounds_and_never_with_zero():
    assert [sender_of(r, 1) for r in (1, 2, 3)] == ["agent_a", "agent_b", "agent_a"]
    assert [sender_of(r, 2) for r in (1, 2, 3, 4, 5)] == [
        "agent_a", "agent_a", "agent_b", "agent_b", "agent_a"
    ]  # fmt: skip
    assert {sender_of(r, 0) for r in range(1, 9)} == {"agent_a"}


# -- topographic similarity -------------------------------------------------------------------


def test_edit_distance():
    assert [edit_distance(a, b) for a, b in [("od", "ol"), ("od", "xyz"), ("", "ab"), ("kitten", "sitting")]] == [1, 3, 2, 3]  # fmt: skip


def test_topographic_similarity_of_a_hand_built_message_set():
    named = [
        ({"hue": "ochre", "form": "disc"}, "od"),
        ({"hue": "ochre", "form": "loop"}, "ol"),
        ({"hue": "rose", "form": "loop"}, "rl"),
        ({"hue": "rose", "form": "disc"}, "xyz"),
    ]
    # pairs 12 13 14 23 24 34: meaning 1 2 1 1 2 1, message 1 2 3 1 3 3; average ranks
    # 2.5 5.5 2.5 2.5 5.5 2.5 and 1.5 3 5 1.5 5 5; rho = 3 / sqrt(12 * 15) = 1 / sqrt(20)
    assert topographic(named) == pytest.approx(1 / math.sqrt(20), abs=1e-12)
    compositional = [(m, "".join(v[0] for v in m.values())) for m, _ in named]
    assert topographic(compositional) == pytest.approx(1.0)
    assert topographic(named[:2]) is None  # one pair: undefined


# -- the rules, one round at a time -----------------------------------------------------------


def _round(**knobs: Any) -> tuple[SignalGame, Round]:
    """Round 1 of a signal game started with ``knobs``: agent_a sends, agent_b receives."""
    scenario = SignalGame(SignalGameKnobs(**knobs))
    ctx = Round()
    scenario.start_round(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    return scenario, ctx


def _play_target(scenario: SignalGame, ctx: Round, right: bool) -> dict[str, Any]:
    """The sender's message on link, then the receiver's choice, right or wrong."""
    assert scenario.refuse_message(ctx, "agent_a", "link", "a word") is None  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    target = scenario.targets[scenario.current - 1]
    label = target.answer if right else next(x for x in target.labels if x != target.answer)
    return call(scenario, ctx, "agent_b", label=label)  # type: ignore[no-any-return]  # a tool returns the dict it built


@pytest.mark.parametrize(
    ("rights", "verdict"),
    [
        ([True, True, True, True, False], (True, "4 of 5 targets chosen correctly")),  # 4 >= 0.8*5
        ([False, True, True, True, False], (False, "3 of 5 targets chosen correctly")),
        ([True] * 5, (True, "5 of 5 targets chosen correctly")),
    ],
)
def test_the_round_is_won_from_pass_share_of_the_targets(rights, verdict):
    scenario, ctx = _round(pass_share=0.8, targets_per_round=5)
    replies = [_play_target(scenario, ctx, right) for right in rights]
    assert [r["correct"] for r in replies] == rights
    assert replies[-1] == {"status": "chosen", "correct": rights[-1], "round_over": True}
    assert scenario.is_settled() is True
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.team_id, v.success, v.reason) == ("pair", *verdict)
    assert [(e.target, e.correct) for e in ctx.events if isinstance(e, SignalGameChoiceMade)] == [
        (n, right) for n, right in enumerate(rights, start=1)
    ]


def test_targets_not_played_are_counted_in_the_verdict():
    scenario, ctx = _round(pass_share=0.8, targets_per_round=5)
    for right in (True, True, False):
        _play_target(scenario, ctx, right)
    assert scenario.is_settled() is False
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.success, v.reason) == (False, "2 of 5 targets chosen correctly (2 not played)")


def test_choose_refuses_the_sender_an_unknown_label_and_a_finished_round():
    scenario, ctx = _round(targets_per_round=1)
    assert call(scenario, ctx, "agent_a", label="pell") == {
        "status": "refused",
        "reason": "you are the sender this round; send on link",
    }
    assert scenario.refuse_message(ctx, "agent_a", "link", "a word") is None  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert call(scenario, ctx, "agent_b", label="x") == {
        "status": "error",
        "reason": "no candidate is labelled 'x'",
    }
    # neither refusal logged a choice
    assert [type(e) for e in ctx.events] == [SignalGameRolesAssigned, SignalGameTargetRevealed]
    reply = call(scenario, ctx, "agent_b", label=scenario.targets[0].answer)
    assert reply == {"status": "chosen", "correct": True, "round_over": True}
    assert ctx.notified == [("agent_a", "round_over", "The choice was right. Round over.")]
    assert call(scenario, ctx, "agent_b", label=scenario.targets[0].answer) == {
        "status": "refused",
        "reason": "the round is over",
        "round_over": True,
    }
    refused = scenario.refuse_message(ctx, "agent_a", "link", "more")  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert refused == "the round is over; nothing was sent"
    assert len([e for e in ctx.events if isinstance(e, SignalGameChoiceMade)]) == 1


# -- whole scripted plays ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed42():
    return played(SignalGame, preset(SignalGame))


def test_roles_targets_and_choices_are_logged(seed42):
    assert [(e.round_number, e.sender_id, e.receiver_id) for e in seed42.of(SignalGameRolesAssigned)] == [
        (1, "agent_a", "agent_b"), (2, "agent_b", "agent_a"), (3, "agent_a", "agent_b"),
        (4, "agent_b", "agent_a"), (5, "agent_a", "agent_b"),
    ]  # fmt: skip
    revealed = seed42.of(SignalGameTargetRevealed, 2)
    chosen = seed42.of(SignalGameChoiceMade, 2)
    assert [e.target for e in revealed] == [1, 2, 3, 4, 5] == [c.target for c in chosen]
    for r, c in zip(revealed, chosen, strict=True):
        assert c.correct and c.chosen == r.answer and c.attributes == r.attributes
        assert c.message == " ".join(r.attributes.values()) and c.chars_used == len(c.message)
    link = [m for m in seed42.of(MessageSent, 2) if m.channel_id == "link"]
    assert [m.sender_id for m in link] == ["agent_b"] * 5 and link[-1].budget_chars == 200
    # round 1 was misplayed: two attributes named, three targets still right
    assert [len(c.message.split()) for c in seed42.of(SignalGameChoiceMade, 1)] == [2] * 5
    assert [c.correct for c in seed42.of(SignalGameChoiceMade, 1)].count(True) == 3


def test_the_next_target_is_revealed_only_after_the_choice(seed42):
    kinds = [
        type(e).__name__ for e in seed42.events
        if e.round_number == 3 and isinstance(e, (SignalGameTargetRevealed, SignalGameChoiceMade, MessageSent))
        and getattr(e, "channel_id", "link") == "link"
    ]  # fmt: skip
    step = ["SignalGameTargetRevealed", "MessageSent", "SignalGameChoiceMade"]
    assert kinds == step * 5


class Pushy(SignalGame):
    """The receiver chooses before any message, then stops; the sender reads, then sends twice."""

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        if view.phase != "main":
            return ScriptedMove.finish()
        role = next(b["role"] for b in view.briefings() if "role" in b)
        if role == "receiver":
            if not view.tool_results("choose"):
                return ScriptedMove.call("choose", label="pell")
            if not view.tool_results("send_message"):
                return ScriptedMove.call("send_message", channel_id="link", text="me too")
            return ScriptedMove.finish()
        if not view.tool_results("read_channel"):
            return ScriptedMove.call("read_channel", channel_id="link")
        sent = view.tool_results("send_message")
        if len(sent) < 2:
            return ScriptedMove.call("send_message", channel_id="link", text=f"try {len(sent)}")
        return ScriptedMove.finish()


def _results(run: Play, agent_id: str, tool: str) -> list[dict[str, Any]]:
    return [
        e.result
        for e in run.of(ToolResultReceived)
        if e.agent_id == agent_id and e.tool_name == tool
    ]


def test_a_second_send_for_a_target_and_a_choice_before_any_message_are_refused():
    knobs = preset(SignalGame, round_count=1, postmortem_enabled=False)
    run = asyncio.run(Play(Pushy, knobs).run())
    sent = _results(run, "agent_a", "send_message")
    assert [r["status"] for r in sent] == ["sent", "refused"]
    assert sent[1]["reason"] == (
        "you already sent your one message for target 1; wait for the receiver's choice"
    )
    assert _results(run, "agent_b", "choose") == [
        {"status": "refused", "reason": "no message for target 1 yet; wait for the sender"}
    ]
    assert _results(run, "agent_b", "send_message")[0] == {
        "status": "refused",
        "reason": "you are the receiver this round: you do not speak on link, choose(label)",
    }
    assert [m.text for m in run.of(MessageSent)] == ["try 0"]


def test_passing_the_budget_ends_the_round_lost():
    run = play(SignalGame, preset(SignalGame, round_count=1, chars_per_target=4, targets_per_round=5))  # fmt: skip
    # the first message of 24 characters passes the 4 * 5 = 20 at once
    assert [m.chars for m in run.of(MessageSent) if m.channel_id == "link"] == [24]
    assert run.verdicts() == [(False, "budget exceeded: 24 of 20 characters")]
    assert len(run.of(SignalGameChoiceMade)) == 0
