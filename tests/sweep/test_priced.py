"""Priced sweeps: a spend cap stops launches (the rest incomplete, exit 20); a model axis.

Runs are real priced runs: provider ``openai``, model ``gpt-4.1-mini`` (known to genai-prices),
answered by the stub model server over HTTP on 127.0.0.1, on the virtual clock (``model_stub``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from glossogen.cli import main
from glossogen.eventlog import (
    AgentRegistered,
    LlmResponseReceived,
    SimulationEnded,
    ToolCallInvoked,
    ToolResultReceived,
    read_events,
)
from glossogen.launch import RunRequest, estimate_cost, plan_run
from tests.fixtures.model_stubs import (
    RecordedRequest,
    Served,
    StubFault,
    StubModelServer,
    StubReply,
)
from tests.providers.test_wire_formats import USAGE

SPEC = """\
scenario: prisoners_dilemma
model: gpt-4.1-mini
provider: openai
runs_dir: ./runs
name: {name}
knobs:
  round_count: 1
  postmortem_enabled: false
  idle_floor_seconds: 0.05
trials: {trials}
spend_cap_usd: {cap}
"""


def _sweep(spec: Path, concurrency: int = 1) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", str(spec), "--concurrency", str(concurrency)])
    return int(exited.value.code)


def _cost(runs: Path, run_id: str) -> float:
    (ended,) = [
        e
        for e in read_events(str(runs / run_id / "prisoners_dilemma.jsonl")).events
        if isinstance(e, SimulationEnded)
    ]
    return ended.total_cost_usd


DONE_USAGE = {"input_tokens": 10, "output_tokens": 1}
"""The usage the stub reports for a seat's call after it locked in (a billed call reports some)."""


def lock_in_player(req: RecordedRequest) -> StubReply:
    """Lock in cooperate at once (the one lock-in call of a seat's round), then stop.

    Nothing a seat does reaches the other seat, so each round makes exactly one lock-in call per
    seat whichever answer the stub sends first. The call after ``locked`` races the round's end:
    it may not be sent, or be answered in the round, or be answered after the round ended
    (logged ``model_request_abandoned``, answered); :func:`expected_cost` counts what the stub
    served, whichever happened.
    """
    last = json.dumps(req.messages[-1]) if req.messages else ""
    if "locked" in last:
        return StubReply(text="Done.", **DONE_USAGE)
    return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})], **USAGE)


def _call_ids(runs: Path, run_id: str) -> set[str]:
    """The tool call ids a run's log names (the stub makes them: ``call_stub_<n>_<i>``)."""
    ids: set[str] = set()
    for e in read_events(str(runs / run_id / "prisoners_dilemma.jsonl")).events:
        if isinstance(e, ToolCallInvoked | ToolResultReceived):
            ids.add(e.tool_call_id)
        elif isinstance(e, LlmResponseReceived):
            ids |= {c["tool_call_id"] for c in e.tool_calls}
    return ids


def _conversation(served: Served) -> set[str]:
    """The stub's call ids a served reply made or its request carried results of."""
    return {*served.call_ids, *(call_id for call_id, _ in served.request.tool_results)}


def expected_cost(stub: StubModelServer, runs: Path, run_id: str) -> float:
    """What the stub billed the run: genai-prices' price of each reply it served the run's
    conversations (a reply whose call ids, or whose request's tool results, the log names)."""
    ids = _call_ids(runs, run_id)
    return sum(s.usd(MODEL, "openai") for s in stub.served if _conversation(s) & ids)


def assert_each_reply_billed_to_one_run(
    stub: StubModelServer, runs: Path, run_ids: list[str]
) -> None:
    """Every reply the stub served belongs to exactly one of ``run_ids``: none is in no log."""
    ids = [_call_ids(runs, run_id) for run_id in run_ids]
    owners = [sum(bool(_conversation(s) & run) for run in ids) for s in stub.served]
    assert owners == [1] * len(stub.served)


MODEL = "gpt-4.1-mini"

PER_RUN = 2 * float(
    calc_price(
        Usage(input_tokens=1000, output_tokens=50, cache_read_tokens=200),
        model_ref="gpt-4.1-mini",
        provider_id="openai",
    ).total_price
)
"""What one run of ``SPEC`` costs under :func:`lock_in_player`: one round, two priced calls."""


