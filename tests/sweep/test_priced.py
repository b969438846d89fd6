"""Priced sweeps: a spend cap stops launches (the rest incomplete, exit 20); a model axis.

Runs are real priced runs: provider ``openai``, model ``gpt-4.1-mini`` (known to genai-prices),
answered by the stub model server over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import read_events
from tests.fixtures.model_stubs import StubFault, StubModelServer
from tests.providers.test_wire_formats import pd_player

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
    ended = read_events(str(runs / run_id / "prisoners_dilemma.jsonl")).events[-1]
    assert ended.event_type == "simulation_ended"
    return ended.total_cost_usd


def test_the_cap_stops_launching_marks_the_rest_incomplete_and_exits_20(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    openai_stub.responder = pd_player
    runs = tmp_path / "runs"
    # A pilot: one run whose cost becomes the estimate of the next sweep (a matching run).
    pilot = tmp_path / "pilot.yaml"
    pilot.write_text(SPEC.format(name="pilot", trials=1, cap=10.0))
    assert _sweep(pilot) == 0
    pilot_summary = json.loads((runs / "sweeps/pilot/run_summary.json").read_text())
    (pilot_trial,) = pilot_summary["cells"][0]["trials"]
    per_run = _cost(runs, pilot_trial["run_id"])
    assert per_run > 0
    assert pilot_summary["spend"]["spent_usd"] == pytest.approx(per_run)
    capsys.readouterr()

    capped = tmp_path / "capped.yaml"
    cap = 2.5 * per_run
    capped.write_text(SPEC.format(name="capped", trials=4, cap=cap))
    assert _sweep(capped) == 20
    summary = json.loads((runs / "sweeps/capped/run_summary.json").read_text())
    trials = summary["cells"][0]["trials"]
    played = [t for t in trials if t["run_id"] is not None]
    costs = [_cost(runs, t["run_id"]) for t in played]
    # The cap's rule, replayed on the logged costs (a run's cost varies a little with how many
    # model calls its agents made in real time): one run at a time, each launched while spent
    # + its estimate (the pilot's cost, then the mean of the runs ended) stays within the cap.
    expected, spent, estimate = 0, 0.0, per_run
    while expected < len(costs) and spent + estimate <= cap + 1e-12:
        spent += costs[expected]
        expected += 1
        estimate = spent / expected
    assert spent + estimate > cap  # the next run would have passed it: launching stopped
    n = len(played)
    assert (n, 1 < n < 4) == (expected, True)
    ((cell_id, recorded),) = summary["spend"]["estimate_per_run_usd"].items()
    assert recorded == pytest.approx(sum(costs) / n)
    assert summary["spend"]["estimate_source"][cell_id] == f"mean logged cost of {n} ended run(s)"
    assert summary["census"] == {
        "planned": 0,
        "running": 0,
        "done": n,
        "failed": 0,
        "incomplete": 4 - n,
    }
    assert [t["state"] for t in trials] == ["done"] * n + ["incomplete"] * (4 - n)
    assert [t["run_id"] is None for t in trials] == [False] * n + [True] * (4 - n)
    assert trials[n]["error"] == "not launched: spend_cap"
    assert summary["spend"]["spent_usd"] == pytest.approx(sum(costs))
    assert summary["spend"]["spent_usd"] <= summary["spend"]["cap_usd"]
    assert summary["aborted"]["reason"] == "spend_cap"
    assert summary["aborted"]["detail"].endswith(f"{4 - n} run(s) not launched")
    assert summary["exit_code"] == 20
    printed = capsys.readouterr()
    assert "glossogen: error: sweep stopped early (spend_cap)" in printed.err
    assert f"spent ${sum(costs):.6f} of ${cap:.6f}" in printed.out  # the cap's digits
    assert len(list((runs / "prisoners_dilemma").iterdir())) == 1 + n  # the pilot + n


def test_a_knob_by_model_by_trials_grid_runs_each_cell_on_its_model(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    openai_stub.responder = pd_player
    spec = tmp_path / "grid.yaml"
    spec.write_text(
        "scenario: prisoners_dilemma\nruns_dir: ./runs\n"
        "knobs: {postmortem_enabled: false, idle_floor_seconds: 0.05}\n"
        "grid:\n  round_count: [1, 2]\n"
        "  models: [{model: scripted, provider: scripted}, {model: gpt-4.1-mini, provider: openai}]\n"
        "trials: 2\nspend_cap_usd: 5.0\n"
    )
    assert _sweep(spec, concurrency=4) == 0
    runs = tmp_path / "runs"
    summary = json.loads((runs / "sweeps/grid/run_summary.json").read_text())
    assert summary["census"]["done"] == 8
    assert [(c["params"]["round_count"], c["model"], c["provider"]) for c in summary["cells"]] == [
        (1, "scripted", "scripted"),
        (1, "gpt-4.1-mini", "openai"),
        (2, "scripted", "scripted"),
        (2, "gpt-4.1-mini", "openai"),
    ]
    costs = []
    for cell in summary["cells"]:
        for trial in cell["trials"]:
            events = read_events(str(runs / trial["run_id"] / "prisoners_dilemma.jsonl")).events
            seats = {(e.model, e.provider) for e in events if e.event_type == "agent_registered"}
            assert seats == {(cell["model"], cell["provider"])}
            assert trial["scores"]["rounds_played"] == cell["params"]["round_count"]
            cost = events[-1].total_cost_usd
            assert (cost > 0) == (cell["provider"] == "openai")
            costs.append(cost)
    assert summary["spend"]["spent_usd"] == pytest.approx(sum(costs))


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
    assumed_source = "assumed token counts (glossogen.launch)"
    assert spend["estimate_source"][cell_id] == assumed_source
    assert assumed > 0
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
