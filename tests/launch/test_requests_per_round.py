"""A seat's requests a round: one figure for the estimate and the turn-cap warning, checked
against played runs; the rounds a turn cap cuts off are not priced; no postmortem, none described.

The figure is the scenario's ``cost_profile()`` (main phase, and postmortem where one is held),
read through :func:`glossogen.launch.measure_prompts`. README ("What a run costs") states the
factor it must land within of what a played seat takes: :data:`FACTOR`. It is checked against
runs over real HTTP on the stub server (players that win every round,
``tests/fixtures/winning_players.py``) and against the scripted players of every scenario.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import LlmResponseReceived, RunView
from glossogen.launch import (
    RunConfig,
    RunRequest,
    estimate_cost,
    measure_prompts,
    plan_run,
    turn_cap_warning,
)
from glossogen.testing import play
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import PLAYERS
from tests.launch.test_estimate import _play, _request

FACTOR = 1.5
"""A seat's requests over a run, declared against played: within this factor either way."""

SCENARIOS = [
    "prisoners_dilemma",
    "veyru",
    "signal_game",
    "spot_the_difference",
    "orbital_anomaly",
    "drive_module_repair",
]


def _declared(config: RunConfig) -> int:
    """A seat's requests over the whole run, as the estimate and the warning take them."""
    return sum(r.total for r in measure_prompts(config).rounds)


def _made(view: RunView) -> dict[str, int]:
    return dict(Counter(e.agent_id for e in view.events if isinstance(e, LlmResponseReceived)))


def _within(declared: int, made: dict[str, int]) -> None:
    for seat, n in made.items():
        assert 1 / FACTOR <= declared / n <= FACTOR, (seat, declared, n)


