"""40-round runs over real HTTP whose two seats reach ``--max-agent-turns`` in different rounds.

Each run is played through the launch path ``glossogen run`` takes (:func:`glossogen.testing.play`)
against the stub OpenAI Chat Completions server on loopback (a self-hosted model), on the virtual clock, postmortems off. Every seat
answers from the conversation its request sent, so each spends a fixed number of requests a
round whatever order the two seats' HTTP answers come back in:

- prisoners_dilemma: player_a reads 'table' once, locks in cooperate and says so (3 requests);
  player_b reads 'table' three times and locks in cooperate (4: its lock-in settles the round,
  so its next request is cut off before it is counted). With 118 requests each, player_b is
  cut off after its second read of round 30 (4 x 29 + 2 = 118), before its move; alone,
  player_a plays on at 3 a round and is cut off after its read of round 40 (3 x 39 + 1 = 118).
- veyru (one stage a round, one attempt, its judge an OpenAI model on the same stub ruling
  every treatment a success): the field observer reads 'link' and applies a treatment (2 requests; the
  treatment settles the round), the stabilization engineer answers its briefing (1). With 39
  each, the observer is cut off after its read of round 20 (2 x 19 + 1 = 39), before its
  treatment; the engineer, 1 a round, is refused its first request of round 40.

A round a seat was cut off in before it settled, and every round after while the seat is out,
is void (``turn_limit``): never lost, no payoff, left out of the win rate by evaluate and void in
the export. The last cap leaves nobody to play: the run ends ``incomplete`` after round 40.
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any, TypeVar

import pytest

from glossogen.cli._progress import RunProgress
from glossogen.evaluation import plan_evaluation, score_all, write_outcomes
from glossogen.eventlog import AgentTurnLimitReached, Event, RoundEnded, RunView
from glossogen.export import RunIdSelection, select_runs, write_tables
from glossogen.testing import play
from scenarios.prisoners_dilemma.events import RoundScored
from tests.fixtures.model_stubs import RecordedRequest, Responder, StubModelServer, StubReply
from tests.fixtures.winning_players import seat_of

pytestmark = pytest.mark.timeout(600)

ROUNDS = 40
E = TypeVar("E", bound=Event)


def _since(req: RecordedRequest, marker: str) -> str:
    """The conversation ``req`` sent, from the last occurrence of ``marker`` on (JSON text)."""
    sent = json.dumps(req.messages)
    return sent[sent.rfind(marker) :]


def _called(tail: str, tool: str) -> int:
    return tail.count(f'"name": "{tool}"')


READS = {"Player A": 1, "Player B": 3}


def pd_seat(req: RecordedRequest) -> StubReply:
    """Read 'table' (1 time, or 3), lock in cooperate, say so."""
    tail = _since(req, "begins. Talk on 'table'")
    if _called(tail, "lock_in"):
        return StubReply(text="Locked in.")
    if _called(tail, "read_channel") < READS[str(seat_of(req))]:
        return StubReply(tool_calls=[("read_channel", {"channel_id": "table"})])
    return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})])


def veyru_seat(req: RecordedRequest) -> StubReply:
    """The judge rules every treatment a success; the observer reads 'link' once and treats;
    the engineer stands by."""
    if "final_result" in req.tool_names:
        return StubReply(tool_calls=[("final_result", {"success": True, "reason": "fits"})])
    if seat_of(req) == "Stabilization Engineer":
        return StubReply(text="Standing by.")
    tail = _since(req, "A new veyru is failing")
    if _called(tail, "apply_treatment"):
        return StubReply(text="Done.")
    if not _called(tail, "read_channel"):
        return StubReply(tool_calls=[("read_channel", {"channel_id": "link"})])
    action = "soothe the amber face for 6 seconds at level 3"
    return StubReply(tool_calls=[("apply_treatment", {"action": action})])


MODEL = {"model": "m1", "provider": "self-hosted"}
"""A self-hosted model on the stub: the OpenAI Chat Completions wire, whose client prepares a
request in a fraction of the time the Responses wire's does (a 40-round history is long).
veyru's judge, which reads each treatment cold, is OpenAI's on the same stub."""


@pytest.fixture
def chat_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("SELF_HOSTED_BASE_URLS", json.dumps({"m1": model_stub.openai_base_url}))
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)  # veyru's judge
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-turn-limit")
    return model_stub


def _round_lines(run: RunView, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The per-round lines ``glossogen run`` prints for the run, from its log."""
    progress = RunProgress(announce=False)
    progress.run_claimed(_run_id(run), "", ROUNDS)
    capsys.readouterr()
    for event in run.events:
        progress.event(event)
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("round ")]


def _of(run: RunView, cls: type[E]) -> list[E]:
    return [e for e in run.events if isinstance(e, cls)]


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _evaluated_and_exported(run: RunView, runs: Path, out: Path) -> tuple[Any, ...]:
    """What evaluate and the export say of the run's rounds: round_success's (score, rounds,
    summary); run_level's (status, rounds_played, rounds_won); the rounds round_level scores
    (round, round_success); round_context's (round, winners, outcome of the team)."""
    run_id = _run_id(run)
    plan = plan_evaluation(str(runs / run_id), ["round_success"], allow_incomplete=True)
    success = write_outcomes(plan, asyncio.run(score_all(plan))).metrics["round_success"]
    records = select_runs(str(runs), RunIdSelection(run_ids=[run_id])).records
    write_tables(records, ["run_level", "round_level", "round_context"], str(out))
    return (
        (success.score, success.rounds, success.summary),
        [(r["status"], r["rounds_played"], r["rounds_won"]) for r in _csv(out / "run_level.csv")],
        [(r["round_number"], r["metric.round_success"]) for r in _csv(out / "round_level.csv")],
        [(r["round_number"], r["winners"], r["outcome.team"])
         for r in _csv(out / "round_context.csv")],
    )  # fmt: skip


