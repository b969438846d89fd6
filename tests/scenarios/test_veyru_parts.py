"""Pieces of the veyru scenario: knobs, presets, the scripted judge check, the rules of a round,
the scripted policy."""

from __future__ import annotations

import random

import pytest

from glossogen.knobs import ConfigError, load_config, resolve_knobs
from glossogen.scenario import Observation, ScriptedMove, ScriptedView, scenario_dir
from scenarios.veyru.events import VeyruStabilizationJudged
from scenarios.veyru.judging import Requirement, check_action
from scenarios.veyru.knobs import VeyruKnobs
from scenarios.veyru.motifs import FACES, MOTIFS, draw_case
from scenarios.veyru.scenario import Veyru
from scenarios.veyru.scripted import engineer_move, identify, observer_move
from tests.scenarios._play import Round, call

# -- knobs ------------------------------------------------------------------------------------


def test_knob_defaults():
    k = VeyruKnobs()
    assert k.round_budget_chars == 150
    assert (k.min_stages, k.max_stages, k.attempts_per_stage) == (1, 3, 1)
    assert k.postmortem_after_swap is True
    assert k.judge_model_settings.temperature == 0.0
    assert k.judge_provider is None and k.judge_model is None
    assert Veyru(k).budget_chars() == 150


def test_knobs_accepted_edge_cases():
    assert VeyruKnobs(min_stages=2, max_stages=2).min_stages == 2
    off = VeyruKnobs(postmortem_enabled=False, postmortem_after_swap=False)
    assert not off.postmortem_enabled


def test_cross_field_error_through_the_resolver():
    with pytest.raises(ConfigError, match="postmortem_after_swap=true requires"):
        resolve_knobs(VeyruKnobs, {}, {"postmortem_enabled": False})


@pytest.mark.parametrize("name", ["knobs_default", "knobs_intern"])
def test_presets_validate(name):
    data, _ = load_config(name, scenario_dir(Veyru))
    knobs = resolve_knobs(VeyruKnobs, data, {})
    assert knobs.round_count == 5
    assert "judge_provider" not in data and "judge_model" not in data


def test_default_preset_values():
    data, _ = load_config("knobs_default", scenario_dir(Veyru))
    knobs = resolve_knobs(VeyruKnobs, data, {})
    assert (knobs.max_round_duration_seconds, knobs.postmortem_duration_seconds) == (300, 60)
    assert knobs.round_budget_chars == 150


# -- the scripted judge check -----------------------------------------------------------------


@pytest.mark.parametrize("motif", MOTIFS, ids=lambda m: m.motif_id)
def test_each_procedure_in_its_own_words_passes_only_for_itself(motif):
    need = Requirement(motif.procedure, "ivory", 11, 2)
    action = f"I {need.steps()}, holding 11 seconds at intensity 2"
    assert check_action(action, need).success, action
    for other in MOTIFS:
        if other is not motif:
            wrong = Requirement(other.procedure, "ivory", 11, 2)
            assert not check_action(action, wrong).success, (action, other.motif_id)


def test_cues_identify_their_motif():
    for motif in MOTIFS:
        assert identify(", ".join(motif.cues)) is motif
        assert identify(f"no change: {motif.cues[0]}") is motif
    assert identify("it looks unwell") is None


def test_case_draw_is_seeded_and_a_derangement():
    a = draw_case(
        random.Random("x"), stages=3, hold_seconds=(3, 12), intensity_levels=5, veiled=False
    )
    b = draw_case(
        random.Random("x"), stages=3, hold_seconds=(3, 12), intensity_levels=5, veiled=False
    )
    assert a == b and len(set(a.stages)) == 3
    assert all(k != v for k, v in a.reading.remap.items())
    assert sorted(a.reading.remap.values()) == sorted(a.reading.remap)
    assert (a.reading.face, a.reading.hold_seconds) == ("russet", 12)
    assert a.reading.face in FACES


# -- the rules, one round at a time -----------------------------------------------------------


