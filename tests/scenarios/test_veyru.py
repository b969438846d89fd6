"""End-to-end plays of veyru: scripted agents and judge, on a virtual clock."""

from __future__ import annotations

import re
from typing import Any

import pytest

from glossogen.eventlog import (
    InjectionDelivered,
    JudgeCalled,
    MessageSent,
    RoundResultRecorded,
    WorldEventDelivered,
)
from scenarios.veyru.events import VeyruCaseStarted, VeyruStabilizationJudged
from scenarios.veyru.motifs import FACES, MOTIFS, STAR
from scenarios.veyru.scenario import Veyru
from tests.scenarios._play import Play, play, played, preset


def _seed(seed: int) -> Play:
    """The scripted default run at ``seed`` (played once, read by several tests)."""
    return played(Veyru, preset(Veyru, seed=seed))


def _link(run: Play, round_number: int) -> list[MessageSent]:
    return [m for m in run.of(MessageSent, round_number) if m.channel_id == "link"]


def _transcript(run: Play) -> list[tuple[Any, ...]]:
    keep = ("agent_id", "sender_id", "text", "args", "success", "reason", "kind", "trigger")
    return [
        (e.event_type, e.round_number, e.phase, e.timestamp)
        + tuple(str(getattr(e, k, "")) for k in keep)
        for e in run.events
    ]


@pytest.fixture(scope="module")
def seed42() -> Play:
    return _seed(42)


def test_seed_42_default_verdicts(seed42: Play) -> None:
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
def test_pinned_verdicts_cover_every_failure_path(seed: int) -> None:
    assert _seed(seed).verdicts() == PINNED[seed]


def test_same_seed_same_run() -> None:
    first = play(Veyru, preset(Veyru, seed=3))
    assert _transcript(first) == _transcript(play(Veyru, preset(Veyru, seed=3)))


# characters sent on the link in each won round (the default budget is 150)
LINK_CHARS_OF_WON_ROUNDS = {
    0: {1: 124, 2: 78, 3: 83, 5: 41},
    1: {1: 83, 2: 37, 3: 37, 4: 78},
    42: {1: 116, 3: 113, 4: 73, 5: 45},
}


@pytest.mark.parametrize("seed", sorted(LINK_CHARS_OF_WON_ROUNDS))
def test_good_rounds_stay_within_the_link_budget(seed: int) -> None:
    run = _seed(seed)
    won = [s.round_number for s in run.summaries if s.verdicts[0].success]
    used = {n: sum(m.chars for m in _link(run, n)) for n in won}
    assert used == LINK_CHARS_OF_WON_ROUNDS[seed]
    for n in won:
        assert [m.charged_chars for m in _link(run, n)] == [m.chars for m in _link(run, n)]
        kinds = [e.kind for e in run.of(WorldEventDelivered, n)]
        assert "veyru_collapsed" not in kinds


def test_ramble_round_collapses_for_budget(seed42: Play) -> None:
    sent = _link(seed42, 2)
    assert [(m.sender_id, m.chars) for m in sent] == [("field_observer", 231)]
    collapsed = [e for e in seed42.of(WorldEventDelivered, 2) if e.kind == "veyru_collapsed"]
    assert sorted(e.agent_id for e in collapsed) == ["field_observer", "stabilization_engineer"]
    assert seed42.of(VeyruStabilizationJudged, 2) == []
    assert seed42.of(RoundResultRecorded, 2)[0].reason == "budget exceeded"


def test_unmapped_round_fails_on_the_wrong_procedure() -> None:
    run = _seed(1)
    case = run.of(VeyruCaseStarted, 5)[0]
    shown = case.stages[0]["motif_id"]
    own = next(m for m in MOTIFS if m.motif_id == shown).procedure.verb
    # the engineer names the shown motif's own procedure: the shift was forgotten
    assert own == "salt"
    assert [(m.sender_id, m.text) for m in _link(run, 5)] == [
        ("field_observer", "rings hollow, too light"),
        ("stabilization_engineer", "salt russet 11s L1"),
    ]
    (judged,) = run.of(VeyruStabilizationJudged, 5)
    assert (judged.stage, judged.success, judged.round_lost) == (1, False, True)
    assert judged.reason == "wrong procedure: the stage needed seal"
    lost = [e.agent_id for e in run.of(WorldEventDelivered, 5) if e.kind == "veyru_lost"]
    assert sorted(lost) == ["field_observer", "stabilization_engineer"]