def _won_then_void(won: int) -> tuple[Any, ...]:
    """:func:`_evaluated_and_exported` of a 40-round run that won rounds 1 to ``won`` and whose
    later rounds are void: left out of the win rate, scored by no metric (no round_level row),
    nobody's win."""
    void = ROUNDS - won
    return (
        (1.0, won, f"{won} of {won} rounds won ({void} void rounds left out)"),
        [("incomplete", str(ROUNDS), str(won))],
        [(str(n), "1.0") for n in range(1, won + 1)],
        [(str(n), "team", "won") for n in range(1, won + 1)]
        + [(str(n), "", "void") for n in range(won + 1, ROUNDS + 1)],
    )


def _run_id(run: RunView) -> str:
    return run.events[0].run_id


def _play_40(
    stub: StubModelServer, seats: Responder, scenario: str, runs: Path, turns: int, **options: Any
) -> RunView:
    """Play ``scenario`` 40 rounds, each seat ``turns`` requests, its seats ``seats`` on the stub."""
    stub.responder = seats
    return play(scenario, runs, rounds=ROUNDS, max_agent_turns=turns, **MODEL, **options)


def _check_the_run_ends_after_round_40(run: RunView, turns: int) -> None:
    ended = run.ended
    assert ended is not None
    assert (ended.status, ended.rounds_played, ended.error) == (
        "incomplete",
        ROUNDS,
        f"every agent reached max_agent_turns {turns}",  # the log names the request field
    )


def test_prisoners_dilemma_seats_capped_in_rounds_30_and_40_void_rounds_30_to_40(
    chat_stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    run = _play_40(chat_stub, pd_seat, "prisoners_dilemma", runs, 118, config="knobs_no_postmortem")
    capped = [(e.round_number, e.agent_id) for e in _of(run, AgentTurnLimitReached)]
    assert capped == [(30, "player_b"), (40, "player_a")]
    assert [e.trigger for e in _of(run, RoundEnded)] == ["settled"] * 29 + ["all_idle"] * 10 + [
        "turn_limit"
    ]
    both = "player_a cooperate, player_b cooperate"
    a_alone = "player_a cooperate, player_b defect (missing)"
    nobody = "player_a defect (missing), player_b defect (missing)"
    assert _round_lines(run, capsys) == (
        [f"round {n}/40: won ({both}) · 0 messages · 0 characters" for n in range(1, 30)]
        + [
            f"round {n}/40: void (turn_limit): {a_alone} · 0 messages · 0 characters"
            for n in range(30, 40)
        ]
        + [f"round 40/40: void (turn_limit): {nobody} · 0 messages · 0 characters"]
    )
    # No payoff for a move that was only the cap: the void rounds' scores pay nobody.
    payoffs = [(e.round_number, e.payoffs) for e in _of(run, RoundScored)]
    assert payoffs == [(n, {"player_a": 3, "player_b": 3}) for n in range(1, 30)] + [
        (n, {}) for n in range(30, 41)
    ]
    _check_the_run_ends_after_round_40(run, 118)
    assert run.rounds_won == 29
    assert _evaluated_and_exported(run, runs, tmp_path / "out") == _won_then_void(29)


def test_veyru_with_its_judge_seats_capped_in_rounds_20_and_40_void_rounds_20_to_40(
    chat_stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    run = _play_40(
        chat_stub, veyru_seat, "veyru", runs, 39,
        overrides=["postmortem_enabled=false", "postmortem_after_swap=false", "min_stages=1",
                   "max_stages=1", "attempts_per_stage=1", "judge_provider=openai",
                   "judge_model=gpt-5.4"],
    )  # fmt: skip
    capped = [(e.round_number, e.agent_id) for e in _of(run, AgentTurnLimitReached)]
    assert capped == [(20, "field_observer"), (40, "stabilization_engineer")]
    judged = [r for r in chat_stub.requests if "final_result" in r.tool_names]
    assert len(judged) == 19  # one treatment a round, ruled over HTTP, until the observer is out
    assert [e.trigger for e in _of(run, RoundEnded)] == ["settled"] * 19 + ["all_idle"] * 20 + [
        "turn_limit"
    ]
    won = "1 of 1 stages stabilized"
    void = "void (turn_limit): unfinished: 0 of 1 stages stabilized"
    assert _round_lines(run, capsys) == (
        [f"round {n}/40: won ({won}) · 0 messages · 0 characters" for n in range(1, 20)]
        + [f"round {n}/40: {void} · 0 messages · 0 characters" for n in range(20, 41)]
    )
    _check_the_run_ends_after_round_40(run, 39)
    assert run.rounds_won == 19
    assert _evaluated_and_exported(run, runs, tmp_path / "out") == _won_then_void(19)
