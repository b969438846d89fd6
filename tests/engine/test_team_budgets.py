"""Team budgets, a shared channel charged by speaker, refused sends, one-shot locks, reveals."""

from __future__ import annotations

from typing import Any

import pytest

from glossogen.eventlog import Verdict
from glossogen.scenario import (
    AgentSpec,
    ChannelSpec,
    RoundContext,
    ScriptedMove,
    ScriptedView,
    SubmissionBook,
)
from tests.engine._tiny import Tiny, by_agent, knobs, play

pytestmark = pytest.mark.timeout(30)

SHARED = (ChannelSpec("link", metered=True), ChannelSpec("chat", metered=False))


class Teams(Tiny):
    """Seats a1, a2 on team ``a`` and b1 on team ``b``, all on one shared metered ``link``."""

    def __init__(self, policy: Any, budgets: dict[str, int], **kw: Any) -> None:
        super().__init__(knobs(), policy, seats=("a1", "a2", "b1"), channels=SHARED, **kw)
        self.budgets = budgets
        self.team_exceeded: list[tuple[str, int]] = []
        self.revealed: list[list[str]] = []

    def agents(self) -> list[AgentSpec]:
        return [AgentSpec(s, "tester", s.upper(), team_id=s[0]) for s in self.seats]

    def team_budget_chars(self) -> dict[str, int]:
        return self.budgets

    def on_team_budget_exceeded(
        self, ctx: RoundContext, team_id: str, channel_id: str, used_chars: int
    ) -> None:
        self.team_exceeded.append((team_id, used_chars))

    def refuse_message(
        self, ctx: RoundContext, agent_id: str, channel_id: str, text: str
    ) -> str | None:
        return "no shouting on the link" if text.isupper() else None

    def reveal_results(self, ctx: RoundContext, verdicts: list[Verdict]) -> None:
        self.revealed.append([v.team_id for v in verdicts])
        ctx.notify("a1", "results", "the round's results")


def insists(*texts: str) -> Any:
    """Send each text on ``link`` in turn, sending again after a conflict, then stop."""

    def policy(view: ScriptedView) -> ScriptedMove:
        done = [r for r in view.tool_results("send_message") if r["status"] != "conflict"]
        if len(done) < len(texts):
            return ScriptedMove.call("send_message", channel_id="link", text=texts[len(done)])
        return ScriptedMove.finish()

    return policy


# a1 sends 30 and 50, a2 sends 40, b1 sends 25 and 20 (and a refused 4) on the one shared link.
EXCHANGE = by_agent(
    a1=insists("x" * 30, "y" * 50),
    a2=insists("z" * 40),
    b1=insists("w" * 25, "v" * 20, "LOUD"),
)


EXPECTED_A = [("a1", 30), ("a1", 80), ("a2", 120)]


def test_a_shared_link_charges_each_team_only_for_its_own_members():
    scenario = Teams(EXCHANGE, {"a": 100, "b": 60})
    played = play(scenario)
    link = played.of("message_sent", channel_id="link")
    charged = {}
    for m in link:
        charged.setdefault(m.charged_team_id, []).append((m.sender_id, m.budget_used_chars))
    # team a: 30 + 50 + 40 = 120 over its 100; team b: 25 + 20 = 45 of its 60
    assert charged["a"] == EXPECTED_A
    assert [(s, u) for s, u in charged["b"]] == [("b1", 25), ("b1", 45)]
    assert {m.budget_chars for m in link if m.charged_team_id == "a"} == {100}
    assert {m.budget_chars for m in link if m.charged_team_id == "b"} == {60}
    assert scenario.team_exceeded == [("a", 120)]


