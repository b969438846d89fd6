"""orbital_anomaly and drive_module_repair through the derived-run and sweep paths a researcher
uses on veyru: fork-at-round, replace-agent, cross-run-replace-agent, and a sweep of trials.

Scripted seats and the scripted judge are deterministic and each round's case is drawn from the
run's seed and the round number, so a derived run replays its source's later rounds exactly.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from flows.simulate import resume, simulate
from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork, read_state
from glossogen.eventlog import AgentRegistered, SimulationEnded, read_events
from glossogen.launch import RunRequest
from tests.scenarios._runs import verdicts

SCENARIOS = ("drive_module_repair", "orbital_anomaly")
REPLACED = {"orbital_anomaly": "telemetry_officer", "drive_module_repair": "field_technician"}
SEATS = {
    "orbital_anomaly": ["astronaut", "telemetry_officer", "systems_engineer"],
    "drive_module_repair": ["field_technician", "diagnostics_engineer", "spec_engineer"],
}


def _verdicts(run: Path, scenario: str) -> list[tuple[int, str, bool, str]]:
    return verdicts(run / f"{scenario}.jsonl")


@pytest.fixture(scope="module", params=SCENARIOS)
def source(
    request: pytest.FixtureRequest, prefect_api: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    scenario = request.param
    result = asyncio.run(
        simulate(
            RunRequest(
                scenario=scenario,
                model="scripted",
                provider="scripted",
                runs_dir=str(tmp_path_factory.mktemp("runs")),
                config="knobs_default",
            )
        )
    )
    assert result.status == "completed"
    return scenario, Path(result.run_url)


def _play(request: ForkRequest) -> Path:
    prepared = prepare_fork(request)
    result = asyncio.run(resume(run_dir=prepared.folder.url))
    assert result.status == "completed"
    return Path(prepared.folder.url)


def test_a_fork_after_round_2_replays_the_sources_rounds(
    source: tuple[str, Path], tmp_path: Path
) -> None:
    scenario, run = source
    fork = _play(ForkRequest(scenario, str(run), 2, str(tmp_path)))
    assert _verdicts(fork, scenario) == _verdicts(run, scenario)
    assert json.loads((fork / "lineage.json").read_text())["derivation"] == "fork_at_round"


def test_a_replaced_seat_plays_on_from_the_boundary(
    source: tuple[str, Path], tmp_path: Path
) -> None:
    scenario, run = source
    seat = REPLACED[scenario]
    swap = _play(
        ForkRequest(scenario, str(run), 3, str(tmp_path), 2, None, seat, "other-script", "scripted")
    )
    events = read_events(str(swap / f"{scenario}.jsonl")).events
    anew = [(e.agent_id, e.model) for e in events if isinstance(e, AgentRegistered)]
    # the source's seats, copied, then the fork's, the replaced one under its new model
    assert anew == [(a, "scripted") for a in SEATS[scenario]] + [
        (a, "other-script" if a == seat else "scripted") for a in SEATS[scenario]
    ]
    # The scripted seat plays by its rule whatever its model's name: the same five rounds.
    assert _verdicts(swap, scenario) == _verdicts(run, scenario)
    ended = events[-1]
    assert isinstance(ended, SimulationEnded) and ended.rounds_played == 5


def test_a_seat_brought_from_another_run_keeps_its_history(
    source: tuple[str, Path], tmp_path: Path
) -> None:
    scenario, run = source
    seat = REPLACED[scenario]
    prepared = prepare_fork(
        ForkRequest(
            scenario,
            str(run),
            4,
            str(tmp_path),
            1,
            None,
            seat,
            "scripted",
            "scripted",
            "full",
            str(run),
            seat,
        )  # fmt: skip
    )
    log = Path(prepared.folder.url) / f"{scenario}.jsonl"
    donor = read_state(read_events(str(run / f"{scenario}.jsonl")).events).histories[seat]
    assert len(read_state(read_events(str(log)).events).histories[seat]) == len(donor)
    result = asyncio.run(resume(run_dir=prepared.folder.url))
    assert result.status == "completed"
    crossed = Path(prepared.folder.url)
    lineage = json.loads((crossed / "lineage.json").read_text())
    assert lineage["derivation"] == "cross_run_replace_agent"
    assert _verdicts(crossed, scenario) == _verdicts(run, scenario)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_sweep_of_two_trials_per_cell(prefect_api: str, tmp_path: Path, scenario: str) -> None:
    spec = tmp_path / "staged.yaml"
    spec.write_text(
        f"scenario: {scenario}\nconfig: knobs_default\nmodel: scripted\nprovider: scripted\n"
        f"runs_dir: {tmp_path / 'runs'}\ngrid:\n  round_count: [1, 2]\ntrials: 2\n"
    )
    with pytest.raises(SystemExit) as exited:
        main(["sweep", str(spec)])
    assert exited.value.code == 0
    summary = json.loads((tmp_path / "runs" / "sweeps" / "staged" / "run_summary.json").read_text())
    assert summary["census"] == {
        "planned": 0, "running": 0, "done": 4, "failed": 0, "incomplete": 0,
    }  # fmt: skip
    assert [c["params"] for c in summary["cells"]] == [{"round_count": 1}, {"round_count": 2}]
    for cell in summary["cells"]:
        assert [t["state"] for t in cell["trials"]] == ["done", "done"]
        assert [t["scores"]["rounds_played"] for t in cell["trials"]] == [
            cell["params"]["round_count"]
        ] * 2
