"""The launch estimate against runs played over real HTTP, and the cap and dry run it drives.

Runs play against the stub servers on 127.0.0.1 with players that win every round
(``tests/fixtures/winning_players.py``); the stub bills each request as the provider's documented
caching would (``tests/fixtures/cache_emulation.py``), and what it served is priced with
genai-prices: the provider's bill, which the estimate of the same run must land within a
factor of 2 of.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.launch import (
    LaunchError,
    RunConfig,
    RunRequest,
    check_spend_cap,
    claim_run,
    estimate_cost,
    measure_prompts,
    open_session,
    plan_run,
    price_spend,
)
from glossogen.pricing import price_call, price_usage
from tests.fixtures.cache_emulation import CachingResponder
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import PLAYERS


def _request(tmp_path: Path, scenario: str, rounds: int, *overrides: str) -> RunRequest:
    return RunRequest(
        scenario=scenario,
        model="claude-sonnet-4-5",
        provider="anthropic",
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=[f"round_count={rounds}", "idle_floor_seconds=0.01", *overrides],
    )


async def _play(request: RunRequest) -> str:
    plan = plan_run(request)
    claimed = claim_run(plan, request.runs_dir)
    session = open_session(plan, claimed)
    for n in range(1, plan.knobs.round_count + 1):
        await session.play_round(n)
    session.finish(price_spend(claimed), "completed")
    return claimed.url


def _billed(stub: StubModelServer, judge_model: str = "") -> float:
    total = 0.0
    for s in stub.served:
        model = judge_model if "final_result" in s.request.tool_names else "claude-sonnet-4-5"
        usd = price_usage("anthropic", model, s.reply)  # what the stub served, priced
        assert usd is not None
        total += usd
    return total


@pytest.fixture
def anthropic_env(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.mark.parametrize(
    ("scenario", "rounds", "extra", "judge_model"),
    [
        ("prisoners_dilemma", 10, (), ""),
        ("prisoners_dilemma", 10, ("agent_model_settings.cache=false",), ""),
        (
            "veyru",
            5,
            ("judge_provider=anthropic", "judge_model=claude-haiku-4-5"),
            "claude-haiku-4-5",
        ),
        (
            "veyru",
            5,
            (
                "judge_provider=anthropic",
                "judge_model=claude-haiku-4-5",
                "agent_model_settings.cache=false",
            ),
            "claude-haiku-4-5",
        ),
    ],
)
def test_the_estimate_lands_within_a_factor_of_2_of_the_bill_of_a_played_run(
    model_stub: StubModelServer,
    anthropic_env: None,
    tmp_path: Path,
    scenario: str,
    rounds: int,
    extra: tuple[str, ...],
    judge_model: str,
) -> None:
    request = _request(tmp_path, scenario, rounds, *extra)
    estimate = estimate_cost(plan_run(request))
    model_stub.responder = CachingResponder(PLAYERS[scenario])
    asyncio.run(_play(request))
    billed = _billed(model_stub, judge_model)
    assert estimate.total_usd is not None
    assert 0.5 <= estimate.total_usd / billed <= 2.0, (estimate.total_usd, billed)
    judged = sum(1 for s in model_stub.served if "final_result" in s.request.tool_names)
    if judge_model:
        assert 0.5 <= estimate.judge_calls / judged <= 2.0


def test_the_turn_cap_bounds_the_estimate_so_a_long_signal_game_fits_a_small_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 29: 100 rounds of signal_game on gpt-4.1-mini under a $1 cap were refused at $7.68
    # (20 requests a seat a round), though --max-agent-turns bounds what a seat can ask.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    request = _request(tmp_path, "signal_game", 100).model_copy(
        update={
            "model": "gpt-4.1-mini",
            "provider": "openai",
            "max_agent_turns": 10,
            "spend_cap_usd": 1.0,
        }  # fmt: skip
    )
    plan = plan_run(request)
    estimate = estimate_cost(plan)
    assert [(s.requests, s.turn_capped) for s in estimate.seats] == [(10, True), (10, True)]
    assert estimate.total_usd is not None and estimate.total_usd < 0.01
    assert check_spend_cap(plan, 100) == estimate  # not refused: the estimate it checked
    unbounded = plan_run(request.model_copy(update={"max_agent_turns": 10_000}))
    with pytest.raises(LaunchError, match=r"the dry-run estimate of the 100 rounds to play"):
        check_spend_cap(unbounded, 100)

    # The arithmetic, uncached: each seat's 10 requests fall in round 1 (11 a round); request k
    # reads the system prompt, the tools, the briefing and k answers (40) and cycles (60).
    uncached = plan_run(request.model_copy(
        update={"overrides": [*request.overrides, "agent_model_settings.cache=false"]}
    ))  # fmt: skip
    measured = measure_prompts(uncached)
    for seat in estimate_cost(uncached).seats:
        m = measured.seats[seat.agent_id]
        first = m.system_tokens + m.tools_tokens + m.briefing_tokens
        prompts = [first + 100 * k for k in range(10)]
        assert (seat.input_tokens, seat.output_tokens, seat.cache_read_tokens) == (
            sum(prompts), 400, 0)  # fmt: skip
        usd = price_call("openai", "gpt-4.1-mini", input_tokens=sum(prompts), output_tokens=400)
        assert seat.usd == usd

    with pytest.raises(SystemExit) as exited:
        main(["run", "signal_game", "--model", "gpt-4.1-mini", "--provider", "openai",
              "--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default",
              "--max-agent-turns", "10", "--spend-cap-usd", "1", "--dry-run",
              "round_count=100"])  # fmt: skip
    assert exited.value.code == 0
    out = capsys.readouterr()
    assert f"estimated cost: ${estimate.total_usd:.4f} for 100 rounds" in out.out
    assert (
        "  assuming turn cap: at most 10 requests per seat, where the 100 rounds take 1300: the "
        "seats play about 0.9 rounds, and only those are priced (a postmortem only where one "
        "is reached)\n"  # signal_game has no judge: no judge calls are named
    ) in out.out
    assert out.out.count("(10 requests, turn cap reached)") == 2
    assert not (tmp_path / "runs").exists()  # a dry run claims nothing


def test_a_dry_run_of_a_judged_scenario_needs_no_key_and_prints_its_assumptions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["run", "drive_module_repair", "--model", "claude-sonnet-4-5", "--provider",
              "anthropic", "--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default",
              "--dry-run", "judge_provider=anthropic", "judge_model=claude-haiku-4-5",
              "judge_votes=3"])  # fmt: skip
    assert exited.value.code == 0
    out = capsys.readouterr()
    plan = plan_run(
        _request(tmp_path, "drive_module_repair", 3).model_copy(
            update={
                "overrides": [
                    "judge_provider=anthropic",
                    "judge_model=claude-haiku-4-5",
                    "judge_votes=3",
                ]  # fmt: skip
            }
        )
    )
    estimate = estimate_cost(plan)
    votes = estimate_cost(
        plan.model_copy(update={"knobs": plan.knobs.model_copy(update={"judge_votes": 1})})
    )
    assert estimate.judge_calls == 3 * votes.judge_calls > 0  # one call per vote
    assert f"({estimate.judge_calls} calls)" in out.out
    assert "  assuming judge: " in out.out
    assert "missing credentials: ANTHROPIC_API_KEY" in out.err
    assert "(a launch would be refused)" in out.err


def test_a_launch_without_the_key_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["run", "veyru", "--model", "claude-sonnet-4-5", "--provider", "anthropic",
              "--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default"])  # fmt: skip
    assert exited.value.code == 77
    assert not (tmp_path / "runs").exists()


def test_prisoners_dilemma_offers_a_preset_without_the_postmortem_at_about_half_the_cost(
    tmp_path: Path,
) -> None:
    def plan(config: str) -> RunConfig:
        request = _request(tmp_path, "prisoners_dilemma", 10).model_copy(update={"config": config})
        return plan_run(request)

    default, lean = plan("knobs_default"), plan("knobs_no_postmortem")
    assert (default.knobs.postmortem_enabled, lean.knobs.postmortem_enabled) == (True, False)
    rest = {"postmortem_enabled"}
    assert {k: v for k, v in lean.recorded_knobs.items() if k not in rest} == {
        k: v for k, v in default.recorded_knobs.items() if k not in rest
    }
    full, cut = estimate_cost(default), estimate_cost(lean)
    assert [s.requests for s in full.seats] == [45, 45]
    assert [s.requests for s in cut.seats] == [25, 25]
    assert full.total_usd is not None and cut.total_usd is not None
    assert cut.total_usd < 0.75 * full.total_usd
    assert "no postmortem" in cut.assumptions[1]
