"""A sweep's hard cap, trial by trial, before anything is launched: a trial whose share cannot
hold one request's worst case is not launched, and a trial resumed in place is counted at what
it logged so far plus the estimate of the rounds it has left.

Library-level (``SweepRun.admit``, no Prefect): the plan is the real one (``plan_sweep``), and
the figures are priced with genai-prices directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from glossogen.knobs import DEFAULT_MAX_TOKENS
from glossogen.scenario import load_scenario
from glossogen.sweep import RunRecord, SweepOptions, SweepRun, load_spec, plan_sweep, scan_sweep
from tests.fixtures.model_stubs import StubModelServer
from tests.verify.runs import copy_run, line_of, lines, write
from tests.verify.test_priced_books import PRICE, _play_on

SPEC = """\
scenario: prisoners_dilemma
model: gpt-4.1-mini
provider: openai
runs_dir: {runs}
name: shares
knobs:
  round_count: {rounds}
  postmortem_enabled: false
trials: 2
spend_cap_usd: {cap}
"""

FRAMING_TOKENS = 1024
"""What the cap's reservation adds to a request's bytes for a provider's own framing."""


def _run(tmp_path: Path, cap: float, rounds: int = 1) -> SweepRun:
    tmp_path.mkdir(parents=True, exist_ok=True)
    spec_file = tmp_path / "shares.yaml"
    spec_file.write_text(SPEC.format(runs=tmp_path / "runs", cap=cap, rounds=rounds))
    spec, sweep_id = load_spec(spec_file)
    return SweepRun(plan_sweep(spec, sweep_id, str(spec_file), SweepOptions(concurrency=1)),
                    "in-process")  # fmt: skip


def _least_request(run: SweepRun) -> tuple[str, int, float]:
    """The seat, input floor and USD of the cheapest first request of the sweep's cell (system
    prompt + framing, the default 16,384-token output cap), priced by genai-prices."""
    scenario = load_scenario("prisoners_dilemma")(run.plan.cells[0].plan.knobs)
    found = []
    for spec in scenario.agents():
        tokens = FRAMING_TOKENS + len(scenario.system_prompt(spec).encode())
        usage = Usage(input_tokens=tokens, output_tokens=DEFAULT_MAX_TOKENS)
        price = calc_price(usage, model_ref="gpt-4.1-mini", provider_id="openai").total_price
        found.append((float(price), spec.agent_id, tokens))
    usd, agent, tokens = min(found)
    return agent, tokens, usd


def test_a_trial_whose_share_cannot_hold_one_request_is_not_launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    run = _run(tmp_path, cap=0.02)
    agent, tokens, usd = _least_request(run)
    assert usd > 0.02  # the output cap alone is $0.0262 at $1.60 per million
    keys = run.plan.main_keys()
    assert run.estimate(keys[0]) < 0.02  # the estimate fits: the cap admits the run
    assert run.admit(keys[0], len(keys)) is None
    assert run.aborted is not None
    assert (run.aborted.reason, run.aborted.detail) == (
        "spend_cap",
        f"trial {keys[0].label()}: its share of the cap, $0.020000, is below ${usd:.6f}, the "
        f"worst case one request reserves ({agent} on openai:gpt-4.1-mini: at least {tokens} "
        f"input tokens, {DEFAULT_MAX_TOKENS} out), so its first request would be refused; "
        "2 run(s) not launched",
    )
    run.not_launched(keys)
    assert [run.states[k] for k in keys] == ["incomplete", "incomplete"]
    assert not (tmp_path / "runs" / "prisoners_dilemma").exists()  # nothing claimed or written
    assert not (tmp_path / "runs" / "sweeps" / "shares" / "claims").exists()
    run.close()

    # A share that holds the request is launched with it as its hard cap.
    roomy = _run(tmp_path / "roomy", cap=round(usd + 0.001, 6))
    launch = roomy.admit(keys[0], len(keys))
    assert launch is not None and roomy.aborted is None
    assert launch.cap_usd == round(usd + 0.001, 6)
    roomy.close()