@pytest.mark.parametrize(
    ("scenario", "extra", "declared"),
    [
        ("prisoners_dilemma", (), 22),
        ("veyru", ("judge_provider=anthropic", "judge_model=claude-haiku-4-5"), 34),
    ],
)
def test_the_declared_figure_is_what_a_seat_takes_on_the_stub_within_the_stated_factor(
    model_stub: StubModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    scenario: str,
    extra: tuple[str, ...],
    declared: int,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.responder = PLAYERS[scenario]
    request = _request(tmp_path, scenario, 5, *extra)
    plan = plan_run(request)
    assert _declared(plan) == declared
    # the estimate bills exactly these (no turn cap reached) ...
    assert [s.requests for s in estimate_cost(plan).seats] == [declared, declared]
    url = asyncio.run(_play(request))
    made = _made(RunView.load(f"{url}/{scenario}.jsonl"))
    assert len(made) == 2
    _within(declared, made)
    # ... and the warning says the same figure: the turns that cover the run are these
    few = plan.model_copy(update={"limits": plan.limits.model_copy(update={"max_agent_turns": 5})})
    warning = turn_cap_warning(few)
    assert warning is not None and warning.needed == declared
    assert warning.worded("--max-agent-turns").endswith(f"--max-agent-turns {declared} covers 5")
    enough = {"max_agent_turns": declared}
    assert turn_cap_warning(plan.model_copy(update={"limits": plan.limits.model_copy(
        update=enough)})) is None  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_declared_figure_is_what_a_scripted_seat_takes_within_the_stated_factor(
    tmp_path: Path, scenario: str
) -> None:
    view = play(scenario, tmp_path / "runs", rounds=5)
    assert view.status == "completed"
    plan = plan_run(
        RunRequest(scenario=scenario, model="scripted", provider="scripted",
                   runs_dir=str(tmp_path / "runs"), config="knobs_default",
                   overrides=["round_count=5"])
    )  # fmt: skip
    _within(_declared(plan), _made(view))


def _veyru(tmp_path: Path, turns: int) -> RunConfig:
    request = _request(
        tmp_path, "veyru", 5, "judge_provider=anthropic", "judge_model=claude-haiku-4-5"
    )
    return plan_run(request.model_copy(update={"max_agent_turns": turns}))


def test_the_judge_is_priced_only_for_the_rounds_the_turn_cap_lets_the_seats_play(
    tmp_path: Path,
) -> None:
    # veyru, 5 rounds: 2 judge calls a round (a case of 2 stages on average); a seat takes
    # 4, 5, 4, 5, 4 requests in the main phases and 2, 3, 2, 3, 2 in the postmortems.
    assert [(r.main, r.postmortem) for r in measure_prompts(_veyru(tmp_path, 200)).rounds] == [
        (4, 2), (5, 3), (4, 2), (5, 3), (4, 2)]  # fmt: skip
    played = {}
    for turns in (200, 10, 2):
        estimate = estimate_cost(_veyru(tmp_path, turns))
        played[turns] = (estimate.rounds_played, estimate.judge_calls,
                         [s.requests for s in estimate.seats])  # fmt: skip
    assert played == {
        200: (5.0, 10, [34, 34]),
        10: (1.8, 4, [10, 10]),  # round 1 (6) and 4 of round 2's 5 main-phase requests
        2: (0.5, 1, [2, 2]),  # 2 of round 1's 4: no round covered, one call, not ten
    }
    capped = estimate_cost(_veyru(tmp_path, 2))
    # Spread over the half round the seats play, not the 5 asked.
    assert capped.per_round_usd == capped.total_usd / 0.5
    assert capped.judge_usd == pytest.approx(
        estimate_cost(_veyru(tmp_path, 200)).judge_usd / 10, rel=1e-12)  # fmt: skip
    assert capped.assumptions[3] == (
        "turn cap: at most 2 requests per seat, where the 5 rounds take 34: the seats play about "
        "0.5 rounds, and only those are priced (their judge calls, and a postmortem only where "
        "one is reached)"
    )


def test_a_postmortem_is_priced_only_when_the_turn_cap_reaches_it(tmp_path: Path) -> None:
    request = _request(tmp_path, "prisoners_dilemma", 5, "agent_model_settings.cache=false")

    def seat(turns: int) -> tuple[int, int]:
        plan = plan_run(request.model_copy(update={"max_agent_turns": turns}))
        s = estimate_cost(plan).seats[0]
        return s.requests, s.input_tokens

    m = measure_prompts(plan_run(request)).seats["player_a"]
    first = m.system_tokens + m.tools_tokens + m.briefing_tokens
    growth = 40 + 30  # an answer and a cycle (the profile's)
    # round 1: two main-phase requests, then the postmortem's briefing and its first request
    assert seat(2) == (2, 2 * first + growth)
    assert seat(3) == (3, 3 * first + 3 * growth + m.postmortem_tokens)


def test_scheduled_postmortem_switches_are_followed(tmp_path: Path) -> None:
    off_from_3 = '[{"kind": "set_postmortem", "round": 3, "enabled": false}]'
    plan = plan_run(_request(tmp_path, "prisoners_dilemma", 5, f"scheduled_events={off_from_3}"))
    measured = measure_prompts(plan)
    assert measured.postmortems == [True, True, False, False, False]
    assert [r.total for r in measured.rounds] == [4, 5, 2, 3, 2]
    assert estimate_cost(plan).assumptions[1] == (
        "per seat: 2.5 requests in a round's main phase (a player talks, locks in and stops, "
        "unless the round settles first); 2 in each of 2 postmortems (37 tokens briefed; a "
        "player sends a line and stops; the other's line may wake it)"
    )


def test_the_no_postmortem_preset_describes_no_postmortem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "prisoners_dilemma", "--model", "claude-sonnet-4-5", "--provider",
            "anthropic", "--runs-dir", str(tmp_path / "runs"), "--dry-run"]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--config", "knobs_no_postmortem", "round_count=10"])
    assert exited.value.code == 0
    lean = [line for line in capsys.readouterr().out.splitlines() if "assuming" in line]
    assert lean[1] == (
        "  assuming per seat: 2.5 requests in a round's main phase (a player talks, locks in "
        "and stops, unless the round settles first); no postmortem"
    )
    assert (
        lean[3] == "  assuming turn cap: at most 200 requests per seat, where the 10 rounds take 25"
    )
    assert not [line for line in lean if "line and stops" in line or "briefed" in line]
    with pytest.raises(SystemExit):
        main([*argv, "--config", "knobs_default", "round_count=10"])
    full = [line for line in capsys.readouterr().out.splitlines() if "assuming" in line]
    assert full[1] == (
        "  assuming per seat: 2.5 requests in a round's main phase (a player talks, locks in "
        "and stops, unless the round settles first); 2 in each postmortem (37 tokens briefed; "
        "a player sends a line and stops; the other's line may wake it)"
    )


def test_a_binding_turn_cap_names_only_the_parts_the_run_holds(tmp_path: Path) -> None:
    # No judge and no postmortem: the turn-cap line names neither. Rounds take 2, 3, 2, 3, 2
    # requests (2.5 on average): 3 turns play round 1 and a third of round 2.
    request = _request(tmp_path, "prisoners_dilemma", 5, "postmortem_enabled=false")
    estimate = estimate_cost(plan_run(request.model_copy(update={"max_agent_turns": 3})))
    assert estimate.assumptions[3] == (
        "turn cap: at most 3 requests per seat, where the 5 rounds take 12: the seats play about "
        "1.3 rounds, and only those are priced"
    )
