"""drive_module_repair: the case generator, the rules, the scripted check, and scripted plays."""

from __future__ import annotations

import random

import pytest

from glossogen.eventlog import (
    InjectionDelivered,
    JudgeCalled,
    MessageSent,
    WorldEventDelivered,
)
from glossogen.knobs import load_config, resolve_knobs
from glossogen.scenario import codes_in, hidden_codes, scenario_dir
from scenarios.drive_module_repair.catalogue import (
    CLASSES,
    COMPONENTS,
    COMPONENTS_PER_MODULE,
    DriveCase,
    draw_case,
)
from scenarios.drive_module_repair.events import (
    DriveModuleRepairCaseStarted,
    DriveModuleRepairReplacementJudged,
)
from scenarios.drive_module_repair.judging import Requirement, check_action
from scenarios.drive_module_repair.knobs import DriveModuleRepairKnobs
from scenarios.drive_module_repair.scenario import (
    DriveModuleRepair,
    fault_of,
    sheet_text,
    tree_text,
)
from tests.scenarios._play import Round, call, play, played, preset

KNOBS = DriveModuleRepairKnobs()


def _case(seed: int) -> DriveCase:
    return draw_case(
        random.Random(f"case:{seed}"),
        module_count_weights=KNOBS.module_count_weights,
        fault_count_weights=KNOBS.fault_count_weights,
    )


CASES = [_case(n) for n in range(200)]


# -- the generator ----------------------------------------------------------------------------


def test_catalogue_has_fifteen_components_in_five_classes():
    assert (len(COMPONENTS), len(CLASSES)) == (15, 5)
    assert {c.service_class for c in COMPONENTS} == {c.key for c in CLASSES}
    assert len({c.steps for c in CLASSES}) == len(CLASSES)  # a class fixes the steps' shape


def test_cases_are_seeded_and_shaped_by_the_weights():
    assert _case(3) == _case(3)
    assert {len(c.modules) for c in CASES} == {1, 2, 3}
    assert {len(m.faulty) for c in CASES for m in c.modules} == {1, 2, 3, 4}
    for case in CASES:
        assert len({m.module for m in case.modules}) == len(case.modules)
        stages = case.stages()
        assert [s.number for s in stages] == list(range(1, len(stages) + 1))
        for m in case.modules:
            assert len(m.tree) == len(set(m.tree.values())) == COMPONENTS_PER_MODULE
            assert set(m.depth_order) == set(m.tree.values()) == {r.component for r in m.sheet}
            assert m.faulty == sorted(m.faulty, key=m.depth_order.index)
            mine = [s.component for s in stages if s.module is m]
            assert mine == m.faulty


def test_modules_differ_in_their_trees_and_settings():
    two = [c for c in CASES if len(c.modules) >= 2]
    assert len(two) == 97
    differ = 0
    for case in two:
        a, b = case.modules[:2]
        shared = set(a.tree.values()) & set(b.tree.values())
        differ += any(a.symptom(p) != b.symptom(p) or a.replacement(p) != b.replacement(p) for p in shared)  # fmt: skip
    assert differ == sum(
        bool(set(c.modules[0].tree.values()) & set(c.modules[1].tree.values())) for c in two
    )


def test_no_seat_is_redundant_on_200_cases():
    for case in CASES:
        for stage in case.stages():
            fault = fault_of(stage)
            tech = f"Drive module {fault['module']} shows: {fault['symptom']}."
            tree, sheet = tree_text(stage.module), sheet_text(stage.module)
            steps = stage.replacement.step_texts()
            # only the technician knows which symptom shows; the tree lists them all
            assert all(s in tree for s in stage.module.tree)
            assert not any(c.name in tech for c in COMPONENTS)
            # only the diagnostics engineer maps it to the component
            assert f"- {fault['symptom']} -> {stage.component}" in tree
            assert fault["symptom"] not in sheet and not any(t in tree for t in steps)
            # only the spec engineer has the steps, for every component of the module
            assert all(t in sheet for t in steps) and not any(t in tech for t in steps)
            assert sheet.count("\n- ") == COMPONENTS_PER_MODULE