def _two_stage_round(attempts: int = 1) -> tuple[Veyru, Round]:
    """Round 1 with two stages: thaw, then brush, both on the cobalt face, 6 s at level 1."""
    scenario = Veyru(VeyruKnobs(min_stages=2, max_stages=2, attempts_per_stage=attempts))
    ctx = Round()
    scenario.start_round(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    return scenario, ctx


def _judged(ctx: Round) -> list[tuple[int, int, bool, bool]]:
    return [
        (e.stage, e.attempt, e.success, e.round_lost)
        for e in ctx.events
        if isinstance(e, VeyruStabilizationJudged)
    ]


def test_the_veyru_refuses_before_the_case_the_engineer_and_an_empty_action():
    assert call(Veyru(VeyruKnobs()), Round(), "field_observer", action="thaw cobalt 6s L1") == {
        "status": "error",
        "reason": "this round's veyru needs no more treatment",
    }
    scenario, ctx = _two_stage_round()
    assert call(scenario, ctx, "stabilization_engineer", action="thaw cobalt 6s L1") == {
        "status": "error",
        "reason": "only the field observer can touch the veyru",
    }
    assert call(scenario, ctx, "field_observer", action=" ") == {
        "status": "error",
        "reason": "describe the treatment you carry out",
    }
    assert _judged(ctx) == []


def test_one_of_two_stages_stabilized_is_unfinished():
    scenario, ctx = _two_stage_round()
    reply = call(scenario, ctx, "field_observer", action="thaw cobalt 6s L1")
    assert (reply["status"], reply["stage"], reply["next_stage"]["stage"]) == ("stabilized", 1, 2)
    assert _judged(ctx) == [(1, 1, True, False)]
    assert ctx.notified[-1] == (
        "stabilization_engineer",
        "stage_stabilized",
        "Stage 1 of 2 is stable; the observer now sees new signs.",
    )
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.team_id, v.success, v.reason) == (
        "team",
        False,
        "unfinished: 1 of 2 stages stabilized",
    )


def test_a_treatment_without_effect_tells_the_engineer_the_attempts_left():
    scenario, ctx = _two_stage_round(attempts=3)
    replies = [call(scenario, ctx, "field_observer", action="thaw amber 6s L1") for _ in range(2)]
    assert replies == [
        {"status": "failed", "stage": 1, "attempts_left": 2, "note": "no effect"},
        {"status": "failed", "stage": 1, "attempts_left": 1, "note": "no effect"},
    ]
    assert ctx.notified == [
        (
            "stabilization_engineer",
            "treatment_failed",
            f"The treatment at stage 1 had no effect; {left} attempt(s) left at this stage.",
        )
        for left in (2, 1)
    ]
    assert _judged(ctx) == [(1, 1, False, False), (1, 2, False, False)]


def test_a_treatment_while_one_takes_effect_is_refused():
    scenario, ctx = _two_stage_round()
    second: list[dict[str, object]] = []

    async def treat_again() -> None:
        (tool,) = scenario.tools()
        observer = ctx.tool_ctx("field_observer")
        second.append(await tool.function(observer, action="thaw cobalt 6s L1"))  # type: ignore[call-arg]  # a tool's function is typed by its own signature, called here as pydantic-ai does

    ctx.while_judging = treat_again
    assert call(scenario, ctx, "field_observer", action="thaw cobalt 6s L1")["status"] == (
        "stabilized"
    )
    assert second == [
        {"status": "error", "reason": "the previous treatment is still taking effect"}
    ]
    assert _judged(ctx) == [(1, 1, True, False)]


def test_the_veyru_collapsed_while_a_treatment_is_ruled_on_refuses_it():
    scenario, ctx = _two_stage_round()

    async def pass_the_budget() -> None:
        scenario.on_team_budget_exceeded(ctx, "team", "link", 160)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext

    ctx.while_judging = pass_the_budget
    assert call(scenario, ctx, "field_observer", action="thaw cobalt 6s L1") == {
        "status": "error",
        "reason": "the veyru collapsed before the treatment took",
    }
    assert _judged(ctx) == []
    collapsed = (
        "The link carried 160 characters, over its 150; the overloaded veyru collapsed. "
        "The round is lost."
    )
    assert ctx.notified == [
        (seat, "veyru_collapsed", collapsed)
        for seat in ("field_observer", "stabilization_engineer")
    ]
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.success, v.reason) == (False, "budget exceeded")


