"""orbital_anomaly: the case generator, the rules, the scripted check, and whole scripted plays."""

from __future__ import annotations

import functools
import random
import re

import pytest

from glossogen.eventlog import (
    AgentSwappedMidRun,
    BudgetWarning,
    InjectionDelivered,
    JudgeCalled,
    MessageSent,
    WorldEventDelivered,
)
from glossogen.knobs import load_config, resolve_knobs
from glossogen.scenario import codes_in, hidden_codes, scenario_dir
from scenarios.orbital_anomaly.catalogue import (
    CONFIGURATIONS,
    FAULTS,
    LOW_PRIORITY,
    SUBSYSTEMS,
    OrbitalCase,
    draw_case,
)
from scenarios.orbital_anomaly.events import (
    OrbitalAnomalyActuationJudged,
    OrbitalAnomalyCaseStarted,
)
from scenarios.orbital_anomaly.judging import Requirement
from scenarios.orbital_anomaly.knobs import OrbitalAnomalyKnobs
from scenarios.orbital_anomaly.scenario import (
    OrbitalAnomaly,
    panel_of,
    panel_text,
    table_text,
    telemetry_of,
    telemetry_text,
)
from tests.scenarios._play import Round, call, play, played, preset

KNOBS = OrbitalAnomalyKnobs()


def _case(seed: int, **kw: object) -> OrbitalCase:
    args = {
        "fault_count_weights": KNOBS.fault_count_weights,
        "hold_seconds": (10, 90),
        "easy": False,
        "cipher": True,
    } | kw
    return draw_case(random.Random(f"case:{seed}"), **args)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext


CASES = [_case(n) for n in range(200)]


# -- the generator ----------------------------------------------------------------------------


def test_catalogue_has_fourteen_faults_over_five_subsystems_with_three_distinct_variants():
    assert (len(FAULTS), len(SUBSYSTEMS)) == (14, 5)
    assert {f.subsystem for f in FAULTS} == {s.key for s in SUBSYSTEMS}
    for fault in FAULTS:
        assert len(fault.variants) == 3
        for variant in fault.variants:
            words = variant.steps.format(setting="45 units")
            assert variant.named_in(words), (fault.fault_id, words)
            others = [v for v in fault.variants if v is not variant]
            assert not any(v.named_in(words) for v in others), (fault.fault_id, words)


def test_cases_are_seeded_distinct_priority_ordered_and_in_range():
    assert _case(5) == _case(5)
    assert {len(c.stages) for c in CASES} == {1, 2, 3, 4, 5}
    for case in CASES:
        faults = [s.fault for s in case.stages]
        assert len({f.fault_id for f in faults}) == len(faults)
        assert [f.priority for f in faults] == sorted((f.priority for f in faults), reverse=True)
        for s in case.stages:
            low, high, step = s.fault.setting_range
            assert low <= s.setting <= high and (s.setting - low) % step == 0
            assert 10 <= s.hold_seconds <= 90
            assert s.configuration in CONFIGURATIONS


def test_cipher_off_forces_variant_zero_and_leaves_the_cases_alone():
    plain = [_case(n, cipher=False) for n in range(200)]
    assert {c.variant_index for c in plain} == {0}
    assert {c.variant_index for c in CASES} == {0, 1, 2}
    assert [c.stages for c in plain] == [c.stages for c in CASES]
    assert all(set(c.table.values()) == {0} for c in plain)


def test_easy_rounds_draw_one_low_priority_fault():
    for n in range(50):
        (stage,) = _case(n, easy=True).stages
        assert stage.fault.priority <= LOW_PRIORITY


def _seat_texts(scenario: OrbitalAnomaly, case: OrbitalCase, stage: int) -> dict[str, str]:
    s = case.stages[stage - 1]
    prompts = _prompts(scenario)
    return {
        "astronaut": prompts["astronaut"] + "\n" + panel_text(panel_of(stage, s)),
        "telemetry_officer": prompts["telemetry_officer"]
        + "\n"
        + telemetry_text(telemetry_of(stage, s)),
        "systems_engineer": prompts["systems_engineer"] + "\n" + table_text(case),
    }


@functools.cache
def _prompts(scenario: OrbitalAnomaly) -> dict[str, str]:
    return {a.agent_id: scenario.system_prompt(a) for a in scenario.agents()}


