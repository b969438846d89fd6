"""spot_the_difference: the scene generator, the rules, the scripted check, scripted plays."""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

import pytest
from pydantic import ValidationError

from glossogen.eventlog import (
    InjectionDelivered,
    JudgeCalled,
    MessageSent,
    RoundResultRecorded,
    ToolResultReceived,
    WorldEventDelivered,
)
from glossogen.knobs import load_config, resolve_knobs
from glossogen.scenario import ScriptedMove, ScriptedView, scenario_dir
from scenarios.spot_the_difference.events import (
    SpotTheDifferenceCaseStarted,
    SpotTheDifferenceRoundRanked,
    SpotTheDifferenceSubmissionJudged,
)
from scenarios.spot_the_difference.judging import check_items
from scenarios.spot_the_difference.knobs import SpotTheDifferenceKnobs
from scenarios.spot_the_difference.scenario import SpotTheDifference, rank
from scenarios.spot_the_difference.scene import (
    KINDS,
    Difference,
    SceneObject,
    decode,
    draw_case,
    region_of,
    scene_lines,
    token,
)
from tests.scenarios._play import Play, play, played, preset

# -- the generator ----------------------------------------------------------------------------


def _case(seed: int) -> Any:
    rng = random.Random(f"gen:{seed}")
    return draw_case(
        rng,
        grid_size=12,
        object_counts=[12, 15, 18],
        difference_count=1 + seed % 4,
        kinds=list(KINDS),
        kind_weights=[1.0] * 4,
    )


def test_every_case_of_500_seeds_is_uniquely_decodable_with_exactly_k_differences():
    kinds_seen: set[str] = set()
    for seed in range(500):
        case = _case(seed)
        g, k = case.grid_size, 1 + seed % 4
        assert len(case.differences) == k
        assert len(case.scene_a) in (12, 15, 18)
        a = [token(o, g) for o in case.scene_a]
        b = [token(o, g) for o in case.scene_b]
        (solution,) = decode(a, b)  # exactly one minimal set of operations ...
        assert len(solution) == k  # ... of exactly K operations
        planted = sorted((d.kind, *d.tokens(g)) for d in case.differences)
        assert sorted((o.kind, o.before, o.after) for o in solution) == planted
        same_kind = [(d.kind, d.tokens(g)) for d in case.differences]
        assert len(set(same_kind)) == k  # no two same-kind differences read alike
        for d in case.differences:
            kinds_seen.add(d.kind)
            if d.kind == "moved":
                assert d.before and d.after
                assert region_of(d.before.x, d.before.y, g) != region_of(d.after.x, d.after.y, g)
            assert not re.search(r"\d", d.description)
        assert len({(o.x, o.y) for o in case.scene_b}) == len(case.scene_b)
        assert not any(re.search(r"\d", line) for line in scene_lines(case.scene_a, g))
    assert kinds_seen == set(KINDS)


def test_cases_are_seeded():
    assert _case(7) == _case(7) and _case(7) != _case(8)


def test_decoding_reports_every_minimal_solution_when_a_case_is_ambiguous():
    # A holds two small teal combs in the top left; B turns one crimson and adds a teal one:
    # the changed comb could be either, but both readings are the same operations.
    a = [("small", "teal", "comb", "top left")] * 2
    b = [("small", "teal", "comb", "top left"), ("small", "crimson", "comb", "top left")]
    assert len(decode(a, b)) == 1
    # Ambiguous: a crimson comb left the top left, and in the top left a teal comb turned crimson
    # or the crimson one moved: two different minimal readings.
    a = [("small", "crimson", "comb", "top left"), ("small", "teal", "comb", "centre")]
    b = [("small", "crimson", "comb", "centre")]
    assert len(decode(a, b)) == 2


# -- knobs and presets ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "teams", "shared"),
    [("knobs_default", 2, False), ("knobs_single_team", 1, False), ("knobs_shared_link", 2, True)],
)
def test_presets_validate(name, teams, shared):
    data, _ = load_config(name, scenario_dir(SpotTheDifference))
    knobs = resolve_knobs(SpotTheDifferenceKnobs, data, {})
    assert (knobs.team_count, knobs.shared_link, knobs.round_budget_chars) == (teams, shared, -1)
    assert knobs.all_must_submit and knobs.grid_size == 12


