"""End-to-end plays of veyru: scripted agents and judge, on a virtual clock."""

import asyncio
import json
import re
from datetime import UTC, datetime

import pytest

from glossogen.engine import RunEngine, RunSetup, VirtualClock, resolve_judge, resolve_seats
from glossogen.eventlog import JudgeCalled, event_adapter
from glossogen.scenario import load_scenario, scenario_dir
from scenarios.veyru.motifs import FACES, MOTIFS, STAR
from scenarios.veyru.scenario import Veyru

START = datetime(2026, 1, 1, tzinfo=UTC)
PRESETS = scenario_dir(Veyru)


def preset(name="knobs_default", **overrides):
    base = json.loads((PRESETS / f"{name}.json").read_text())
    return Veyru.knobs_model.model_validate({**base, **overrides})


class Play:
    """One finished run: round summaries and every event (each judge call's instructions among them)."""

    def __init__(self, knobs):
        self.knobs = knobs
        self.scenario = Veyru(knobs)
        self.events = []
        self.summaries = []

    async def _run(self):
        seats = resolve_seats(self.scenario, self.knobs, "scripted", "scripted")
        judge = resolve_judge(self.scenario, self.knobs, seats, "scripted")
        setup = RunSetup(
            "veyru/test", self.scenario, self.knobs, "scripted", "scripted", seats, judge
        )
        engine = RunEngine(setup, self.events.append, VirtualClock(START))
        engine.start()
        for n in range(1, self.knobs.round_count + 1):
            self.summaries.append(await engine.play_round(n))

    @property
    def judge_calls(self):
        """(round, question, instructions) of each judge call, as ``judge_called`` logs it."""
        return [
            (e.round_number, e.question, e.instructions)
            for e in self.events
            if isinstance(e, JudgeCalled)
        ]

    def verdicts(self):
        return [(s.verdicts[0].success, s.verdicts[0].reason) for s in self.summaries]

    def of(self, event_type, round_number=None):
        return [
            e
            for e in self.events
            if e.event_type == event_type and round_number in (None, e.round_number)
        ]

    def link_messages(self, round_number):
        return [m for m in self.of("message_sent", round_number) if m.channel_id == "link"]

    def transcript(self):
        keep = ("agent_id", "sender_id", "text", "args", "success", "reason", "kind", "trigger")
        return [
            (e.event_type, e.round_number, e.phase, e.timestamp)
            + tuple(str(getattr(e, k, "")) for k in keep)
            for e in self.events
        ]


def play(knobs):
    run = Play(knobs)
    asyncio.run(run._run())
    return run


@pytest.fixture(scope="module")
def seed42():
    return play(preset())


def test_entry_point_loads_the_class_and_registers_events(seed42):
    assert load_scenario("veyru") is Veyru
    adapter = event_adapter()
    own = [e for e in seed42.events if e.event_type.startswith("veyru_")]
    assert {e.event_type for e in own} == {"veyru_case_started", "veyru_stabilization_judged"}
    for event in own:
        back = adapter.validate_python(event.model_dump(mode="json"))
        assert type(back) is type(event) and back == event


