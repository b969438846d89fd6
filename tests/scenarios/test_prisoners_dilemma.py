"""The prisoners' dilemma's own rules: the payoff table, a missing move, the knobs' ordering."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from glossogen.eventlog import Event
from scenarios.prisoners_dilemma.events import MoveLocked, RoundScored
from scenarios.prisoners_dilemma.scenario import PrisonersDilemma, PrisonersDilemmaKnobs

# Not the defaults (5, 3, 1, 0): every payoff differs, so a swapped cell of the table shows.
PAYOFFS = dict(payoff_temptation=8, payoff_reward=5, payoff_punishment=2, payoff_sucker=1)


class Round:
    """The scenario contract's round context, recording what the scenario emits."""

    phase = "main"

    def __init__(self, knobs: PrisonersDilemmaKnobs) -> None:
        self.knobs = knobs
        self.round_number = 1
        self.events: list[Event] = []
        self.briefed: list[tuple[str, str]] = []
        self.out: list[str] = []  # seats the turn limit took out

    def out_of_turns(self) -> list[str]:
        return self.out

    def now(self) -> float:
        return 0.0

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        self.briefed.append((agent_id, text))

    def notify(self, agent_id: str, kind: str, text: str, data: Any = None) -> None:
        raise AssertionError("the dilemma notifies no one mid-round")

    async def judge(self, *args: Any) -> Any:
        raise AssertionError("the dilemma rules its rounds itself")

    def rng(self, *key: object) -> random.Random:
        return random.Random(str(key))


def _round(moves: dict[str, str]) -> tuple[PrisonersDilemma, Round, list[dict[str, Any]]]:
    """Start round 1 and lock in ``moves`` through the scenario's own ``lock_in`` tool."""
    knobs = PrisonersDilemmaKnobs(**PAYOFFS)
    scenario = PrisonersDilemma(knobs)
    ctx = Round(knobs)
    scenario.start_round(ctx)  # type: ignore[arg-type]
    (lock_in,) = scenario.tools()
    answers = []
    for agent_id, move in moves.items():
        tool_ctx = SimpleNamespace(deps=SimpleNamespace(agent_id=agent_id, round=ctx))
        answers.append(asyncio.run(lock_in.function(tool_ctx, move)))  # type: ignore[call-arg]
    return scenario, ctx, answers


@pytest.mark.parametrize(
    ("a", "b", "payoffs", "success"),
    [
        ("cooperate", "cooperate", (5, 5), True),  # R, R
        ("cooperate", "defect", (1, 8), False),  # S, T
        ("defect", "cooperate", (8, 1), False),  # T, S
        ("defect", "defect", (2, 2), False),  # P, P
    ],
)
def test_each_pair_of_moves_scores_its_cell_of_the_payoff_table(
    a: str, b: str, payoffs: tuple[int, int], success: bool
) -> None:
    scenario, ctx, answers = _round({"player_a": a, "player_b": b})
    assert answers == [{"status": "locked", "move": a}, {"status": "locked", "move": b}]
    assert scenario.is_settled() is True
    (verdict,) = scenario.verdicts(ctx)  # type: ignore[arg-type]
    assert (verdict.team_id, verdict.success, verdict.reason) == (
        "team",
        success,
        f"player_a {a}, player_b {b}",
    )
    locked = [(e.agent_id, e.move) for e in ctx.events if isinstance(e, MoveLocked)]
    assert locked == [("player_a", a), ("player_b", b)]
    (scored,) = [e for e in ctx.events if isinstance(e, RoundScored)]
    assert (scored.moves, scored.missing, scored.payoffs) == (
        {"player_a": a, "player_b": b},
        [],
        {"player_a": payoffs[0], "player_b": payoffs[1]},
    )


@pytest.mark.parametrize(
    ("moves", "missing", "payoffs", "reason"),
    [
        (
            {"player_a": "cooperate"},
            ["player_b"],
            {"player_a": 1, "player_b": 8},  # a cooperated against b's counted defect
            "player_a cooperate, player_b defect (missing)",
        ),
        (
            {},
            ["player_a", "player_b"],
            {"player_a": 2, "player_b": 2},
            "player_a defect (missing), player_b defect (missing)",
        ),
    ],
)
def test_a_move_not_locked_in_counts_as_defect(
    moves: dict[str, str], missing: list[str], payoffs: dict[str, int], reason: str
) -> None:
    scenario, ctx, _ = _round(moves)
    assert scenario.is_settled() is False
    (verdict,) = scenario.verdicts(ctx)  # type: ignore[arg-type]
    assert (verdict.success, verdict.reason) == (False, reason)
    (scored,) = [e for e in ctx.events if isinstance(e, RoundScored)]
    assert (scored.missing, scored.payoffs) == (missing, payoffs)
    assert [scored.moves[p] for p in missing] == ["defect"] * len(missing)


