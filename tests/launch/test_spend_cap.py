"""``--spend-cap-usd``: refused at launch when the dry-run estimate passes it or a model has no
price; enforced while playing over real HTTP (each request's worst case is reserved before it
is sent, the request that would pass the cap is refused and none after it is sent; the run ends
``incomplete`` with the reason, exit 20, its log sealed, never having logged more than the
cap); recorded with the run's limits. Every expected figure is priced here with genai-prices from
what the stub served."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from glossogen.catalog import PROVIDER_SPECS, Provider
from glossogen.cli import main
from glossogen.engine import VirtualClock
from glossogen.eventlog import (
    AgentRunCycleFailed,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestRefused,
    ModelRequestSent,
    RoundResultRecorded,
    SimulationEnded,
    SimulationStarted,
    read_events,
)
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer, StubReply
from tests.fixtures.polling import wait_until

# claude-sonnet-4-6 costs $3 per million input and $15 per million output tokens, so one call
# of 1,000,000 input and 1,000 output tokens costs $3.015. The launch estimate of RUN (the
# arithmetic in test_a_cap_below_the_dry_run_estimate_is_refused_before_anything_is_written) is
# $0.027444: a cap above it launches, and the stub's large answers then reach the cap.
CALL = StubReply(text="Thinking it over.", input_tokens=1_000_000, output_tokens=1_000)
RUN = ["run", "prisoners_dilemma", "--model", "claude-sonnet-4-6", "--provider", "anthropic",
       "--config", "knobs_default", "round_count=2", "idle_floor_seconds=0.05",
       "postmortem_enabled=false"]  # fmt: skip


@pytest.fixture
def anthropic_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return model_stub


def _exit(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


def _worst_case(provider: str, model: str, input_tokens: int, max_tokens: int) -> float:
    """What the cap reserves for one request, priced here with genai-prices: the input at the
    dearer of its plain and cache-write rates, the whole output cap at the output rate."""
    spec = PROVIDER_SPECS[Provider(provider)]
    prices = [
        calc_price(
            Usage(input_tokens=input_tokens, output_tokens=max_tokens, cache_write_tokens=w),
            model_ref=model,
            provider_id=spec.genai_prices_id,
        ).total_price
        for w in (None, input_tokens)
    ]
    return float(max(prices))


def _served(provider: str, model: str, reply: StubReply, count: int) -> float:
    """USD of ``count`` answers of ``reply`` as genai-prices prices them (what the stub served)."""
    spec = PROVIDER_SPECS[Provider(provider)]
    usage = Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)
    price = calc_price(usage, model_ref=model, provider_id=spec.genai_prices_id).total_price
    return float(price * count)


# One answer of 1,000 input and 10,000 output tokens (the request's whole max_tokens) costs
# $0.003 + $0.15 = $0.153 on claude-sonnet-4-6; its worst case is at least its output cap's
# $0.15 plus the input bound (request bytes + 1,024) at $3.75 per million (cache writes).
READ = StubReply(tool_calls=[("read_channel", {"channel_id": "table"})],
                 input_tokens=1_000, output_tokens=10_000)  # fmt: skip
ONE_SEAT = ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--config", "knobs_default", "round_count=1", "idle_floor_seconds=0.05",
            "postmortem_enabled=false", "agents.player_a.model=claude-sonnet-4-6",
            "agents.player_a.provider=anthropic", "agent_model_settings.max_tokens=10000"]  # fmt: skip


def test_the_cap_refuses_exactly_the_request_whose_worst_case_would_pass_it(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # player_a asks again after every answer (each answer calls read_channel). $0.55 holds
    # three answers ($0.459) and each one's worst case before it was sent; the fourth request's
    # worst case (>= $0.15) would pass it, so it is refused before it is sent, where a cap on
    # the logged spend alone would have let it go ($0.612 logged).
    anthropic_stub.responder = lambda req: READ
    runs = tmp_path / "runs"
    assert _exit([*ONE_SEAT, "--runs-dir", str(runs), "--spend-cap-usd", "0.55"]) == 20
    (log,) = runs.glob("prisoners_dilemma/*/prisoners_dilemma.jsonl")
    events = read_events(str(log)).events
    served = anthropic_stub.requests
    assert [r.body["max_tokens"] for r in served] == [10_000, 10_000, 10_000]
    spent = _served("anthropic", "claude-sonnet-4-6", READ, len(served))
    assert spent == pytest.approx(0.459, abs=1e-12)
    (started,) = [e for e in events if isinstance(e, SimulationStarted)]
    assert started.spend_cap_usd == 0.55
    (refused,) = [e for e in events if isinstance(e, ModelRequestRefused)]
    assert (refused.agent_id, refused.provider, refused.model, refused.max_tokens) == (
        "player_a",
        "anthropic",
        "claude-sonnet-4-6",
        10_000,
    )
    # The bound covers the request the stub last served (the refused one extends it).
    assert refused.input_tokens_bound > len(json.dumps(served[-1].body).encode())
    worst = _worst_case("anthropic", "claude-sonnet-4-6", refused.input_tokens_bound, 10_000)
    assert refused.worst_case_usd == pytest.approx(worst, abs=1e-12)
    assert (refused.spent_usd, refused.reserved_usd, refused.cap_usd) == (
        pytest.approx(spent, abs=1e-12),
        0.0,
        0.55,
    )
    assert spent + worst > 0.55
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.total_cost_usd == pytest.approx(spent, abs=1e-12)
    assert ended.total_cost_usd <= 0.55
    reason = (
        f"spend cap reached: ${spent:.6f} spent + $0.000000 in flight + ${worst:.6f} worst "
        "case of player_a's next request would pass spend_cap_usd 0.55 after round 1 of 1"
    )
    assert (ended.status, ended.error, ended.rounds_played) == ("incomplete", reason, 1)
    shown = capsys.readouterr()
    printed = reason.replace("spend_cap_usd", "--spend-cap-usd")  # the CLI names its flag
    assert shown.err.endswith(
        f"glossogen: error: run incomplete: {printed} (spent and in flight as the cap refused "
        "that request; what was in flight then is in the spend in all above)\n"
    )
    closing = shown.out.splitlines()[-1]
    assert f" · ${spent:.6f} spent in all (every request logged) · tokens " in closing


def test_a_failed_request_releases_its_reservation(
    prefect_api: str, anthropic_stub: StubModelServer, tmp_path: Path
) -> None:
    # As above, but player_a's first request fails (a 500, not billed) and is retried: its
    # reservation is released, so the cap still holds the three answers that follow and
    # refuses the fourth with nothing in flight.
    anthropic_stub.queue(StubFault(status=500, retry_after=0))
    anthropic_stub.responder = lambda req: READ
    runs = tmp_path / "runs"
    assert _exit([*ONE_SEAT, "--runs-dir", str(runs), "--spend-cap-usd", "0.55"]) == 20
    (log,) = runs.glob("prisoners_dilemma/*/prisoners_dilemma.jsonl")
    events = read_events(str(log)).events
    assert len(anthropic_stub.requests) == 4
    assert [e.error_kind for e in events if isinstance(e, AgentRunCycleFailed)] == ["server_error"]
    spent = _served("anthropic", "claude-sonnet-4-6", READ, 3)
    (refused,) = [e for e in events if isinstance(e, ModelRequestRefused)]
    assert (refused.spent_usd, refused.reserved_usd) == (pytest.approx(spent, abs=1e-12), 0.0)
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.total_cost_usd == pytest.approx(spent, abs=1e-12)


# Two players on claude-sonnet-4-6 at max_tokens 20,000: an answer of 1,000 input and 20,000
# output tokens costs $0.303; a first request's worst case is $0.30 plus its input bound
# (about 9,000 tokens: $0.034). The launch estimate is far below the caps used.
READ_LONG = StubReply(tool_calls=[("read_channel", {"channel_id": "table"})],
                      input_tokens=1_000, output_tokens=20_000)  # fmt: skip
TWO_SEATS = [*ONE_SEAT[:-1], "agent_model_settings.max_tokens=20000",
             "agents.player_b.model=claude-sonnet-4-6", "agents.player_b.provider=anthropic"]  # fmt: skip


def test_two_requests_in_flight_at_once_are_both_reserved_and_the_log_stays_within_the_cap(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Both first requests are held at the stub; $0.80 holds both worst cases, so both are
    # sent. The test answers the first to arrive alone: its seat, spent $0.303, asks again while
    # the other's worst case still stands, and that third request (>= $0.30) would pass the
    # cap: refused, unsent. Then the second is answered. A cap on the logged spend alone would
    # have let both next requests go ($1.212 logged).
    setting = "agent_model_settings.max_tokens=20000"
    request = _held_run(model_stub, monkeypatch, tmp_path, READ_LONG, 0.8, setting)
    model_stub.hold_until_in_flight = None
    names = iter(["first", "second"])
    model_stub.responder = lambda req: replace(READ_LONG, held=next(names, "later"))

    async def play() -> tuple[str, float]:
        plan = plan_run(request)
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        playing = asyncio.create_task(session.play_round(1))
        ledger = session.engine.spend
        await asyncio.to_thread(model_stub.wait_in_flight, 2)
        model_stub.release("first")
        await asyncio.to_thread(wait_until, lambda: ledger.refused, "the third request refused")
        served_at_refusal = sum(model_stub.served_usd("claude-sonnet-4-6", "anthropic"))
        model_stub.release("second")
        await playing
        await session.settle_requests()
        session.finish(price_spend(folder), "incomplete", "spend cap")
        return folder.log_url, served_at_refusal

    log_url, served_at_refusal = asyncio.run(play())
    events = read_events(log_url).events
    assert [r.body["max_tokens"] for r in model_stub.requests] == [20_000, 20_000]
    one = _served("anthropic", "claude-sonnet-4-6", READ_LONG, 1)
    assert one == pytest.approx(0.303, abs=1e-12)
    assert served_at_refusal == pytest.approx(one, abs=1e-12)
    sent = {e.request_id: e for e in events if isinstance(e, ModelRequestSent)}
    answers = [e for e in events if isinstance(e, LlmResponseReceived)]
    assert len(sent) == len(answers) == 2
    first, second = (sent[a.request_id] for a in answers)  # answered in the order released
    (refused,) = [e for e in events if isinstance(e, ModelRequestRefused)]
    assert refused.agent_id == first.agent_id  # the seat answered first asked again
    worst = _worst_case("anthropic", "claude-sonnet-4-6", refused.input_tokens_bound, 20_000)
    assert refused.worst_case_usd == pytest.approx(worst, abs=1e-12)
    # Exactly: the first answer settled at what the stub served; the second request's worst
    # case (recorded as it was sent) still reserved; the first's reservation gone.
    assert refused.spent_usd == pytest.approx(one, abs=1e-12)
    assert second.reserved_usd is not None and first.reserved_usd is not None
    assert refused.reserved_usd == second.reserved_usd
    assert second.reserved_usd + first.reserved_usd <= 0.8  # both were sent at once
    assert one + second.reserved_usd <= 0.8 < one + second.reserved_usd + worst
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert (ended.status, ended.rounds_played) == ("incomplete", 1)
    served = sum(model_stub.served_usd("claude-sonnet-4-6", "anthropic"))
    assert served == pytest.approx(2 * one, abs=1e-12)
    assert ended.total_cost_usd == pytest.approx(served, abs=1e-12)
    assert ended.total_cost_usd <= 0.8


def _held_run(
    stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    reply: StubReply, cap: float, setting: str,
) -> RunRequest:  # fmt: skip
    """A one-round run of two claude-sonnet-4-6 players whose requests the stub holds until the
    test releases them, played through the library so the test can act while they are held."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    stub.hold_until_in_flight = math.inf
    stub.responder = lambda req: reply
    return RunRequest(
        scenario="prisoners_dilemma", model="claude-sonnet-4-6", provider="anthropic",
        runs_dir=str(tmp_path / "runs"), config="knobs_default", spend_cap_usd=cap,
        overrides=["round_count=1", "idle_floor_seconds=0.05", "postmortem_enabled=false",
                   setting],
    )  # fmt: skip