def test_the_cap_stops_launching_marks_the_rest_incomplete_and_exits_20(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    openai_stub.responder = lock_in_player
    runs = tmp_path / "runs"
    # A pilot: one run whose cost becomes the estimate of the next sweep (a matching run).
    pilot = tmp_path / "pilot.yaml"
    pilot.write_text(SPEC.format(name="pilot", trials=1, cap=10.0))
    assert _sweep(pilot) == 0
    pilot_summary = json.loads((runs / "sweeps/pilot/run_summary.json").read_text())
    (pilot_trial,) = pilot_summary["cells"][0]["trials"]
    pilot_cost = expected_cost(openai_stub, runs, pilot_trial["run_id"])
    assert _cost(runs, pilot_trial["run_id"]) == pytest.approx(pilot_cost, rel=1e-12)
    assert pilot_summary["spend"]["spent_usd"] == pytest.approx(pilot_cost, rel=1e-12)
    capsys.readouterr()

    # Room for 2.5 runs: run 1 (0 + 1 estimate), run 2 (1 + 1), and no run 3 (2 + 1 > 2.5).
    capped = tmp_path / "capped.yaml"
    cap = 2.5 * PER_RUN
    capped.write_text(SPEC.format(name="capped", trials=4, cap=cap))
    assert _sweep(capped) == 20
    summary = json.loads((runs / "sweeps/capped/run_summary.json").read_text())
    trials = summary["cells"][0]["trials"]
    assert [(t["state"], t["run_id"] is None) for t in trials] == [
        ("done", False),
        ("done", False),
        ("incomplete", True),
        ("incomplete", True),
    ]
    costs = [expected_cost(openai_stub, runs, t["run_id"]) for t in trials[:2]]
    assert_each_reply_billed_to_one_run(
        openai_stub, runs, [pilot_trial["run_id"], *(t["run_id"] for t in trials[:2])]
    )
    assert [_cost(runs, t["run_id"]) for t in trials[:2]] == [
        pytest.approx(c, rel=1e-12) for c in costs
    ]
    ((cell_id, recorded),) = summary["spend"]["estimate_per_run_usd"].items()
    assert recorded == pytest.approx(sum(costs) / 2, rel=1e-12)
    assert summary["spend"]["estimate_source"][cell_id] == "mean logged cost of 2 ended run(s)"
    assert summary["census"] == {
        "planned": 0,
        "running": 0,
        "done": 2,
        "failed": 0,
        "incomplete": 2,
    }
    assert trials[2]["error"] == "not launched: spend_cap"
    assert summary["spend"]["spent_usd"] == pytest.approx(sum(costs), rel=1e-12)
    assert summary["spend"]["cap_usd"] == pytest.approx(cap, rel=1e-12)
    assert summary["aborted"]["reason"] == "spend_cap"
    assert summary["aborted"]["detail"].endswith("2 run(s) not launched")
    assert summary["exit_code"] == 20
    printed = capsys.readouterr()
    assert "glossogen: error: sweep stopped early (spend_cap)" in printed.err
    assert f"spent ${sum(costs):.6f} of ${cap:.6f}" in printed.out  # the cap's digits
    assert len(list((runs / "prisoners_dilemma").iterdir())) == 3  # the pilot + 2


def test_a_knob_by_model_grid_runs_each_cell_on_its_model(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    openai_stub.responder = lock_in_player
    spec = tmp_path / "grid.yaml"
    spec.write_text(
        "scenario: prisoners_dilemma\nruns_dir: ./runs\n"
        "knobs: {postmortem_enabled: false, idle_floor_seconds: 0.05}\n"
        "grid:\n  round_count: [1, 2]\n"
        "  models: [{model: scripted, provider: scripted}, {model: gpt-4.1-mini, provider: openai}]\n"
        "trials: 1\nspend_cap_usd: 5.0\n"  # trials x cells: the issue spec's test (test_sweep)
    )
    assert _sweep(spec, concurrency=4) == 0
    runs = tmp_path / "runs"
    summary = json.loads((runs / "sweeps/grid/run_summary.json").read_text())
    assert summary["census"]["done"] == 4
    assert [(c["params"]["round_count"], c["model"], c["provider"]) for c in summary["cells"]] == [
        (1, "scripted", "scripted"),
        (1, "gpt-4.1-mini", "openai"),
        (2, "scripted", "scripted"),
        (2, "gpt-4.1-mini", "openai"),
    ]
    spent = 0.0
    priced_runs: list[str] = []
    for cell in summary["cells"]:
        rounds, priced = cell["params"]["round_count"], cell["provider"] == "openai"
        for trial in cell["trials"]:
            events = read_events(str(runs / trial["run_id"] / "prisoners_dilemma.jsonl")).events
            seats = {(e.model, e.provider) for e in events if isinstance(e, AgentRegistered)}
            assert seats == {(cell["model"], cell["provider"])}
            assert trial["scores"]["rounds_played"] == rounds
            expected = expected_cost(openai_stub, runs, trial["run_id"]) if priced else 0.0
            assert _cost(runs, trial["run_id"]) == pytest.approx(expected, rel=1e-12)
            spent += expected
            priced_runs += [trial["run_id"]] if priced else []
    assert_each_reply_billed_to_one_run(openai_stub, runs, priced_runs)
    # One trial of each openai cell: 1 + 2 rounds of two lock-in calls, plus calls after.
    # A bound: how many calls after a lock-in are sent races the round's end (seen 0-2, even on
    # the virtual clock); each trial's exact cost, what the stub served it, is checked above.
    assert spent >= 3 * PER_RUN
    assert summary["spend"]["spent_usd"] == pytest.approx(spent, rel=1e-12)


def test_runs_whose_every_call_failed_never_become_a_zero_estimate_that_defeats_the_cap(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    openai_stub.responder = lambda req: StubFault(status=503, retry_after=0)
    runs = tmp_path / "runs"
    # The price-catalogue estimate of one run, read from a sweep its cap stops at once.
    probe = tmp_path / "probe.yaml"
    probe.write_text(SPEC.format(name="probe", trials=1, cap="0.000000001"))
    assert _sweep(probe) == 20
    spend = json.loads((runs / "sweeps/probe/run_summary.json").read_text())["spend"]
    ((cell_id, assumed),) = spend["estimate_per_run_usd"].items()
    assumed_source = "the launch estimate (glossogen.launch.estimate_cost)"
    assert spend["estimate_source"][cell_id] == assumed_source
    # The launch estimate of one run of the spec's cell (two gpt-4.1-mini seats, one round).
    plan = plan_run(
        RunRequest(
            scenario="prisoners_dilemma",
            model="gpt-4.1-mini",
            provider="openai",
            runs_dir=str(runs),
            config="knobs_default",
            overrides=["round_count=1", "postmortem_enabled=false", "idle_floor_seconds=0.05"],
        )
    )
    assert assumed == pytest.approx(estimate_cost(plan).total_usd, rel=1e-12)
    # The provider is down: a run whose every call failed ends error, logging $0.
    down = tmp_path / "down.yaml"
    down.write_text(SPEC.format(name="down", trials=1, cap=10.0))
    assert _sweep(down) == 69
    # That $0 is no estimate: with room for 1.5 runs, the cap admits one run, not all three
    # (it also stays the estimate once that run failed in turn).
    capped = tmp_path / "capped.yaml"
    capped.write_text(SPEC.format(name="capped", trials=3, cap=1.5 * assumed))
    capsys.readouterr()
    assert _sweep(capped, concurrency=4) == 20
    summary = json.loads((runs / "sweeps/capped/run_summary.json").read_text())
    assert summary["spend"]["estimate_per_run_usd"] == {cell_id: pytest.approx(assumed)}
    assert summary["spend"]["estimate_source"] == {cell_id: assumed_source}
    trials = summary["cells"][0]["trials"]
    assert [(t["state"], t["status"]) for t in trials] == [
        ("failed", "error"),
        ("incomplete", None),
        ("incomplete", None),
    ]
    assert trials[1]["error"] == "not launched: spend_cap"
    assert summary["aborted"]["reason"] == "spend_cap"
    assert "sweep stopped early (spend_cap)" in capsys.readouterr().err
    assert len(list((runs / "prisoners_dilemma").iterdir())) == 2  # down's run + 1