def test_seed_42_default_verdicts(seed42):
    assert seed42.verdicts() == [
        (True, "3 of 3 stages stabilized"),
        (False, "budget exceeded"),
        (True, "3 of 3 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
    ]
    assert [s.trigger for s in seed42.summaries] == ["settled"] * 5
    assert seed42.scenario.misplayed_rounds() == frozenset({2})


PINNED = {
    0: [
        (True, "3 of 3 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (False, "wrong treatment at stage 3 of 3 (wrong face: needed jade, got russet)"),
        (True, "1 of 1 stages stabilized"),
    ],
    1: [
        (True, "2 of 2 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (False, "wrong treatment at stage 1 of 2 (wrong procedure: the stage needed seal)"),
    ],
    7: [
        (True, "2 of 2 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
        (True, "3 of 3 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (False, "budget exceeded"),
    ],
}


@pytest.mark.parametrize("seed", sorted(PINNED))
def test_pinned_verdicts_cover_every_failure_path(seed):
    assert play(preset(seed=seed)).verdicts() == PINNED[seed]


def test_same_seed_same_run():
    assert play(preset(seed=3)).transcript() == play(preset(seed=3)).transcript()


def test_good_rounds_stay_within_the_link_budget():
    for seed in (0, 1, 42):
        run = play(preset(seed=seed))
        for summary in run.summaries:
            if not summary.verdicts[0].success:
                continue
            sent = run.link_messages(summary.round_number)
            assert sent, "a won round used the link"
            assert sum(m.chars for m in sent) <= 150
            assert all(m.charged_chars == m.chars for m in sent)
            assert not run.of("world_event_delivered", summary.round_number) or all(
                e.kind != "veyru_collapsed"
                for e in run.of("world_event_delivered", summary.round_number)
            )


def test_ramble_round_collapses_for_budget(seed42):
    sent = seed42.link_messages(2)
    assert len(sent) == 1 and sent[0].sender_id == "field_observer" and sent[0].chars > 150
    collapsed = [e for e in seed42.of("world_event_delivered", 2) if e.kind == "veyru_collapsed"]
    assert sorted(e.agent_id for e in collapsed) == ["field_observer", "stabilization_engineer"]
    assert not seed42.of("veyru_stabilization_judged", 2)
    assert seed42.of("round_result_recorded", 2)[0].reason == "budget exceeded"


def test_unmapped_round_fails_on_the_wrong_procedure():
    run = play(preset(seed=1))
    case = run.of("veyru_case_started", 5)[0]
    shown = case.stages[0]["motif_id"]
    answer = run.link_messages(5)[1]
    assert answer.sender_id == "stabilization_engineer"
    own = next(m for m in MOTIFS if m.motif_id == shown).procedure.verb
    assert answer.text.startswith(f"{own} ")  # the shift was forgotten
    (judged,) = run.of("veyru_stabilization_judged", 5)
    assert (judged.stage, judged.success, judged.round_lost) == (1, False, True)
    assert judged.reason == "wrong procedure: the stage needed seal"
    lost = [e.agent_id for e in run.of("world_event_delivered", 5) if e.kind == "veyru_lost"]
    assert sorted(lost) == ["field_observer", "stabilization_engineer"]


def test_stages_are_revealed_one_by_one(seed42):
    case = seed42.of("veyru_case_started", 1)[0]
    assert [s["stage"] for s in case.stages] == [1, 2, 3]
    revealed = [e for e in seed42.of("world_event_delivered", 1) if e.kind == "stage_revealed"]
    assert [e.data["stage"] for e in revealed] == [2, 3]
    assert all(e.agent_id == "field_observer" for e in revealed)
    by_id = {m.motif_id: m for m in MOTIFS}
    for e, stage in zip(revealed, case.stages[1:], strict=True):
        assert by_id[stage["motif_id"]].symptoms in e.text
    engineer_briefing = [
        e for e in seed42.of("injection_delivered", 1) if e.agent_id == "stabilization_engineer"
    ][0]
    assert "Signs" not in engineer_briefing.text  # the engineer never sees the symptoms


def test_judge_reads_actions_cold():
    codes = {m.motif_id for m in MOTIFS}
    names = {m.name for m in MOTIFS}
    for seed in (0, 1, 42):
        run = play(preset(seed=seed))
        assert run.judge_calls
        for round_number, question, instructions in run.judge_calls:
            case = run.of("veyru_case_started", round_number)[0]
            words = set(re.findall(r"[A-Za-z]+", instructions))
            assert not words & codes, instructions
            assert not any(name in instructions for name in names)
            assert "->" not in instructions and STAR not in instructions
            assert f"the {case.face} face" in instructions
            assert f"{case.hold_seconds} seconds" in instructions
            assert f"level {case.intensity_level}" in instructions
            assert question.startswith("As instructed: ")


def test_intern_preset_is_easier():
    knobs = preset("knobs_intern")
    default = preset()
    assert knobs.round_budget_chars > default.round_budget_chars
    assert knobs.max_stages < default.max_stages
    assert knobs.attempts_per_stage > default.attempts_per_stage
    run = play(knobs)
    first = run.of("veyru_case_started", 1)[0]
    assert first.veiled and len(first.stages) == 1
    assert all(k == v for k, v in first.remap.items())
    assert all(len(c.stages) <= 2 for c in run.of("veyru_case_started"))
    assert run.verdicts() == [
        (True, "1 of 1 stages stabilized"),
        (False, "budget exceeded"),  # a ramble overruns even the doubled budget
        (True, "1 of 1 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
    ]


def test_retry_recovers_a_forgotten_shift():
    run = play(preset("knobs_intern", seed=1))
    judged = run.of("veyru_stabilization_judged", 5)
    assert [(j.stage, j.attempt, j.success) for j in judged] == [
        (1, 1, False),
        (1, 2, True),
        (2, 1, True),
    ]
    assert run.verdicts()[4] == (True, "2 of 2 stages stabilized")


def test_faces_only_from_the_shell():
    run = play(preset(seed=5))
    assert {c.face for c in run.of("veyru_case_started")} <= set(FACES)