def test_a_move_missing_because_the_turn_limit_cut_its_seat_off_pays_nobody() -> None:
    scenario, ctx, _ = _round({"player_a": "cooperate"})
    ctx.out = ["player_b"]
    (verdict,) = scenario.verdicts(ctx)  # type: ignore[arg-type]
    # The engine records the round void (turn_limit); the score says the move was missing.
    assert (verdict.success, verdict.reason) == (
        False,
        "player_a cooperate, player_b defect (missing)",
    )
    (scored,) = [e for e in ctx.events if isinstance(e, RoundScored)]
    assert (scored.missing, scored.payoffs) == (["player_b"], {})


def test_a_seat_out_of_turns_that_locked_in_before_is_paid() -> None:
    scenario, ctx, _ = _round({"player_a": "cooperate", "player_b": "defect"})
    ctx.out = ["player_b"]  # its last request was its lock-in: the round settled, it counts
    scenario.verdicts(ctx)  # type: ignore[arg-type]
    (scored,) = [e for e in ctx.events if isinstance(e, RoundScored)]
    assert (scored.missing, scored.payoffs) == ([], {"player_a": 1, "player_b": 8})


def test_a_second_lock_in_is_refused_and_the_first_move_stands() -> None:
    scenario, ctx, answers = _round({"player_a": "cooperate"})
    (lock_in,) = scenario.tools()
    again = SimpleNamespace(deps=SimpleNamespace(agent_id="player_a", round=ctx))
    answer = asyncio.run(lock_in.function(again, "defect"))  # type: ignore[call-arg]
    assert answer == {"status": "error", "reason": "you already locked in 'cooperate'"}
    assert [e.move for e in ctx.events if isinstance(e, MoveLocked)] == ["cooperate"]


def test_each_round_starts_with_no_moves_and_briefs_both_players() -> None:
    scenario, ctx, _ = _round({"player_a": "defect", "player_b": "defect"})
    ctx.round_number = 2
    scenario.start_round(ctx)  # type: ignore[arg-type]
    assert scenario.is_settled() is False
    assert [who for who, _ in ctx.briefed] == ["player_a", "player_b"] * 2
    assert ctx.briefed[-1][1] == (
        "Round 2 of 5 begins. Talk on 'table' if you wish, then lock in your move."
    )


@pytest.mark.parametrize(
    ("t", "r", "p", "s", "message"),
    [
        (7, 3, 1, 0, "payoffs must satisfy 2*reward > temptation + sucker (got 2*3 <= 7+0)"),
        (6, 3, 1, 0, "payoffs must satisfy 2*reward > temptation + sucker (got 2*3 <= 6+0)"),
        (
            3,
            5,
            1,
            0,
            "payoffs must satisfy temptation > reward > punishment > sucker (got 3, 5, 1, 0)",
        ),
        (
            5,
            3,
            1,
            1,
            "payoffs must satisfy temptation > reward > punishment > sucker (got 5, 3, 1, 1)",
        ),
    ],
)
def test_payoffs_outside_the_dilemma_are_refused(
    t: int, r: int, p: int, s: int, message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        PrisonersDilemmaKnobs(
            payoff_temptation=t, payoff_reward=r, payoff_punishment=p, payoff_sucker=s
        )
    (error,) = refused.value.errors()
    assert error["msg"] == f"Value error, {message}"


def test_the_smallest_dilemma_is_accepted() -> None:
    # 2R = 6 > T + S = 5: one point inside the bound the 6, 3, 1, 0 case above sits on.
    knobs = PrisonersDilemmaKnobs(
        payoff_temptation=5, payoff_reward=3, payoff_punishment=1, payoff_sucker=0
    )
    assert (knobs.payoff_temptation, knobs.payoff_reward) == (5, 3)