def test_seats_and_channels_of_each_mode():
    def shape(name: str) -> tuple[list[str], list[tuple[str, bool, str, Any]]]:
        s = SpotTheDifference(preset(SpotTheDifference, name))
        return [a.agent_id for a in s.agents()], [
            (c.channel_id, c.metered, c.phase, c.members) for c in s.channels()
        ]

    left_a, right_a, left_b, right_b = (
        "viewer_left_a", "viewer_right_a", "viewer_left_b", "viewer_right_b"
    )  # fmt: skip
    assert shape("knobs_default") == (
        [left_a, right_a, left_b, right_b],
        [
            ("link_a", True, "main", (left_a, right_a)),
            ("postmortem_a", False, "postmortem", (left_a, right_a)),
            ("link_b", True, "main", (left_b, right_b)),
            ("postmortem_b", False, "postmortem", (left_b, right_b)),
        ],
    )
    assert shape("knobs_shared_link")[1] == [
        ("link", True, "main", None),
        ("postmortem_a", False, "postmortem", (left_a, right_a)),
        ("postmortem_b", False, "postmortem", (left_b, right_b)),
    ]
    assert shape("knobs_single_team") == (
        ["viewer_left", "viewer_right"],
        [
            ("link", True, "main", ("viewer_left", "viewer_right")),
            ("postmortem", False, "postmortem", ("viewer_left", "viewer_right")),
        ],
    )


# -- the scripted check and the ranking -------------------------------------------------------

G = 12
COMB = SceneObject(size="small", colour="teal", shape="comb", x=1, y=1)  # top left
DIFFS = [
    Difference(kind="attribute", before=COMB, after=COMB.model_copy(update={"colour": "amber"}), attribute="colour"),
    Difference(kind="moved", before=SceneObject(size="large", colour="ivory", shape="kite", x=6, y=6), after=SceneObject(size="large", colour="ivory", shape="kite", x=10, y=10)),
    Difference(kind="added", after=SceneObject(size="small", colour="olive", shape="wheel", x=10, y=1)),
    Difference(kind="removed", before=SceneObject(size="large", colour="violet", shape="acorn", x=1, y=10)),
]  # fmt: skip

CHECKS = [
    (["in the top left, the small teal comb is now amber"], [1], 0),
    (["the ivory kite moved from the centre to the bottom right"], [2], 0),
    (["an olive wheel appears in the top right"], [3], 0),
    (["the violet acorn in the bottom left is gone"], [4], 0),
    (["top left comb teal -> amber, at cell 1,1"], [], 1),  # a coordinate carries nothing
    (["the teal comb is now amber"], [], 1),  # no region: cannot tell which comb
    (["the ivory kite moved"], [], 1),  # where from and to are missing
    (["an olive wheel appears in the top left"], [], 1),  # wrong region
    (["the violet acorn in the bottom left is gone", "the violet acorn in the bottom left is missing"], [4], 1),
    (["the small teal comb is now amber", "a crimson spindle was removed from the centre"], [], 2),
]  # fmt: skip


@pytest.mark.parametrize(("items", "matched", "false_positives"), CHECKS)
def test_scripted_check(items, matched, false_positives):
    ruling = check_items(items, DIFFS, G)
    assert (ruling.matched, ruling.false_positives) == (matched, false_positives)


def test_a_full_answer_is_complete():
    items = [c[0][0] for c in CHECKS[:4]]
    ruling = check_items(items, DIFFS, G)
    assert ruling.complete(4) and ruling.reason == "all 4 differences stated, nothing false"


def test_one_planted_difference_is_named_in_the_singular():
    assert check_items([c[0][0] for c in CHECKS[:1]], DIFFS[:1], G).reason == (
        "the 1 difference stated, nothing false"
    )
    assert check_items(["a red cube vanished"], DIFFS[:1], G).reason == (
        "0 of 1 difference stated, 1 false positive(s)"
    )


def test_an_easy_round_verdict_names_its_one_difference_in_the_singular():
    knobs = preset(SpotTheDifference, "knobs_single_team", round_count=2, easy_round_numbers=[2], postmortem_enabled=False)  # fmt: skip
    assert _verdicts(play(SpotTheDifference, knobs))[1] == [
        ("team", True, "the 1 difference found, 301 characters")
    ]


def test_the_easy_rounds_and_a_budget_of_0_knobs_refuse_in_one_line():
    with pytest.raises(ValidationError) as refused:
        SpotTheDifferenceKnobs(round_count=4, easy_round_numbers=[2, 4, 2])
    assert [e["msg"] for e in refused.value.errors()] == [
        "Value error, easy_round_numbers [2, 4, 2]: round(s) [2] listed twice"
    ]