def _holders(texts: dict[str, str], value: str) -> list[str]:
    pattern = re.compile(r"(?<!\w)" + re.escape(value) + r"(?!\w)", re.IGNORECASE)
    return sorted(seat for seat, text in texts.items() if pattern.search(text))


def test_no_seat_is_redundant_each_field_of_the_action_is_held_by_exactly_one_seat():
    scenario = OrbitalAnomaly(KNOBS)
    checked = 0
    for case in CASES:
        for n, s in enumerate(case.stages, start=1):
            texts = _seat_texts(scenario, case, n)
            variant = case.table[s.fault_id]
            fields = {
                "unit": (s.unit, "astronaut"),
                "configuration": (s.configuration, "astronaut"),
                "setting": (s.setting_text(), "telemetry_officer"),
                "hold": (f"{s.hold_seconds} seconds", "telemetry_officer"),
                "variant": (f"{s.fault_id}: variant {variant}", "systems_engineer"),
                "procedure": (
                    s.fault.variants[variant].steps.format(setting="the setting"),
                    "systems_engineer",
                ),
            }
            for name, (value, seat) in fields.items():
                assert _holders(texts, value) == [seat], (name, value)
            checked += 1
    assert checked == 474  # the stages of the 200 cases


def test_judge_instructions_never_hold_a_code_of_the_case():
    scenario = OrbitalAnomaly(KNOBS)
    every_id = {f.fault_id for f in FAULTS}
    for case in CASES:
        scenario.case = case
        codes = hidden_codes(case) | case.table.keys()
        assert codes >= {s.fault_id for s in case.stages} | {f"variant {case.variant_index}"}
        for n, s in enumerate(case.stages, start=1):
            text = scenario.judge_instructions(n)
            assert codes_in(text, codes | every_id) == []
            assert "variant" not in text.lower()
            assert Requirement.of(case, n).expected() in text
            assert f"{s.hold_seconds} seconds" in text and s.unit in text


# -- knobs and presets ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["knobs_default", "knobs_no_postmortem", "knobs_tight_budget"])
def test_presets_validate(name):
    data, _ = load_config(name, scenario_dir(OrbitalAnomaly))
    knobs = resolve_knobs(OrbitalAnomalyKnobs, data, {})
    assert knobs.round_count == 5 and knobs.judge_model_settings.temperature == 0.0
    assert knobs.postmortem_enabled is (name != "knobs_no_postmortem")
    assert knobs.round_budget_chars == (300 if name == "knobs_tight_budget" else 600)


def test_knob_defaults():
    k = OrbitalAnomalyKnobs()
    assert (k.round_budget_chars, k.budget_notice_share, k.cipher_enabled) == (600, 0.75, True)
    assert k.judge_model_settings.temperature == 0.0
    assert OrbitalAnomaly(k).budget_warning_shares() == (0.75, 1.0)


# -- the rules, one round at a time -----------------------------------------------------------

ONE_STAGE = {
    "stages": [{"fault_id": "CM-02", "unit": "transponder 2", "configuration": "nominal string",
                "hold_seconds": 12, "setting": 7}],
    "variant_index": 2,
}  # fmt: skip
CLEARS = (
    "change over to the other transponder and offset the carrier of transponder 2 "
    "(nominal string) by 7 kilohertz, hold 12 seconds"
)
SEATS = ["astronaut", "telemetry_officer", "systems_engineer"]