def _stopped(run: SweepRun, tmp_path: Path, spent_usd: float) -> RunRecord:
    """Trial 1's run, stopped after one round of four having logged ``spent_usd``."""
    key = run.plan.main_keys()[0]
    return RunRecord(run_id="prisoners_dilemma/1000000001",
                     run_url=str(tmp_path / "runs/prisoners_dilemma/1000000001"),
                     cell_id=key.cell_id, trial=1, epoch=run.epoch, status="interrupted",
                     rounds_played=1, spent_usd=spent_usd, started=True, endings=1)  # fmt: skip


def test_a_resumed_trial_counts_its_logged_spend_plus_the_rounds_it_has_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    run = _run(tmp_path, cap=1.0, rounds=4)
    key = run.plan.main_keys()[0]
    # One four-round run, the launch estimate (prisoners_dilemma's profile: 2.5 requests a
    # round, 10 a seat; the estimate itself is checked by hand in tests/launch).
    estimate = run.estimate(key)
    assert estimate == run.plan.cells[0].estimate.usd == pytest.approx(0.0072368, abs=1e-12)
    run.latest[key] = stopped = _stopped(run, tmp_path, 0.25)
    launch = run.admit(key, 2)
    assert launch is not None and launch.resume_url == stopped.run_url
    assert launch.cap_usd is None  # it keeps the cap its first launch recorded
    assert run.account.in_flight == {key.label(): 0.25 + estimate * 3 / 4}
    run.close()

    # Its spend so far and its three rounds left would pass the cap: it is not resumed.
    capped = _run(tmp_path / "capped", cap=0.26, rounds=4)
    capped.latest[key] = _stopped(capped, tmp_path / "capped", 0.259)
    assert capped.admit(key, 2) is None
    assert capped.aborted is not None
    assert capped.aborted.detail == (
        f"spent $0.000000 + in flight $0.000000 + next run ~${0.259 + estimate * 3 / 4:.6f} "
        "would pass the cap $0.260000; 2 run(s) not launched"
    )
    capped.close()


def test_a_killed_trials_logged_spend_counts_its_priced_calls_and_its_unsettled_reservation(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A priced run over the stub, cut as a kill would leave it right after a request was
    logged as sent: its record's ``spent_usd`` is its priced calls plus the worst case of each
    request still unsettled (what its resume's cap starts from).

    The two seats' requests overlap as the machine's load lets them: at the cut, the other
    seat's request may be sent and not yet answered (then 3 calls are priced, not 4). Each
    request the cut leaves unsettled gets a capped run's reservation, so the figure is exact
    whichever way they overlapped.
    """
    played = _play_on(model_stub, monkeypatch, tmp_path / "played")
    run_id, log = copy_run(played, tmp_path / "runs", 1000000001)
    events = lines(log)
    sent = [e for e in events if e["event_type"] == "model_request_sent"][4]
    kept = events[: line_of(events, sent)]
    settled = {e.get("request_id") for e in kept if e["event_type"] != "model_request_sent"}
    open_ = [e for e in kept if e["event_type"] == "model_request_sent"
             and e["request_id"] not in settled]  # fmt: skip
    for request in open_:
        request["reserved_usd"] = 0.0125  # a capped run's reservation
    write(log, kept)
    (log.parent / "labels.json").write_text(
        json.dumps({"sweep": "shares", "cell": "c1", "trial": "1", "epoch": "1", "part": "main"})
    )
    priced = [e["cost_usd"] for e in kept if e["event_type"] == "llm_response_received"]
    assert all(c == PRICE for c in priced)  # the price of each reply the stub served
    assert (len(priced), len(open_)) in ((4, 1), (3, 2))  # five requests sent, two seats
    (record,) = scan_sweep(str(tmp_path / "runs"), "prisoners_dilemma", "shares")
    assert (record.run_id, record.status) == (run_id, "interrupted")
    assert record.spent_usd == pytest.approx(len(priced) * PRICE + len(open_) * 0.0125, abs=1e-12)