# -- the scripted policy ----------------------------------------------------------------------

OBSERVER_BRIEF = {
    "stage": 1,
    "stages": 1,
    "symptoms": "x",
    "cues": ["hot shell", "red throb"],
    "budget_chars": 150,
}
ENGINEER_BRIEF = {
    "stages": 1,
    "face": "amber",
    "hold_seconds": 5,
    "intensity_level": 2,
    "remap": {m.motif_id: m.motif_id for m in MOTIFS} | {"QELD": "IMRU"},
    "veiled": False,
    "budget_chars": 150,
}


def view(agent_id, *observations):
    return ScriptedView(
        agent_id, 1, "main", list(observations), False, len(observations), random.Random(0)
    )


def msg(sender, text):
    return {"channel_id": "link", "sender_id": sender, "text": text, "message_id": "m"}


def test_observer_applies_an_order_handed_back_by_a_conflict():
    conflict = {
        "status": "conflict",
        "note": "...",
        "messages": [msg("stabilization_engineer", "sing amber 5s L2")],
    }
    move = observer_move(
        view(
            "field_observer",
            Observation("briefing", OBSERVER_BRIEF),
            Observation("tool_result", conflict, "send_message"),
        ),
        42,
    )
    assert move == ScriptedMove.call("apply_treatment", action="As instructed: sing amber 5s L2")


def test_observer_describes_then_waits():
    first = observer_move(view("field_observer", Observation("briefing", OBSERVER_BRIEF)), 42)
    assert first == ScriptedMove.call(
        "send_message", channel_id="link", text="hot shell, red throb"
    )
    sent = Observation("tool_result", {"status": "sent", "chars": 20}, "send_message")
    then = observer_move(view("field_observer", Observation("briefing", OBSERVER_BRIEF), sent), 42)
    assert then == ScriptedMove.call("wait_for_notifications")


def test_engineer_applies_the_shift_and_resends_after_a_conflict():
    brief = Observation("briefing", ENGINEER_BRIEF)
    heard = Observation(
        "notifications", {"messages": [msg("field_observer", "hot shell, red throb")], "events": []}
    )
    answer = ScriptedMove.call("send_message", channel_id="link", text="sing amber 5s L2")
    assert engineer_move(view("stabilization_engineer", brief, heard), 42) == answer
    conflict = Observation(
        "tool_result",
        {"status": "conflict", "messages": [msg("field_observer", "hot shell, red throb, hurry")]},
        "send_message",
    )
    assert engineer_move(view("stabilization_engineer", brief, heard, conflict), 42) == answer
    sent = Observation("tool_result", {"status": "sent"}, "send_message")
    assert engineer_move(
        view("stabilization_engineer", brief, heard, sent), 42
    ) == ScriptedMove.call("wait_for_notifications")


def test_postmortem_mentions_a_swap_only_when_asked():
    swap = [{"kind": "swap_agent", "round": 2, "agent_id": "field_observer", "model": "m2"}]
    for flag, shown in ((True, True), (False, False)):
        scenario = Veyru(VeyruKnobs(scheduled_events=swap, postmortem_after_swap=flag))
        text = scenario.postmortem_briefing(scenario.agents()[1], [], 3)
        assert ("field_observer" in text) is shown
        assert "since round 2" in text if shown else "since round" not in text
    scenario = Veyru(VeyruKnobs(scheduled_events=swap))
    assert "since round" not in scenario.postmortem_briefing(scenario.agents()[0], [], 1)


def test_worst_case_good_round_fits_the_default_budget():
    notes = max(len(", ".join(m.cues)) for m in MOTIFS)
    answer = max(len(m.procedure.verb) for m in MOTIFS) + max(map(len, FACES)) + len(" 12s L5 ")
    assert VeyruKnobs().max_stages * (notes + answer) <= VeyruKnobs().round_budget_chars