def test_a_request_in_flight_holds_its_worst_case_against_the_next_one(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # $0.62 holds one first request's worst case (about $0.334) but not two. The stub holds
    # whichever request comes first, so the other player asks while it is in flight: nothing
    # spent, its worst case reserved, and the second is refused unsent. Released, the first
    # answers and settles at what it served ($0.303).
    setting = "agent_model_settings.max_tokens=20000"
    request = _held_run(model_stub, monkeypatch, tmp_path, READ_LONG, 0.62, setting)

    async def play() -> str:
        plan = plan_run(request)
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        playing = asyncio.create_task(session.play_round(1))
        ledger = session.engine.spend
        await asyncio.to_thread(wait_until, lambda: ledger.refused, "the second request refused")
        # The first request is reserved before it is sent: released before it reaches the
        # stub, it would be held anew and never answered. Release it once it is held.
        await asyncio.to_thread(model_stub.wait_in_flight, 1)
        model_stub.release()
        await playing
        await session.settle_requests()
        session.finish(price_spend(folder), "incomplete", "spend cap")
        return folder.log_url

    events = read_events(asyncio.run(play())).events
    assert len(model_stub.requests) == 1
    (refused,) = [e for e in events if isinstance(e, ModelRequestRefused)]
    (sent,) = {"player_a", "player_b"} - {refused.agent_id}
    worst = _worst_case("anthropic", "claude-sonnet-4-6", refused.input_tokens_bound, 20_000)
    assert refused.worst_case_usd == pytest.approx(worst, abs=1e-12)
    assert refused.spent_usd == 0.0
    (held,) = [e for e in events if isinstance(e, ModelRequestSent)]  # the request in flight
    assert held.agent_id == sent
    assert held.reserved_usd is not None
    assert refused.reserved_usd == held.reserved_usd  # exactly its worst case, reserved
    assert held.reserved_usd <= 0.62 < held.reserved_usd + worst
    answered = [e.agent_id for e in events if isinstance(e, LlmResponseReceived)]
    assert answered == [sent]
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    spent = _served("anthropic", "claude-sonnet-4-6", READ_LONG, 1)
    assert ended.total_cost_usd == pytest.approx(spent, abs=1e-12)


def test_a_cap_below_the_dry_run_estimate_is_refused_before_anything_is_written(
    anthropic_stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The estimate, by hand: each seat's fixed prompt is 218 tokens of system prompt and 328 of
    # tool definitions, its round briefing 18 (4 characters a token); 2.5 requests a round (2 in
    # round 1, 3 in round 2), each answer 40 tokens and each cycle 30 more. Round 1 reads 564
    # and 634 tokens, round 2 (after 140 + 18 more) 722, 792 and 862: 3,574 in and 200 out per
    # seat, under Anthropic's 1,024-token cache minimum, so uncached: 3,574 x $3 + 200 x $15
    # per million = $0.013722 per seat, $0.027444 for both.
    runs = tmp_path / "runs"
    assert _exit([*RUN, "--runs-dir", str(runs), "--spend-cap-usd", "0.025"]) == 65
    assert capsys.readouterr().err == (
        "glossogen: error: --spend-cap-usd 0.025: the dry-run estimate of the 2 rounds to play "
        "is $0.027444 ($0.013722 per round), above the cap\n"
    )
    assert not runs.exists()
    assert anthropic_stub.requests == []


def test_a_cap_below_one_requests_output_cap_is_refused_before_anything_is_written(
    anthropic_stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The launch estimate of the round is far within $0.30; but every request of player_a
    # reserves its 21,000 output tokens at $15 per million ($0.315) at least: none could be sent.
    runs = tmp_path / "runs"
    argv = [*ONE_SEAT[:-1], "agent_model_settings.max_tokens=21000", "--runs-dir", str(runs),
            "--spend-cap-usd", "0.3"]  # fmt: skip
    assert _exit(argv) == 65
    assert capsys.readouterr().err == (
        "glossogen: error: --spend-cap-usd 0.3: one request of player_a "
        "(anthropic:claude-sonnet-4-6) reserves $0.315000 for its output cap alone "
        "(max_tokens 21000), above the cap, so none could be sent\n"
    )
    assert not runs.exists()
    assert anthropic_stub.requests == []


def test_a_cap_with_a_model_the_price_catalogue_lacks_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "house-model-7", "--provider", "openai",
            "--config", "knobs_default", "--runs-dir", str(runs), "--spend-cap-usd", "5"]  # fmt: skip
    assert _exit(argv) == 65
    assert capsys.readouterr().err == (
        "glossogen: error: --spend-cap-usd 5: openai:house-model-7 is not in the price "
        "catalogue, so its spend cannot be counted against the cap\n"
    )
    assert not runs.exists()


@pytest.mark.parametrize("raw", ["0", "-2"])  # inf, nan, 1e400: tests/cli/test_flag_bounds.py
def test_a_cap_that_is_not_a_positive_amount_is_a_usage_error(
    raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert _exit([*RUN, "--runs-dir", str(runs), f"--spend-cap-usd={raw}"]) == 64
    shown = f"{float(raw):g}"
    assert capsys.readouterr().err == (
        f"glossogen: error: --spend-cap-usd must be a number of USD above 0, got {shown}\n"
    )
    assert not runs.exists()


def test_the_dry_run_estimate_and_the_cap_of_a_scripted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Scripted seats cost nothing: any cap passes the launch check, and is recorded.
    runs = tmp_path / "runs"
    argv = ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--config", "knobs_default", "--runs-dir", str(runs), "--spend-cap-usd", "0.01",
            "--dry-run"]  # fmt: skip
    assert _exit(argv) == 0
    assert not runs.exists()


def test_the_in_run_judges_requests_are_reserved_and_refused_as_the_agents_are(
    prefect_api: str, model_stub: StubModelServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # veyru's field observer on gpt-4o-mini ($0.15 / $0.60 per million) over the stub (the
    # engineer scripted, free), the judge on gpt-4o-mini too with no max_tokens of its own:
    # under a cap it is sent 16,384, so its worst case is at least $0.0098304. The observer
    # (max_tokens 1,000) answers apply_treatment for 1,000 + 1,000 tokens ($0.00075), the judge
    # rules for 1,000 + 16,000 ($0.00975). With $0.02: the first ruling fits ($0.00075 spent),
    # the observer's next request fits ($0.0105 spent), the second ruling ($0.01125 spent)
    # would pass it and is refused: its round is void for the cap. The launch estimate of the
    # round is within $0.02.
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")
    ruling = StubReply(
        tool_calls=[("final_result", {"success": True, "reason": "it follows the procedure"})],
        input_tokens=1_000,
        output_tokens=16_000,
    )
    treat = StubReply(tool_calls=[("apply_treatment", {"action": "cool the core slowly"})],
                      input_tokens=1_000, output_tokens=1_000)  # fmt: skip

    def answer(req: RecordedRequest) -> StubReply:
        return ruling if "final_result" in req.tool_names else treat

    model_stub.responder = answer
    runs = tmp_path / "runs"
    argv = ["run", "veyru", "--model", "scripted", "--provider", "scripted", "--config",
            "knobs_default", "round_count=1", "postmortem_enabled=false",
            "postmortem_after_swap=false", "agents.field_observer.model=gpt-4o-mini",
            "agents.field_observer.provider=openai", "judge_provider=openai",
            "judge_model=gpt-4o-mini", "agent_model_settings.max_tokens=1000",
            "--runs-dir", str(runs), "--spend-cap-usd", "0.02"]  # fmt: skip
    assert _exit(argv) == 20
    (log,) = runs.glob("veyru/*/veyru.jsonl")
    events = read_events(str(log)).events
    served = [
        ("judge" if "final_result" in r.tool_names else "observer", r.body["max_output_tokens"])
        for r in model_stub.requests
    ]
    assert served == [("observer", 1_000), ("judge", 16_384), ("observer", 1_000)]
    spent = _served("openai", "gpt-4o-mini", treat, 2) + _served("openai", "gpt-4o-mini", ruling, 1)
    assert spent == pytest.approx(0.01125, abs=1e-12)
    (refused,) = [e for e in events if isinstance(e, ModelRequestRefused)]
    assert (refused.agent_id, refused.model, refused.max_tokens) == ("judge", "gpt-4o-mini", 16_384)
    worst = _worst_case("openai", "gpt-4o-mini", refused.input_tokens_bound, 16_384)
    assert refused.worst_case_usd == pytest.approx(worst, abs=1e-12)
    assert (refused.spent_usd, refused.reserved_usd) == (pytest.approx(spent, abs=1e-12), 0.0)
    assert spent + worst > 0.02
    (judged,) = [e for e in events if isinstance(e, JudgeCalled)]
    assert judged.cost_usd == pytest.approx(_served("openai", "gpt-4o-mini", ruling, 1), abs=1e-12)
    verdicts = [(e.round_number, e.void, e.success, e.reason)
                for e in events if isinstance(e, RoundResultRecorded)]  # fmt: skip
    assert verdicts == [
        (1, True, False, "void (spend_cap): wrong treatment at stage 2 of 3 "
         "(no ruling: the run's spend cap was reached)")
    ]  # fmt: skip
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    reason = (
        f"spend cap reached: ${spent:.6f} spent + $0.000000 in flight + ${worst:.6f} worst "
        "case of judge's next request would pass spend_cap_usd 0.02 after round 1 of 1"
    )
    assert (ended.status, ended.error, ended.rounds_played) == ("incomplete", reason, 1)
    assert ended.total_cost_usd == pytest.approx(spent, abs=1e-12)
    printed = reason.replace("spend_cap_usd", "--spend-cap-usd")  # the CLI names its flag
    assert capsys.readouterr().err.endswith(
        f"glossogen: error: run incomplete: {printed} (spent and in flight as the cap refused "
        "that request; what was in flight then is in the spend in all above)\n"
    )


def test_a_request_a_phase_end_abandons_keeps_its_reservation_until_it_is_answered(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Both players' first requests are held at the stub while the test ends the 1 s phase on
    # the run's virtual clock: abandoned, they still hold their worst cases against the cap;
    # answered afterwards, each settles at what it served (1,200 + 80 tokens: $0.0048).
    reply = StubReply(text="thinking...", input_tokens=1_200, output_tokens=80)
    setting = "max_round_duration_seconds=1"
    request = _held_run(model_stub, monkeypatch, tmp_path, reply, 2.0, setting)
    held: list[Decimal] = []

    async def play() -> tuple[str, Decimal, Decimal]:
        plan = plan_run(request)
        folder = claim_run(plan, str(tmp_path / "runs"))
        session = open_session(plan, folder)
        clock = session.engine.clock
        assert isinstance(clock, VirtualClock)
        playing = asyncio.create_task(session.play_round(1))
        await asyncio.to_thread(model_stub.wait_in_flight, 2)
        clock.advance(1.0)  # the phase ends with both requests in flight
        await playing
        ledger = session.engine.spend
        held.extend([ledger.spent, ledger.reserved])
        model_stub.release()
        await session.settle_requests()
        session.finish(price_spend(folder), "completed")
        return folder.log_url, ledger.spent, ledger.reserved

    log_url, spent, reserved = asyncio.run(play())
    events = read_events(log_url).events
    unit = _served("anthropic", "claude-sonnet-4-6", reply, 1)
    assert unit == pytest.approx(0.0048, abs=1e-12)
    # While abandoned and unanswered: nothing spent, two worst cases (>= $0.24576 each) held.
    assert held[0] == 0
    assert held[1] >= 2 * Decimal("0.24576")
    assert (spent, reserved) == (Decimal(repr(2 * unit)), 0)
    abandoned = [e.cost_usd for e in events if isinstance(e, ModelRequestAbandoned)]
    assert abandoned == [pytest.approx(unit, abs=1e-12)] * 2
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    assert ended.total_cost_usd == pytest.approx(2 * unit, abs=1e-12)