def test_ranking_with_ties_shares_the_rank_and_skips_after_it():
    assert rank({"a": 310, "b": 310, "c": 400}, {"a": True, "b": True, "c": True}) == [
        {"team_id": "a", "eligible": True, "chars": 310, "rank": 1},
        {"team_id": "b", "eligible": True, "chars": 310, "rank": 1},
        {"team_id": "c", "eligible": True, "chars": 400, "rank": 3},
    ]
    assert [e["rank"] for e in rank({"a": 90, "b": 300}, {"a": False, "b": True})] == [None, 1]
    assert [e["rank"] for e in rank({"a": 90, "b": 300}, {"a": False, "b": False})] == [None, None]


# -- whole scripted plays ---------------------------------------------------------------------


def _verdicts(run: Play) -> list[list[tuple[str, bool, str]]]:
    rows: dict[int, list[tuple[str, bool, str]]] = {}
    for e in run.of(RoundResultRecorded):
        rows.setdefault(e.round_number, []).append((e.team_id, e.success, e.reason))
    return [rows[n] for n in sorted(rows)]


def _ranked(run: Play) -> list[tuple[list[str], list[tuple[int, int | None]]]]:
    return [
        (e.winners, [(t["chars"], t["rank"]) for t in e.teams])
        for e in run.of(SpotTheDifferenceRoundRanked)
    ]


@pytest.fixture(scope="module")
def two_teams():
    return played(SpotTheDifference, preset(SpotTheDifference))


@pytest.fixture(scope="module")
def shared():
    return play(SpotTheDifference, preset(SpotTheDifference, "knobs_shared_link"))


TWO_TEAMS_42 = [
    [("a", True, "all 2 differences found, 583 characters"), ("b", False, "viewer_left_b: 1 of 2 differences found, 0 false positive(s)")],
    [("a", True, "all 4 differences found, 553 characters"), ("b", True, "all 4 differences found, 782 characters")],
    [("a", True, "all 3 differences found, 404 characters"), ("b", True, "all 3 differences found, 544 characters")],
    [("a", True, "all 4 differences found, 551 characters"), ("b", True, "all 4 differences found, 765 characters")],
    [("a", True, "all 3 differences found, 537 characters"), ("b", True, "all 3 differences found, 384 characters")],
]  # fmt: skip


def test_exact_verdicts_and_ranking_two_teams_seed_42(two_teams):
    assert _verdicts(two_teams) == TWO_TEAMS_42
    assert _ranked(two_teams) == [
        (["a"], [(583, 1), (327, None)]),
        (["a"], [(553, 1), (782, 2)]),
        (["a"], [(404, 1), (544, 2)]),
        (["a"], [(551, 1), (765, 2)]),
        (["b"], [(537, 2), (384, 1)]),
    ]
    assert [s.trigger for s in two_teams.summaries] == ["settled"] * 5


def test_shared_link_plays_the_same_race_on_one_channel(shared):
    assert _verdicts(shared) == TWO_TEAMS_42
    assert {m.channel_id for m in shared.of(MessageSent) if m.phase == "main"} == {"link"}
    assert {m.channel_id for m in shared.of(MessageSent) if m.phase == "postmortem"} == {
        "postmortem_a", "postmortem_b"
    }  # fmt: skip


def test_exact_verdicts_single_team_seed_42():
    run = play(SpotTheDifference, preset(SpotTheDifference, "knobs_single_team"))
    assert _verdicts(run) == [
        [("team", False, "viewer_left: 1 of 2 differences found, 0 false positive(s)")],
        [("team", True, "all 4 differences found, 553 characters")],
        [("team", True, "all 3 differences found, 404 characters")],
        [("team", True, "all 4 differences found, 765 characters")],
        [("team", True, "all 3 differences found, 537 characters")],
    ]
    assert _ranked(run)[:2] == [([], [(514, None)]), (["team"], [(553, 1)])]


ROUND_2_NEWS = (  # what viewer_left_a is told as round 2 of seed 1 opens
    'Round 2 of 3. Last round team a and team b tied for the win with 422 characters. Your scene A holds 12 objects. There are exactly 3 differences between the scenes this round.\n\n'
    '- a small violet lantern in the top centre, with a small violet spindle to its right and a small ivory spindle below it\n'
    '- a small violet spindle in the top right, with a small violet lantern to its left and a large crimson lantern below it\n'
    '- a small ivory lantern in the middle left, with a small violet kite to its right and a small violet spindle to its right\n'
    '- a small violet kite in the middle left, with a small ivory lantern to its left and a small violet spindle to its right\n'
    '- a small ivory spindle in the centre, with a small violet spindle to its left and a large crimson lantern to its right\n'
    '- a small violet spindle in the centre, with a small ivory spindle to its right and a small violet kite to its left\n'
    '- a large crimson kite in the middle right, with a large crimson lantern above it and a small ivory spindle to its left\n'
    '- a large crimson lantern in the middle right, with a large crimson kite below it and a small ivory spindle to its left\n'
    '- a large ivory kite in the bottom centre, with a small ivory spindle to its right and a small crimson lantern to its right\n'
    '- a small crimson lantern in the bottom right, with a small violet lantern to its right and a small ivory spindle to its left\n'
    '- a small ivory spindle in the bottom right, with a small crimson lantern to its right and a large ivory kite to its left\n'
    '- a small violet lantern in the bottom right, with a small crimson lantern to its left and a small ivory spindle to its left'
)  # fmt: skip