def _one_stage_round() -> tuple[OrbitalAnomaly, Round]:
    scenario = OrbitalAnomaly(KNOBS)
    scenario.on_scheduled_case(ONE_STAGE)
    ctx = Round()
    scenario.start_round(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    return scenario, ctx


def _judged(ctx: Round) -> list[tuple[int, int, bool]]:
    return [
        (e.stage, e.attempt, e.match) for e in ctx.events if isinstance(e, OrbitalAnomalyActuationJudged)
    ]  # fmt: skip


def test_the_panel_refuses_before_the_case_other_seats_and_an_empty_action():
    scenario = OrbitalAnomaly(KNOBS)
    ctx = Round()
    assert call(scenario, ctx, "astronaut", action=CLEARS) == {
        "status": "error", "reason": "the panel takes no more actions this round"
    }  # fmt: skip
    scenario, ctx = _one_stage_round()
    for seat in ("telemetry_officer", "systems_engineer"):
        assert call(scenario, ctx, seat, action=CLEARS) == {
            "status": "error", "reason": "only the astronaut can reach the panel"
        }  # fmt: skip
    assert call(scenario, ctx, "astronaut", action="  ") == {
        "status": "error", "reason": "say what you do at the panel"
    }  # fmt: skip
    assert _judged(ctx) == [] and ctx.notified == []


def test_the_last_stage_cleared_tells_every_seat_all_clear_and_closes_the_panel():
    scenario, ctx = _one_stage_round()
    assert call(scenario, ctx, "astronaut", action=CLEARS) == {
        "status": "accepted", "all_clear": True
    }  # fmt: skip
    assert ctx.notified == [
        (seat, "all_clear", "All faults cleared; the vehicle is safe.") for seat in SEATS
    ]
    assert _judged(ctx) == [(1, 1, True)]
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.team_id, v.success, v.reason) == ("crew", True, "1 of 1 stages cleared")
    assert call(scenario, ctx, "astronaut", action=CLEARS) == {
        "status": "error", "reason": "the panel takes no more actions this round"
    }  # fmt: skip
    assert _judged(ctx) == [(1, 1, True)]


def test_an_action_while_one_is_ruled_on_is_refused():
    scenario, ctx = _one_stage_round()
    second: list[dict[str, object]] = []

    async def act_again() -> None:
        (tool,) = scenario.tools()
        second.append(await tool.function(ctx.tool_ctx("astronaut"), action=CLEARS))  # type: ignore[call-arg]  # a tool's function is typed by its own signature, called here as pydantic-ai does

    ctx.while_judging = act_again
    assert call(scenario, ctx, "astronaut", action=CLEARS) == {
        "status": "accepted", "all_clear": True
    }  # fmt: skip
    assert second == [
        {"status": "error", "reason": "the previous action is still being carried out"}
    ]
    assert _judged(ctx) == [(1, 1, True)]


def test_the_vehicle_lost_while_an_action_is_ruled_on_refuses_it_and_logs_no_ruling():
    scenario, ctx = _one_stage_round()

    async def pass_the_budget() -> None:
        scenario.on_budget_exceeded(ctx, "link", 640)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext

    ctx.while_judging = pass_the_budget
    assert call(scenario, ctx, "astronaut", action=CLEARS) == {
        "status": "error", "reason": "the vehicle was lost before the action took"
    }  # fmt: skip
    assert _judged(ctx) == []
    lost = "The link carried 640 characters, over its 600; the vehicle is lost. The round is over."
    assert ctx.notified == [(seat, "vehicle_lost", lost) for seat in SEATS]
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.success, v.reason) == (False, "budget exceeded at stage 1 of 1")


# -- whole scripted plays ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed42():
    return played(OrbitalAnomaly, preset(OrbitalAnomaly))


def test_stages_are_revealed_privately_one_at_a_time(seed42):
    case = seed42.of(OrbitalAnomalyCaseStarted, 1)[0]
    assert len(case.stages) == 3
    resolved = [e for e in seed42.of(WorldEventDelivered, 1) if e.kind == "stage_resolved"]
    assert [(e.agent_id, e.data.get("telemetry", {}).get("stage")) for e in resolved] == [
        ("telemetry_officer", 2), ("systems_engineer", None),
        ("telemetry_officer", 3), ("systems_engineer", None),
    ]  # fmt: skip
    assert all(e.text == "Stage resolved." for e in resolved if e.agent_id == "systems_engineer")
    for e in resolved[::2]:
        stage = case.stages[e.data["telemetry"]["stage"] - 1]
        assert f"Hold: {stage['hold_seconds']} seconds" in e.text
    briefed = {e.agent_id: e.text for e in seed42.of(InjectionDelivered, 1) if e.phase == "main"}
    first = case.stages[0]
    assert (
        first["unit"] in briefed["astronaut"] and first["unit"] not in briefed["telemetry_officer"]
    )
    assert first["setting"] in briefed["telemetry_officer"]
    assert first["setting"] not in briefed["astronaut"] + briefed["systems_engineer"]
    assert "stages" not in briefed["astronaut"] + briefed["telemetry_officer"]


