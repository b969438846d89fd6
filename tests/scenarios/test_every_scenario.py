"""What every scenario has in common, one table a scenario: the knobs it refuses and the exact
message, the scripted judge check of the staged scenarios, its entry point and its own events'
round trip, and its pinned verdicts per seed."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from pydantic import ValidationError

from glossogen.eventlog import event_adapter
from glossogen.scenario import Scenario, load_scenario
from scenarios.drive_module_repair import judging as drive_judging
from scenarios.drive_module_repair.catalogue import Replacement
from scenarios.drive_module_repair.knobs import DriveModuleRepairKnobs
from scenarios.drive_module_repair.scenario import DriveModuleRepair
from scenarios.orbital_anomaly import judging as orbital_judging
from scenarios.orbital_anomaly.catalogue import FaultStage
from scenarios.orbital_anomaly.knobs import OrbitalAnomalyKnobs
from scenarios.orbital_anomaly.scenario import OrbitalAnomaly
from scenarios.signal_game.knobs import SignalGameKnobs
from scenarios.signal_game.scenario import SignalGame
from scenarios.spot_the_difference.knobs import SpotTheDifferenceKnobs
from scenarios.spot_the_difference.scenario import SpotTheDifference
from scenarios.veyru import judging as veyru_judging
from scenarios.veyru.knobs import VeyruKnobs
from scenarios.veyru.motifs import BY_ID
from scenarios.veyru.scenario import Veyru
from tests.scenarios._play import Play, played, preset

# -- knobs refused ----------------------------------------------------------------------------

SIGNAL_GAME_KNOBS = [
        ({"distractor_overlap": 4}, "distractor_overlap (4) must be below attributes (4)"),
        ({"attributes": 2, "values_per_attribute": 2, "distractor_overlap": 1, "candidate_count": 4},
         "candidate_count 4 needs 3 distractors sharing 1 attribute with the target; the space (2 x 2) has 2"),
        ({"attributes": 3, "values_per_attribute": 2, "distractor_overlap": 2, "candidate_count": 5},
         "candidate_count 5 needs 4 distractors sharing 2 attributes with the target; the space (3 x 2) has 3"),
        ({"chars_per_target": 0}, "greater than or equal to 1"),
        ({"pass_share": 1.5}, "less than or equal to 1"),
]  # fmt: skip
ORBITAL_ANOMALY_KNOBS = [
        ({"fault_count_weights": [0, 0]}, "fault_count_weights [0.0, 0.0]: every weight"),
        ({"fault_count_weights": [1, -1]}, "every weight must be >= 0"),
        ({"fault_count_weights": [1] * 6}, "at most 5 items"),
        ({"min_hold_seconds": 50, "max_hold_seconds": 20}, "min_hold_seconds (50) must not"),
        ({"round_count": 3, "easy_round_numbers": [4]}, "easy_round_numbers: [4] outside 1..round_count (3)"),
        ({"round_budget_chars": 10}, "greater than or equal to 50"),
        ({"budget_notice_share": 1.0}, "less than 1"),
        (
            {"scheduled_events": [{"kind": "inject_case", "round": 1, "payload": {"stages": [], "variant_index": 0}}]},
            "inject_case at round 1: stages: List should have at least 1 item",
        ),
        (
            {"scheduled_events": [{"kind": "inject_case", "round": 1, "payload": {"stages": [{"fault_id": "XX-9", "unit": "u", "configuration": "c", "hold_seconds": 5, "setting": 1}], "variant_index": 0}}]},
            "inject_case at round 1: stage 1: unknown fault_id 'XX-9'",
        ),
]  # fmt: skip
DRIVE_MODULE_REPAIR_KNOBS = [
        ({"judge_votes": 2}, "judge_votes (2) must be odd"),
        ({"judge_votes": 0}, "greater than or equal to 1"),
        ({"module_count_weights": [0, 0, 0]}, "module_count_weights [0.0, 0.0, 0.0]: every weight"),
        ({"fault_count_weights": [1, 1, 1, 1, 1]}, "at most 4 items"),
        ({"round_budget_chars": 10}, "greater than or equal to 50"),
        (
            {"scheduled_events": [{"kind": "inject_case", "round": 1, "payload": {"modules": []}}]},
            "inject_case at round 1: modules: List should have at least 1 item",
        ),
]  # fmt: skip
SPOT_THE_DIFFERENCE_KNOBS = [
        ({"team_count": 1, "shared_link": True}, "shared_link needs two teams (team_count is 1)"),
        ({"difference_kinds": ["attribute", "swapped"]}, "Input should be 'attribute', 'moved', 'added' or 'removed'"),
        ({"difference_kinds": ["moved", "added"], "kind_weights": [1, 1, 1]}, "kind_weights [1.0, 1.0, 1.0]: need one weight >= 0 per kind of difference_kinds (2)"),
        ({"difference_count_weights": [1, 1]}, "difference_count_weights [1.0, 1.0]: need 3 weights"),
        ({"difference_count_weights": [0, 0, 0]}, "need 3 weights (for 2, 3, 4 differences), each >= 0, not all 0"),
        ({"grid_size": 6}, "grid_size 6 is too small for 18 objects: needs at least 44 cells, has 36"),
        ({"round_budget_chars": -2}, "greater than or equal to -1"),
        ({"round_count": 2, "easy_round_numbers": [3]}, "easy_round_numbers: [3] outside 1..round_count (2)"),
        ({"round_count": 3, "easy_round_numbers": [1, 1]}, "easy_round_numbers [1, 1]: round(s) [1] listed twice"),
        ({"round_budget_chars": 0}, "round_budget_chars 0: every team would be over budget every round; use -1 for no cap or a positive number of characters"),
]  # fmt: skip
VEYRU_KNOBS = [
        ({"min_stages": 3, "max_stages": 2}, "min_stages (3) must not exceed max_stages (2)"),
        (
            {"postmortem_enabled": False},
            "postmortem_after_swap=true requires postmortem_enabled=true",
        ),
        ({"min_hold_seconds": 9, "max_hold_seconds": 4}, "min_hold_seconds (9) must not exceed"),
        ({"round_count": 3, "calm_rounds": [4]}, "calm_rounds: [4] outside 1..round_count (3)"),
        ({"round_budget_chars": 5}, "greater than or equal to 20"),
        ({"max_stages": 4}, "less than or equal to 3"),
        ({"attempts_per_stage": 0}, "greater than or equal to 1"),
]  # fmt: skip
KNOBS_REFUSED = [
    pytest.param(knobs, values, message, id=f"{knobs.__name__}-{n}")
    for knobs, table in [
        (SignalGameKnobs, SIGNAL_GAME_KNOBS),
        (OrbitalAnomalyKnobs, ORBITAL_ANOMALY_KNOBS),
        (DriveModuleRepairKnobs, DRIVE_MODULE_REPAIR_KNOBS),
        (SpotTheDifferenceKnobs, SPOT_THE_DIFFERENCE_KNOBS),
        (VeyruKnobs, VEYRU_KNOBS),
    ]
    for n, (values, message) in enumerate(table)
]


@pytest.mark.parametrize(("knobs", "values", "message"), KNOBS_REFUSED)
def test_knobs_refused(knobs: Any, values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        knobs(**values)


# -- the scripted judge check of the staged scenarios -----------------------------------------

ORBITAL_STAGE = FaultStage(
    fault_id="TH-01", unit="coolant pump B", configuration="cross-strapped", hold_seconds=30,
    setting=45,
)  # fmt: skip
ORBITAL_NEED = orbital_judging.Requirement(ORBITAL_STAGE, ORBITAL_STAGE.fault.variants[0])
ORBITAL_GOOD = (
    "throttle and purge the coolant pump B (cross-strapped), set to 45 percent, hold 30 seconds"
)

ORBITAL_CHECKS = [
    (ORBITAL_GOOD, True, "procedure on the coolant pump B at 45 percent, held 30 s"),
    ("Throttled the pump to 45% and purged it; coolant pump B, cross-strapped, held 30 s", True, "procedure on the coolant pump B at 45 percent, held 30 s"),
    ("TH-01 variant 0 on coolant pump B cross-strapped 45 percent 30 s", False, "the action is not this stage's procedure"),
    (ORBITAL_GOOD.replace("throttle and purge", "bleed the accumulator"), False, "the action is not this stage's procedure"),
    (ORBITAL_GOOD.replace("throttle and purge", "throttle, purge, bleed the accumulator"), False, "the action mixes in another procedure"),
    (ORBITAL_GOOD.replace("pump B", "pump A"), False, "wrong unit: needed the coolant pump B, got coolant pump A"),
    (ORBITAL_GOOD.replace("cross-strapped", "redundant string"), False, "wrong configuration: needed cross-strapped, got redundant string"),
    (ORBITAL_GOOD.replace("45 percent", "50 percent"), False, "wrong setting: needed 45 percent, got 50 percent"),
    (ORBITAL_GOOD.replace(", set to 45 percent", ""), False, "wrong setting: needed 45 percent, got none"),
    (ORBITAL_GOOD.replace("30 seconds", "35 seconds"), False, "wrong hold: needed 30 s, got 35 s"),
    (ORBITAL_GOOD.replace(", hold 30 seconds", ""), False, "wrong hold: needed 30 s, got none"),
]  # fmt: skip


DRIVE_CLAMP = Replacement(
    component="idler bearing", part_code="CL-204", tool="pin wrench", fasteners=4,
    pattern="star", torque_nm=32, passes=2, hold_seconds=25,
)  # fmt: skip
DRIVE_NEED = drive_judging.Requirement("Heron", DRIVE_CLAMP)
DRIVE_GOOD = (
    "Drive module Heron, idler bearing: remove 4 bolts star with pin wrench; fit new; "
    "torque 32 Nm in 2 passes; hold 25 s"
)

DRIVE_CHECKS = [
    (DRIVE_GOOD, True, "idler bearing on Heron replaced as the sheet says"),
    ("On Heron I took out the 4 bolts of the idler bearing in a star pattern using the pin wrench, installed the new one, tightened to 32 N·m in 2 passes and held the preload 25 seconds", True, "idler bearing on Heron replaced as the sheet says"),
    (DRIVE_GOOD.replace("Heron", "Osprey"), False, "wrong module: needed Heron, got Osprey"),
    (DRIVE_GOOD.replace("idler bearing", "main bearing"), False, "wrong component: needed idler bearing, got main bearing"),
    (DRIVE_GOOD.replace("idler bearing", "CL-204"), False, "wrong component: needed idler bearing, got none"),
    (DRIVE_GOOD.replace("; hold 25 s", ""), False, "missing step: hold"),
    (DRIVE_GOOD + "; run sweep calibration", False, "a step this component does not take: calibrate"),
    (DRIVE_GOOD.replace("fit new; torque 32 Nm in 2 passes", "torque 32 Nm in 2 passes; fit new"), False, "steps out of order"),
    (DRIVE_GOOD.replace("4 bolts", "6 bolts"), False, "wrong fasteners: needed 4 bolts, got 6 bolts"),
    (DRIVE_GOOD.replace("star", "cross"), False, "wrong pattern: needed star, got cross"),
    (DRIVE_GOOD.replace("pin wrench", "spanner"), False, "wrong tool: needed pin wrench, got spanner"),
    (DRIVE_GOOD.replace("32 Nm", "33 Nm"), False, "wrong torque: needed 32, got 33"),
    (DRIVE_GOOD.replace("2 passes", "3 passes"), False, "wrong passes: needed 2, got 3"),
    (DRIVE_GOOD.replace("25 s", "30 s"), False, "wrong hold: needed 25, got 30"),
]  # fmt: skip


VEYRU_THAW = veyru_judging.Requirement(BY_ID["KESH"].procedure, "jade", 7, 3)

VEYRU_CHECKS = [
    ("thaw jade 7s L3", True, "thaw on the jade face, 7 s at level 3"),
    ("As instructed: thaw jade 7s L3", True, "thaw on the jade face, 7 s at level 3"),
    (
        "Pressed a warmed stone on the Jade face and held it 7 seconds at intensity 3",
        True,
        "thaw on the jade face, 7 s at level 3",
    ),
    ("warm stone to jade, hold 7 at level 3", True, "thaw on the jade face, 7 s at level 3"),
    (
        "thawing the jade side, 7-second hold, intensity level 3",
        True,
        "thaw on the jade face, 7 s at level 3",
    ),
    ("thaw slate 7s L3", False, "wrong face: needed jade, got slate"),
    ("thaw jade or amber 7s L3", False, "wrong face: needed jade, got amber, jade"),
    ("thaw 7s L3", False, "wrong face: needed jade, got none"),
    ("thaw jade 8s L3", False, "wrong hold: needed 7 s, got 8"),
    ("thaw jade 7 sec then 9 sec L3", False, "wrong hold: needed 7 s, got 7, 9"),
    ("thaw jade L3", False, "wrong hold: needed 7 s, got none"),
    ("thaw jade 7s L2", False, "wrong intensity: needed level 3, got 2"),
    ("thaw jade 7s", False, "wrong intensity: needed level 3, got none"),
    ("tap jade 7s L3", False, "wrong procedure: the stage needed thaw"),
    ("thaw then tap jade 7s L3", False, "hedged between procedures (thaw and tap)"),
]


SCRIPTED_CHECKS = [
    pytest.param(check, need, action, success, reason, id=f"{name}-{n}")
    for name, check, need, table in [
        ("orbital_anomaly", orbital_judging.check_action, ORBITAL_NEED, ORBITAL_CHECKS),
        ("drive_module_repair", drive_judging.check_action, DRIVE_NEED, DRIVE_CHECKS),
        ("veyru", veyru_judging.check_action, VEYRU_THAW, VEYRU_CHECKS),
    ]
    for n, (action, success, reason) in enumerate(table)
]


@pytest.mark.parametrize(("check", "need", "action", "success", "reason"), SCRIPTED_CHECKS)
def test_scripted_check(check: Any, need: Any, action: str, success: bool, reason: str) -> None:
    decision = check(action, need)
    assert (decision.success, decision.reason) == (success, reason)


# -- the entry point and the scenario's own events --------------------------------------------

OWN_EVENTS = {  # the seed-42 default play's own events, by type
    SignalGame: {"signal_game_roles_assigned": 5, "signal_game_target_revealed": 25, "signal_game_choice_made": 25},
    OrbitalAnomaly: {"orbital_anomaly_case_started": 5, "orbital_anomaly_actuation_judged": 16},
    DriveModuleRepair: {"drive_module_repair_case_started": 5, "drive_module_repair_replacement_judged": 20},
    SpotTheDifference: {"spot_the_difference_case_started": 5, "spot_the_difference_submission_judged": 20, "spot_the_difference_round_ranked": 5},
    Veyru: {"veyru_case_started": 5, "veyru_stabilization_judged": 9},
}  # fmt: skip


@pytest.mark.parametrize("cls", list(OWN_EVENTS), ids=lambda c: c.name)
def test_entry_point_loads_the_class_and_its_events_round_trip(cls: type[Scenario]) -> None:
    assert load_scenario(cls.name) is cls
    run = played(cls, preset(cls))
    own = [e for e in run.events if type(e) in cls.events]
    assert Counter(e.event_type for e in own) == OWN_EVENTS[cls]
    adapter = event_adapter()
    for event in own:
        back = adapter.validate_python(event.model_dump(mode="json"))
        assert type(back) is type(event) and back == event


# -- pinned verdicts per seed -----------------------------------------------------------------

SIGNAL_GAME_PINNED = {
    42: [(False, "3 of 5 targets chosen correctly")] + [(True, "5 of 5 targets chosen correctly")] * 4,
    0: [(True, "5 of 5 targets chosen correctly")] * 2 + [(False, "2 of 5 targets chosen correctly")] + [(True, "5 of 5 targets chosen correctly")] * 2,
    7: [(True, "5 of 5 targets chosen correctly")] * 3 + [(False, "2 of 5 targets chosen correctly"), (True, "5 of 5 targets chosen correctly")],
}  # fmt: skip
ORBITAL_ANOMALY_PINNED = {
    42: [
        (True, "3 of 3 stages cleared"),
        (True, "2 of 2 stages cleared"),
        (False, "budget exceeded at stage 2 of 3"),
        (True, "5 of 5 stages cleared"),
        (True, "5 of 5 stages cleared"),
    ],
    0: [
        (True, "1 of 1 stages cleared"),
        (True, "1 of 1 stages cleared"),
        (False, "budget exceeded at stage 1 of 2"),
        (True, "2 of 2 stages cleared"),
        (True, "3 of 3 stages cleared"),
    ],
    7: [
        (True, "4 of 4 stages cleared"),
        (False, "budget exceeded at stage 1 of 2"),
        (True, "1 of 1 stages cleared"),
        (True, "1 of 1 stages cleared"),
        (True, "1 of 1 stages cleared"),
    ],
}
DRIVE_MODULE_REPAIR_PINNED = {
    42: [
        (True, "3 of 3 faults fixed"),
        (False, "budget exceeded with 4 of 5 faults fixed"),
        (True, "3 of 3 faults fixed"),
        (True, "4 of 4 faults fixed"),
        (False, "budget exceeded with 5 of 6 faults fixed"),
    ],
    7: [
        (True, "5 of 5 faults fixed"),
        (True, "2 of 2 faults fixed"),
        (True, "2 of 2 faults fixed"),
        (True, "5 of 5 faults fixed"),
        (False, "budget exceeded with 0 of 3 faults fixed"),
    ],
}
PINNED = [
    pytest.param(cls, seed, verdicts, id=f"{cls.name}-{seed}")
    for cls, table in [
        (SignalGame, SIGNAL_GAME_PINNED),
        (OrbitalAnomaly, ORBITAL_ANOMALY_PINNED),
        (DriveModuleRepair, DRIVE_MODULE_REPAIR_PINNED),
    ]
    for seed, verdicts in sorted(table.items())
]


@pytest.mark.parametrize(("cls", "seed", "verdicts"), PINNED)
def test_exact_verdicts_per_seed(
    cls: type[Scenario], seed: int, verdicts: list[tuple[bool, str]]
) -> None:
    run: Play = played(cls, preset(cls, seed=seed))
    assert run.verdicts() == verdicts
    assert [s.trigger for s in run.summaries] == ["settled"] * 5