def test_each_team_is_warned_of_its_own_budget_only():
    played = play(Teams(EXCHANGE, {"a": 100, "b": 60}))
    warnings = [(w.team_id, w.threshold, w.used_chars) for w in played.of("budget_warning")]
    # a at 80 of 100 crosses 50% and 80%, at 120 the full mark; b at 45 of 60 only 50%
    assert warnings == [("a", 0.5, 80), ("a", 0.8, 80), ("a", 1.0, 120), ("b", 0.5, 45)]
    told = [(e.agent_id, e.text) for e in played.of("world_event_delivered", kind="budget_warning")]
    assert told == [
        ("a1", "Budget: 80 of 100 characters used this round (50% mark)."),
        ("a2", "Budget: 80 of 100 characters used this round (50% mark)."),
        ("a1", "Budget: 80 of 100 characters used this round (80% mark)."),
        ("a2", "Budget: 80 of 100 characters used this round (80% mark)."),
        ("a1", "Budget: 120 of 100 characters used this round (100% mark)."),
        ("a2", "Budget: 120 of 100 characters used this round (100% mark)."),
        ("b1", "Budget: 45 of 60 characters used this round (50% mark)."),
    ]


def test_a_team_without_a_budget_is_not_charged_on_the_metered_link():
    played = play(Teams(EXCHANGE, {"a": 100}))
    b = [m for m in played.of("message_sent", channel_id="link") if m.sender_id == "b1"]
    assert [(m.charged_chars, m.charged_team_id, m.budget_chars) for m in b] == [
        (0, None, None),
        (0, None, None),
    ]


def test_a_refused_send_is_not_sent_logged_or_charged_and_the_sender_is_told_why():
    played = play(Teams(EXCHANGE, {"a": 100, "b": 60}))
    assert played.results("b1", "send_message")[-1] == {
        "status": "refused",
        "reason": "no shouting on the link",
    }
    assert [m.text for m in played.of("message_sent", sender_id="b1")] == ["w" * 25, "v" * 20]


def test_results_are_revealed_once_after_the_verdicts_are_recorded():
    scenario = Teams(EXCHANGE, {"a": 100, "b": 60})
    played = play(scenario, rounds=2)
    assert scenario.revealed == [["team"], ["team"]]
    types = played.types(1)
    # The phase's end, in order: the verdict is recorded, then the results are told, once.
    assert types[types.index("round_ended") :] == [
        "round_ended",
        "round_result_recorded",
        "world_event_delivered",
        "round_completed",
    ]
    told = [e for e in played.of("world_event_delivered", kind="results")]
    assert [(e.round_number, e.agent_id) for e in told] == [(1, "a1"), (2, "a1")]


def test_the_default_gives_every_team_the_scenario_budget():
    scenario = Teams(EXCHANGE, {}, budget=70)
    assert super(Teams, scenario).team_budget_chars() == {"a": 70, "b": 70}
    assert Tiny(knobs(), EXCHANGE).team_budget_chars() == {}


# -- the submission book ------------------------------------------------------------------------

SEATS = [AgentSpec(s, "tester", s, team_id=s[0]) for s in ("a1", "a2", "b1", "b2")]


def test_all_must_submit_waits_for_every_member_and_refuses_a_second_submission():
    book: SubmissionBook[str] = SubmissionBook.of(SEATS, all_must_submit=True)
    assert book.teams == {"a": ("a1", "a2"), "b": ("b1", "b2")}
    assert book.claim("a1") is None
    assert not book.team_done("a")  # claimed, still being ruled on
    book.record("a1", "x")
    assert book.claim("a1") == "you already submitted this round; a submission is final"
    assert not book.team_done("a")
    assert book.claim("a2") is None
    book.record("a2", "y")
    assert book.team_done("a") and not book.all_done
    assert book.submitted("a") == [("a1", "x"), ("a2", "y")]


def test_without_all_must_submit_the_first_submission_locks_the_team():
    book: SubmissionBook[str] = SubmissionBook.of(SEATS, all_must_submit=False)
    assert book.claim("b2") is None
    assert book.claim("b1") == "b2 already submitted your team's answer; it is locked"
    book.record("b2", "z")
    assert book.team_done("b") and not book.team_done("a")
    assert book.claim("a1") is None
    book.record("a1", "w")
    assert book.all_done