def test_stages_are_revealed_one_by_one(seed42: Play) -> None:
    case = seed42.of(VeyruCaseStarted, 1)[0]
    assert [s["stage"] for s in case.stages] == [1, 2, 3]
    revealed = [e for e in seed42.of(WorldEventDelivered, 1) if e.kind == "stage_revealed"]
    assert [e.data["stage"] for e in revealed] == [2, 3]
    assert all(e.agent_id == "field_observer" for e in revealed)
    by_id = {m.motif_id: m for m in MOTIFS}
    for e, stage in zip(revealed, case.stages[1:], strict=True):
        assert by_id[stage["motif_id"]].symptoms in e.text
    engineer_briefing = [
        e for e in seed42.of(InjectionDelivered, 1) if e.agent_id == "stabilization_engineer"
    ][0]
    assert "Signs" not in engineer_briefing.text  # the engineer never sees the symptoms


@pytest.mark.parametrize(("seed", "calls"), [(0, 11), (1, 7), (42, 9)])
def test_judge_reads_actions_cold(seed: int, calls: int) -> None:
    codes = {m.motif_id for m in MOTIFS}
    names = {m.name for m in MOTIFS}
    run = _seed(seed)
    judged = run.of(JudgeCalled)
    assert len(judged) == calls == len(run.of(VeyruStabilizationJudged))  # one call a treatment
    for call in judged:
        instructions = call.instructions
        case = run.of(VeyruCaseStarted, call.round_number)[0]
        words = set(re.findall(r"[A-Za-z]+", instructions))
        assert not words & codes, instructions
        assert not any(name in instructions for name in names)
        assert "->" not in instructions and STAR not in instructions
        assert f"the {case.face} face" in instructions
        assert f"{case.hold_seconds} seconds" in instructions
        assert f"level {case.intensity_level}" in instructions
        assert call.question.startswith("As instructed: ")


def test_intern_preset_is_easier() -> None:
    knobs = preset(Veyru, "knobs_intern")
    default = preset(Veyru)
    easier = (knobs.round_budget_chars, knobs.max_stages, knobs.attempts_per_stage)
    assert easier == (300, 2, 2)
    assert (default.round_budget_chars, default.max_stages, default.attempts_per_stage) == (
        150,
        3,
        1,
    )
    run = play(Veyru, knobs)
    first = run.of(VeyruCaseStarted, 1)[0]
    assert first.veiled and len(first.stages) == 1
    assert all(k == v for k, v in first.remap.items())
    assert [len(c.stages) for c in run.of(VeyruCaseStarted)] == [1, 2, 1, 2, 1]
    assert run.verdicts() == [
        (True, "1 of 1 stages stabilized"),
        (False, "budget exceeded"),  # a ramble overruns even the doubled budget
        (True, "1 of 1 stages stabilized"),
        (True, "2 of 2 stages stabilized"),
        (True, "1 of 1 stages stabilized"),
    ]


def test_retry_recovers_a_forgotten_shift() -> None:
    run = play(Veyru, preset(Veyru, "knobs_intern", seed=1))
    judged = run.of(VeyruStabilizationJudged, 5)
    assert [(j.stage, j.attempt, j.success) for j in judged] == [
        (1, 1, False),
        (1, 2, True),
        (2, 1, True),
    ]
    assert run.verdicts()[4] == (True, "2 of 2 stages stabilized")


def test_faces_only_from_the_shell() -> None:
    run = play(Veyru, preset(Veyru, seed=5))
    faces = [c.face for c in run.of(VeyruCaseStarted)]
    assert faces == ["slate", "amber", "russet", "cobalt", "russet"]
    assert set(faces) <= set(FACES)