def test_judge_instructions_never_hold_a_part_code():
    scenario = DriveModuleRepair(KNOBS)
    every_code = {c.part_code for c in COMPONENTS}
    for case in CASES:
        codes = hidden_codes(case)
        assert codes == {r.part_code for m in case.modules for r in m.sheet}
        for stage in case.stages():
            text = scenario.judge_instructions(stage)
            assert codes_in(text, every_code) == []
            assert Requirement.of(stage).expected() in text


# -- knobs and presets ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["knobs_default", "knobs_no_postmortem", "knobs_tight_budget"])
def test_presets_validate(name):
    data, _ = load_config(name, scenario_dir(DriveModuleRepair))
    knobs = resolve_knobs(DriveModuleRepairKnobs, data, {})
    assert (knobs.round_count, knobs.judge_votes) == (5, 3)
    assert knobs.max_round_duration_seconds == 2700
    assert knobs.postmortem_enabled is (name != "knobs_no_postmortem")
    assert knobs.round_budget_chars == (450 if name == "knobs_tight_budget" else 900)


def test_knob_defaults():
    k = DriveModuleRepairKnobs()
    assert (k.round_budget_chars, k.judge_votes) == (900, 3)
    assert (k.max_round_duration_seconds, k.postmortem_duration_seconds) == (2700, 900)
    assert k.judge_model_settings.temperature == 0.0


# -- the scripted check -----------------------------------------------------------------------


def test_every_sheet_entry_in_its_own_compact_words_passes():
    for case in CASES[:50]:
        for stage in case.stages():
            r = stage.replacement
            action = f"Drive module {stage.module.module}, {r.component}: {r.compact()}"
            assert check_action(action, Requirement.of(stage)).success, action


# -- the rules, one round at a time -----------------------------------------------------------

# one module (Plover), two faults: the sensor hub, then the drive flange
TWO_FAULTS = draw_case(random.Random("rules"), module_count_weights=[1], fault_count_weights=[0, 1])
FIRST = (
    "Drive module Plover, sensor hub: hold 21 s; remove 6 screws star with hex key; fit new; "
    "torque 2 Nm in 3 passes; run zero-offset calibration"
)
SEATS = ["field_technician", "diagnostics_engineer", "spec_engineer"]


def _two_fault_round() -> tuple[DriveModuleRepair, Round]:
    scenario = DriveModuleRepair(KNOBS)
    scenario.on_scheduled_case(TWO_FAULTS.model_dump(mode="json"))
    ctx = Round()
    scenario.start_round(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    return scenario, ctx


def _judged(ctx: Round) -> list[tuple[int, int, bool]]:
    return [
        (e.step, e.attempt, e.match) for e in ctx.events if isinstance(e, DriveModuleRepairReplacementJudged)
    ]  # fmt: skip


def test_the_bay_refuses_before_the_case_other_seats_and_an_empty_action():
    scenario = DriveModuleRepair(KNOBS)
    assert call(scenario, Round(), "field_technician", action=FIRST) == {
        "status": "error", "reason": "the bay takes no more work this round"
    }  # fmt: skip
    scenario, ctx = _two_fault_round()
    for seat in ("diagnostics_engineer", "spec_engineer"):
        assert call(scenario, ctx, seat, action=FIRST) == {
            "status": "error", "reason": "only the field technician is in the bay"
        }  # fmt: skip
    assert call(scenario, ctx, "field_technician", action="") == {
        "status": "error", "reason": "say what you do, step by step"
    }  # fmt: skip
    assert _judged(ctx) == []


def test_one_of_two_faults_fixed_is_unfinished_and_names_the_next_symptom():
    scenario, ctx = _two_fault_round()
    assert call(scenario, ctx, "field_technician", action=FIRST) == {
        "status": "fixed",
        "next_fault": {"step": 2, "module": "Plover", "symptom": "coolant drips under the box"},
        "note": "Drive module Plover shows: coolant drips under the box.",
    }
    assert _judged(ctx) == [(1, 1, True)]
    assert ctx.notified == []  # the same module: nothing new for the engineers
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.team_id, v.success, v.reason) == (
        "bay_crew",
        False,
        "unfinished: 1 of 2 faults fixed",
    )