def test_tied_teams_both_win_seed_1():
    run = play(SpotTheDifference, preset(SpotTheDifference, seed=1, round_count=3, postmortem_enabled=False))  # fmt: skip
    assert _ranked(run) == [
        (["a", "b"], [(422, 1), (422, 1)]),
        (["b"], [(526, None), (584, 1)]),
        (["b"], [(627, 2), (481, 1)]),
    ]
    news = [e.text for e in run.of(InjectionDelivered, 2) if e.agent_id == "viewer_left_a"][0]
    assert news == ROUND_2_NEWS


def test_on_a_shared_link_each_team_is_charged_for_its_own_members_only():
    knobs = preset(SpotTheDifference, "knobs_shared_link", round_count=1, round_budget_chars=2000)
    run = play(SpotTheDifference, knobs)
    link = [m for m in run.of(MessageSent) if m.channel_id == "link"]
    used: dict[str, int] = {"a": 0, "b": 0}
    for m in link:
        team = m.sender_id[-1]
        used[team] += m.chars
        assert (m.charged_team_id, m.charged_chars, m.budget_used_chars, m.budget_chars) == (
            team, m.chars, used[team], 2000
        )  # fmt: skip
    assert [(m.sender_id, m.chars) for m in link] == [
        ("viewer_left_a", 460), ("viewer_right_a", 123), ("viewer_left_b", 273), ("viewer_right_b", 123),
    ]  # fmt: skip
    assert used == {"a": 460 + 123, "b": 273 + 123}
    (ranked,) = run.of(SpotTheDifferenceRoundRanked)
    assert [(t["team_id"], t["chars"]) for t in ranked.teams] == [("a", 583), ("b", 396)]


def test_the_answer_is_told_only_when_the_round_ends(two_teams):
    submitted = [
        e.result for e in two_teams.of(ToolResultReceived, 1) if e.tool_name == "submit_differences"
    ]
    assert submitted == [{"status": "submitted", "note": "your answer is recorded; its result is told when the round ends"}] * 4  # fmt: skip
    ending = (
        "SpotTheDifferenceSubmissionJudged", "RoundEnded", "RoundResultRecorded",
        "SpotTheDifferenceRoundRanked", "WorldEventDelivered", "PostmortemStarted",
    )  # fmt: skip
    order = [type(e).__name__ for e in two_teams.events if e.round_number == 1 and type(e).__name__ in ending]  # fmt: skip
    assert order == (
        ["SpotTheDifferenceSubmissionJudged"] * 4
        + ["RoundEnded", "RoundResultRecorded", "RoundResultRecorded", "SpotTheDifferenceRoundRanked"]
        + ["WorldEventDelivered"] * 4
        + ["PostmortemStarted"]
    )  # fmt: skip
    results = [e for e in two_teams.of(WorldEventDelivered, 1) if e.kind == "round_results"]
    assert [e.agent_id for e in results] == ["viewer_left_a", "viewer_right_a", "viewer_left_b", "viewer_right_b"]  # fmt: skip
    by = {e.agent_id: e.text for e in results}
    assert by["viewer_left_b"] == (
        "Your answer: 1 matched, 0 false. team a: 583 characters, rank 1; "
        "team b: 327 characters, not eligible."
    )


JUDGE_ROUND_1 = (
    "Two people compared two pictures of the same tabletop and listed what differs between "
    "them. The true differences, numbered, are:\n\n"
    "1. Added in scene B: a large crimson spindle in the centre, with a large olive kite below "
    "it and a small ivory acorn above it.\n"
    "2. Moved: a large violet kite in the top right, with a small ivory acorn to its left and a "
    "small ivory kite to its left, is in the bottom right in scene B.\n\n"
    "Their answer lists items, numbered, at the end. Decide which true differences the answer "
    "states.\n\n"
    "Read every item as a plain reader who knows nothing else about the pictures. An item states "
    "a true difference when it names the same object (its region and what it looks like) and the "
    "same change. An item carried only by codes, grid positions, numbers or shorthand states "
    "nothing. An item that could mean more than one of the true differences, or none, is a false "
    "positive; so is a second item for a difference already stated.\n\n"
    "Answer with the numbers of the true differences the answer states, the count of false "
    "positives, and one sentence of reason.\n\n"
    "The answer:"
)