def test_budget_loss_ends_the_round_and_warns_at_three_quarters(seed42):
    warnings = [(w.threshold, w.used_chars) for w in seed42.of(BudgetWarning, 3)]
    assert warnings == [(0.75, 725), (1.0, 725)]  # one message carried the link past both
    lost = [e.agent_id for e in seed42.of(WorldEventDelivered, 3) if e.kind == "vehicle_lost"]
    assert lost == ["astronaut", "telemetry_officer", "systems_engineer"]
    sent = [m for m in seed42.of(MessageSent, 3) if m.channel_id == "link"]
    assert sum(m.chars for m in sent) == 725
    assert seed42.verdicts()[2] == (False, "budget exceeded at stage 2 of 3")


def test_good_rounds_send_no_code_and_stay_under_the_notice(seed42):
    warned = {n: [w.threshold for w in seed42.of(BudgetWarning, n)] for n in (1, 2, 4, 5)}
    assert warned == {1: [], 2: [], 4: [0.75], 5: [0.75]}
    actions = [j.action for j in seed42.of(OrbitalAnomalyActuationJudged)]
    assert actions and not any(re.search(r"[A-Z]{2}-\d\d", a) for a in actions)


def test_a_wrong_action_is_retried_after_checking_with_the_team():
    run = play(
        OrbitalAnomaly,
        preset(OrbitalAnomaly, seed=1, round_count=3, scripted_misplay_share=1.0),
    )
    judged = [
        (j.round_number, j.stage, j.attempt, j.match) for j in run.of(OrbitalAnomalyActuationJudged)
    ]
    assert judged == [
        (1, 1, 1, True), (1, 2, 1, False), (1, 2, 2, True), (1, 3, 1, True),
        (2, 1, 1, True), (2, 2, 1, False), (2, 2, 2, True), (2, 3, 1, True),
        (3, 1, 1, True),
    ]  # fmt: skip
    assert run.verdicts() == [
        (True, "3 of 3 stages cleared"),
        (True, "3 of 3 stages cleared"),
        (True, "1 of 1 stages cleared"),
    ]
    texts = [m.text for m in run.of(MessageSent, 1) if m.channel_id == "link"]
    assert texts.count("rejected, check") == 1
    assert len(run.of(JudgeCalled)) == 9  # one vote per actuation


def test_an_injected_case_replaces_the_drawn_one():
    payload = {
        "stages": [
            {"fault_id": "CM-02", "unit": "transponder 2", "configuration": "nominal string",
             "hold_seconds": 12, "setting": 7},
        ],
        "variant_index": 2,
    }  # fmt: skip
    knobs = preset(
        OrbitalAnomaly,
        round_count=2,
        scheduled_events=[{"kind": "inject_case", "round": 2, "payload": payload}],
    )
    run = play(OrbitalAnomaly, knobs)
    first, second = run.of(OrbitalAnomalyCaseStarted)
    assert not first.injected and second.injected
    assert [(s["fault_id"], s["unit"], s["setting"]) for s in second.stages] == [
        ("CM-02", "transponder 2", "7 kilohertz")
    ]
    assert second.variant_index == 2 and second.table["CM-02"] == (2 * 14) % 3
    assert run.verdicts()[1] == (True, "1 of 1 stages cleared")


def test_noise_hits_the_link_both_texts_are_logged_and_a_swap_takes_its_seat():
    knobs = preset(
        OrbitalAnomaly,
        round_count=3,
        channel_noise_level=0.1,
        scheduled_events=[
            {
                "kind": "swap_agent",
                "round": 2,
                "agent_id": "systems_engineer",
                "model": "scripted-b",
            }
        ],
    )
    run = play(OrbitalAnomaly, knobs)
    link = [m for m in run.of(MessageSent) if m.channel_id == "link"]
    assert link[0].text == "THERMAL LOOP CAUTION: coolant pump A, nominal string"
    assert link[0].delivered_text == "THERM_L LOOP CAUTIO_: coolant pump A, no_inal string"
    assert sum(m.text != m.delivered_text for m in link) == 4 and len(link) == 5
    # the scripted seats do not read masked text: they wait, and the rounds are lost
    assert run.verdicts() == [
        (False, "unfinished: 0 of 3 stages cleared"),
        (False, "budget exceeded at stage 1 of 2"),
        (False, "unfinished: 0 of 3 stages cleared"),
    ]
    assert [s.trigger for s in run.summaries] == ["all_idle", "settled", "all_idle"]
    (swap,) = run.of(AgentSwappedMidRun)
    assert (swap.round_number, swap.agent_id, swap.model) == (2, "systems_engineer", "scripted-b")