def test_a_replacement_while_one_is_checked_is_refused():
    scenario, ctx = _two_fault_round()
    second: list[dict[str, object]] = []

    async def service_again() -> None:
        (tool,) = scenario.tools()
        second.append(await tool.function(ctx.tool_ctx("field_technician"), action=FIRST))  # type: ignore[call-arg]  # a tool's function is typed by its own signature, called here as pydantic-ai does

    ctx.while_judging = service_again
    assert call(scenario, ctx, "field_technician", action=FIRST)["status"] == "fixed"
    busy = {"status": "error", "reason": "the previous replacement is still being checked"}
    assert second == [busy] * 3  # one try inside each of the three judge votes
    assert _judged(ctx) == [(1, 1, True)]


def test_the_round_lost_while_a_replacement_is_checked_refuses_it_and_logs_no_ruling():
    scenario, ctx = _two_fault_round()

    async def pass_the_budget() -> None:
        scenario.on_budget_exceeded(ctx, "bay", 950)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext

    ctx.while_judging = pass_the_budget
    assert call(scenario, ctx, "field_technician", action=FIRST) == {
        "status": "error", "reason": "the round was lost before the work was checked"
    }  # fmt: skip
    assert _judged(ctx) == []
    lost = "The bay carried 950 characters, over its 900. The round is lost."
    assert ctx.notified == [(seat, "round_lost", lost) for seat in SEATS]  # told once
    (v,) = scenario.verdicts(ctx)  # type: ignore[arg-type]  # the test's Round stands in for RoundContext
    assert (v.success, v.reason) == (False, "budget exceeded with 0 of 2 faults fixed")


# -- whole scripted plays ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed42():
    return played(DriveModuleRepair, preset(DriveModuleRepair))


def test_three_votes_per_replacement_each_logged(seed42):
    judged = seed42.of(DriveModuleRepairReplacementJudged)
    assert [len(j.votes) for j in judged] == [3] * 20
    assert len(seed42.of(JudgeCalled)) == 60
    assert all(c.cost_usd == 0.0 for c in seed42.of(JudgeCalled))


def test_a_new_module_is_pushed_to_the_engineers_only_when_reached(seed42):
    case = seed42.of(DriveModuleRepairCaseStarted, 2)[0]
    assert [m["module"] for m in case.modules] == ["Tern", "Plover"]
    briefed = {e.agent_id: e for e in seed42.of(InjectionDelivered, 2) if e.phase == "main"}
    assert briefed["diagnostics_engineer"].data["module"] == "Tern"
    assert briefed["spec_engineer"].data["module"] == "Tern"
    assert "Plover" not in briefed["spec_engineer"].text + briefed["diagnostics_engineer"].text
    opened = [(e.agent_id, e.data["module"]) for e in seed42.of(WorldEventDelivered, 2) if e.kind == "module_opened"]  # fmt: skip
    assert opened == [("diagnostics_engineer", "Plover"), ("spec_engineer", "Plover")]
    judged = seed42.of(DriveModuleRepairReplacementJudged, 2)
    assert [j.step for j in judged if j.match] == [1, 2, 3, 4]  # lost on budget at the fifth
    for e in briefed.values():
        assert "faults" not in e.text.lower().replace("fault tree", "")


def test_budget_loss_tells_every_seat(seed42):
    lost = [e.agent_id for e in seed42.of(WorldEventDelivered, 2) if e.kind == "round_lost"]
    assert lost == ["field_technician", "diagnostics_engineer", "spec_engineer"]
    sent = [m for m in seed42.of(MessageSent, 2) if m.channel_id == "bay"]
    assert sum(m.chars for m in sent) == 914  # over the 900


def test_wrong_steps_are_retried_after_a_recheck():
    run = play(
        DriveModuleRepair,
        preset(DriveModuleRepair, seed=3, round_count=1, scripted_misplay_share=1.0),
    )
    judged = [
        (j.step, j.attempt, j.match, j.reason) for j in run.of(DriveModuleRepairReplacementJudged)
    ]
    assert judged == [
        (1, 1, False, "wrong torque: needed 43, got 44"),
        (1, 2, True, "main bearing on Merlin replaced as the sheet says"),
        (2, 1, True, "gear pump on Merlin replaced as the sheet says"),
    ]
    texts = [m.text for m in run.of(MessageSent) if m.channel_id == "bay"]
    assert texts.count("rejected, recheck Merlin") == 1
    assert run.verdicts() == [(True, "2 of 2 faults fixed")]