def test_each_member_answer_is_judged_once_against_the_planted_differences(two_teams):
    judged = two_teams.of(SpotTheDifferenceSubmissionJudged, 1)
    assert [(j.agent_id, j.matched, j.false_positives, j.complete) for j in judged] == [
        ("viewer_right_a", [1, 2], 0, True), ("viewer_right_b", [1], 0, False),
        ("viewer_left_a", [1, 2], 0, True), ("viewer_left_b", [1], 0, False),
    ]  # fmt: skip
    calls = two_teams.of(JudgeCalled, 1)
    assert [call.instructions for call in calls] == [JUDGE_ROUND_1] * 4
    (case,) = two_teams.of(SpotTheDifferenceCaseStarted, 1)
    planted = "".join(f"{n}. {d['description']}\n" for n, d in enumerate(case.differences, start=1))
    assert f"are:\n\n{planted}\n" in JUDGE_ROUND_1  # the case's own descriptions, numbered
    assert [call.detail["false_positives"] for call in calls] == [0] * 4


def test_an_over_budget_team_is_not_eligible():
    run = play(SpotTheDifference, preset(SpotTheDifference, round_count=1, round_budget_chars=400))
    assert _verdicts(run) == [
        [("a", False, "over budget: 583 of 400 characters"), ("b", True, "all 2 differences found, 396 characters")],
    ]  # fmt: skip
    told = [e.agent_id for e in run.of(WorldEventDelivered) if e.kind == "over_budget"]
    assert told == ["viewer_left_a", "viewer_right_a"]


# -- one shot ---------------------------------------------------------------------------------


class Twice(SpotTheDifference):
    """Right viewers submit twice; left viewers submit once when ``left_submits``, else never."""

    left_submits = True

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        wanted = 2 if "right" in view.agent_id else int(self.left_submits)
        if view.phase == "main" and len(view.tool_results("submit_differences")) < wanted:
            return ScriptedMove.call("submit_differences", differences=["a new teal comb appears in the centre"])  # fmt: skip
        return ScriptedMove.finish()


def _results(run: Play, agent_id: str) -> list[dict[str, Any]]:
    return [
        e.result
        for e in run.of(ToolResultReceived)
        if e.tool_name == "submit_differences" and e.agent_id == agent_id
    ]


class RightOnly(Twice):
    left_submits = False


def test_a_second_submission_is_refused_and_not_judged():
    run = asyncio.run(Play(RightOnly, preset(SpotTheDifference, "knobs_single_team", round_count=1, postmortem_enabled=False)).run())  # fmt: skip
    assert [r["status"] for r in _results(run, "viewer_right")] == ["submitted", "refused"]
    assert _results(run, "viewer_right")[1]["reason"] == (
        "you already submitted this round; a submission is final"
    )
    assert len(run.of(SpotTheDifferenceSubmissionJudged)) == 1  # the refused one is not judged
    assert [s.trigger for s in run.summaries] == ["all_idle"]  # the left viewer never answered
    assert run.summaries[0].verdicts[0].reason == "no answer from viewer_left"
    told = [(e.agent_id, e.text) for e in run.of(WorldEventDelivered) if e.kind == "round_results"]
    assert told == [
        ("viewer_left", "You did not submit. team team: 0 characters, not eligible."),
        ("viewer_right", "Your answer: 0 matched, 1 false. team team: 0 characters, not eligible."),
    ]


def test_without_all_must_submit_the_first_answer_locks_the_team():
    knobs = preset(SpotTheDifference, "knobs_single_team", round_count=1, postmortem_enabled=False, all_must_submit=False)  # fmt: skip
    run = asyncio.run(Play(Twice, knobs).run())
    assert _results(run, "viewer_left") == [
        {"status": "submitted", "note": "your answer is recorded; its result is told when the round ends"}
    ]  # fmt: skip
    assert _results(run, "viewer_right") == [
        {"status": "refused", "reason": "viewer_left already submitted your team's answer; it is locked"}
    ]  # fmt: skip
    assert len(run.of(SpotTheDifferenceSubmissionJudged)) == 1
    assert [s.trigger for s in run.summaries] == ["settled"]
