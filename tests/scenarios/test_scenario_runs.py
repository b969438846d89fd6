"""The scenarios as a user runs them from the CLI: what ``glossogen run`` prints, a run cut
mid-round and resumed, a fork replaying the later rounds, ``evaluate`` on the finished run.

Each scenario's scripted CLI run is played once (by the CLI's entry, in-process: the slowest
part) and read by every test here; the real-HTTP plays are in each scenario's own ``*_runs`` file.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from flows.simulate import resume
from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import RunResumed, read_events
from glossogen.launch import VIRTUAL_CLOCK_SETTING
from glossogen.scenario import load_scenario
from scenarios.spot_the_difference.events import SpotTheDifferenceRoundRanked
from tests.scenarios._runs import verdicts

CONFIG = {  # each scenario's ``glossogen run`` arguments after the scripted model and provider
    "signal_game": ["--config", "knobs_default"],
    "spot_the_difference": ["--config", "knobs_default"],
    "orbital_anomaly": ["--config", "knobs_default", "round_count=4"],
    "drive_module_repair": ["--config", "knobs_default", "round_count=4"],
}

CliRun = tuple[Path, list[str]]
"""A finished run's folder and the lines ``glossogen run`` printed."""


def _cli(*args: str, cwd: Path) -> tuple[int | str | None, str, str]:
    """``glossogen ARGS`` run in ``cwd`` by the CLI's own entry (``main``), its scripted run on
    game time (no real second passes for a scripted seat's latency or an idle floor): its exit
    code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        patch.setenv(VIRTUAL_CLOCK_SETTING, "1")
        with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exited:
            main(list(args))
    return exited.value.code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def cli_run(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], CliRun]:
    """Return the scripted CLI run of a scenario, played the first time it is asked for."""
    played: dict[str, CliRun] = {}

    def run(scenario: str) -> CliRun:
        if scenario not in played:
            cwd = tmp_path_factory.mktemp(scenario)
            code, out, err = _cli(
                "run", scenario, "--model", "scripted", "--provider", "scripted",
                "--runs-dir", "./runs", *CONFIG[scenario], cwd=cwd,
            )  # fmt: skip
            assert code == 0, err
            lines = out.splitlines()
            folder = next(x for x in lines if x.startswith("new_run_dir=")).split("=", 1)[1]
            played[scenario] = (Path(folder), lines)
        return played[scenario]

    return run


def _log(run: Path, scenario: str) -> Path:
    return run / f"{scenario}.jsonl"


# -- what the CLI prints ----------------------------------------------------------------------

PRINTED = {
    "signal_game": (
        "4/5 rounds won",
        ["lost (3 of 5 targets chosen correctly)"] + ["won (5 of 5 targets chosen correctly)"] * 4,
    ),
    "spot_the_difference": ("4/5 rounds won", [  # the ranking's winners won, the others not
        "team a won (all 2 differences found, 583 characters)",
        "team b lost (viewer_left_b: 1 of 2 differences found, 0 false positive(s))",
        "team a won (all 4 differences found, 553 characters)",
        "team b eligible (all 4 differences found, 782 characters)",
        "team a won (all 3 differences found, 404 characters)",
        "team b eligible (all 3 differences found, 544 characters)",
        "team a won (all 4 differences found, 551 characters)",
        "team b eligible (all 4 differences found, 765 characters)",
        "team a eligible (all 3 differences found, 537 characters)",
        "team b won (all 3 differences found, 384 characters)",
    ]),
    "orbital_anomaly": ("3/4 rounds won", [
        "won (3 of 3 stages cleared)", "won (2 of 2 stages cleared)",
        "lost (budget exceeded at stage 2 of 3)", "won (5 of 5 stages cleared)",
    ]),
    "drive_module_repair": ("3/4 rounds won", [
        "won (3 of 3 faults fixed)", "lost (budget exceeded with 4 of 5 faults fixed)",
        "won (3 of 3 faults fixed)", "won (4 of 4 faults fixed)",
    ]),
}  # fmt: skip
SUMMARY = {  # messages and characters of the whole run, postmortems included
    "signal_game": "35 messages · 893 characters",
    "spot_the_difference": "40 messages · 6226 characters",
    "orbital_anomaly": "46 messages · 2727 characters",
    "drive_module_repair": "59 messages · 3311 characters",
}
TOKENS = {  # the scripted seats' usage as pydantic-ai counts it: input, output
    "signal_game": (445651, 858),
    "spot_the_difference": (376434, 3202),
    "orbital_anomaly": (501623, 2117),
    "drive_module_repair": (637165, 2361),
}


@pytest.mark.parametrize("scenario", sorted(PRINTED))
def test_the_cli_prints_each_round_and_the_summary(
    scenario: str, cli_run: Callable[[str], CliRun]
) -> None:
    run_dir, lines = cli_run(scenario)
    won, rounds = PRINTED[scenario]
    printed = [x.split(": ", 1)[1].split(" · ")[0] for x in lines if x.startswith("round ")]
    assert printed == rounds
    summary, took = lines[-1].rsplit(" · ", 1)
    tokens_in, tokens_out = TOKENS[scenario]
    assert summary == (
        f"{scenario}/{run_dir.name} completed: {won} · {SUMMARY[scenario]} (postmortems "
        f"included) · $0.000000 · tokens {tokens_in} in (0 cache read, 0 cache write, 0 of it "
        f"1 h), {tokens_out} out, 0.0% of input from cache"
    )
    assert re.fullmatch(r"\d+\.\d s", took)  # the run's wall-clock duration
    assert _log(run_dir, scenario).is_file()


# -- cut and resumed --------------------------------------------------------------------------


def _is_cut_point(scenario: str, event: dict[str, Any]) -> bool:
    """The event the copy of the log is cut after: mid-round, after the round's first ruling."""
    kind = event["event_type"]
    if scenario == "signal_game":  # the first choice of round 2
        return kind == "signal_game_choice_made" and event["round_number"] == 2
    if scenario == "spot_the_difference":  # the first judged answer
        return kind == "spot_the_difference_submission_judged"
    # the first accepted stage of round 1 (a three-stage round in both staged scenarios)
    judged = "actuation" if scenario == "orbital_anomaly" else "replacement"
    return kind == f"{scenario}_{judged}_judged" and bool(event["match"])


REOPENED = {"signal_game": 2, "spot_the_difference": 1, "orbital_anomaly": 1, "drive_module_repair": 1}  # fmt: skip


@pytest.mark.parametrize("scenario", sorted(REOPENED))
def test_a_run_cut_mid_round_resumes_to_the_same_verdicts(
    scenario: str, cli_run: Callable[[str], CliRun], tmp_path: Path
) -> None:
    finished, _ = cli_run(scenario)
    log = _log(finished, scenario)
    lines = log.read_text().splitlines(keepends=True)
    cut = next(i + 1 for i, line in enumerate(lines) if _is_cut_point(scenario, json.loads(line)))
    assert json.loads(lines[cut - 1])["round_number"] == REOPENED[scenario]
    run = tmp_path / scenario / finished.name
    shutil.copytree(finished, run)
    _log(run, scenario).write_text("".join(lines[:cut]))
    result = asyncio.run(resume(run_dir=str(run)))
    assert result.status == "completed"
    assert verdicts(_log(run, scenario)) == verdicts(log)
    resumed = [e for e in read_events(str(_log(run, scenario))).events if isinstance(e, RunResumed)]
    assert [e.reopened_round for e in resumed] == [REOPENED[scenario]]


# -- forked and evaluated ---------------------------------------------------------------------

FORKS = {  # the round a fork starts after, the scenario's own per-target or per-answer event
    "signal_game": (3, "signal_game_choice_made", {1: 5, 2: 5, 3: 5, 4: 5, 5: 5}),
    "spot_the_difference": (2, "spot_the_difference_submission_judged", {1: 4, 2: 4, 3: 4, 4: 4, 5: 4}),
}  # fmt: skip


@pytest.mark.parametrize("scenario", sorted(FORKS))
def test_a_fork_replays_the_later_rounds_to_the_same_verdicts(
    scenario: str, cli_run: Callable[[str], CliRun], tmp_path: Path
) -> None:
    source, _ = cli_run(scenario)
    after, own, per_round = FORKS[scenario]
    prepared = prepare_fork(ForkRequest(scenario, str(source), after, str(tmp_path)))
    assert asyncio.run(resume(run_dir=prepared.folder.url)).status == "completed"
    fork = _log(Path(prepared.folder.url), scenario)
    assert verdicts(fork) == verdicts(_log(source, scenario))
    load_scenario(scenario)  # registers its events, so the reader knows them
    counted: dict[int, int] = {}
    for e in read_events(str(fork)).events:
        if e.event_type == own:
            counted[e.round_number] = counted.get(e.round_number, 0) + 1
    assert counted == per_round  # rounds up to ``after`` copied, the later ones played again


SIGNAL_GAME_METRICS = {
    "round_success": {
        "name": "round_success",
        "kind": "deterministic",
        "version": 1,
        "unit": "share of rounds won",
        "status": "ok",
        "score": 0.8,
        "summary": "4 of 5 rounds won",
        "rounds": 5,
        "per_round": [
            {
                "round_number": 1,
                "value": 0.0,
                "team_id": "pair",
                "note": "lost: 3 of 5 targets chosen correctly",
            },
            {
                "round_number": 2,
                "value": 1.0,
                "team_id": "pair",
                "note": "won: 5 of 5 targets chosen correctly",
            },
            {
                "round_number": 3,
                "value": 1.0,
                "team_id": "pair",
                "note": "won: 5 of 5 targets chosen correctly",
            },
            {
                "round_number": 4,
                "value": 1.0,
                "team_id": "pair",
                "note": "won: 5 of 5 targets chosen correctly",
            },
            {
                "round_number": 5,
                "value": 1.0,
                "team_id": "pair",
                "note": "won: 5 of 5 targets chosen correctly",
            },
        ],
        "per_agent": [],
        "replicas": None,
        "agreement": None,
        "judge": None,
        "cost_usd": 0.0,
        "sidecar": None,
        "error": None,
    },
    "topographic_similarity": {
        "name": "topographic_similarity",
        "kind": "deterministic",
        "version": 1,
        "unit": "Spearman correlation of meaning and message distances",
        "status": "ok",
        "score": 0.7147750540556387,
        "summary": "topographic similarity 0.715 over 25 messages",
        "rounds": 5,
        "per_round": [
            {"round_number": 1, "value": 0.7349043394794006, "team_id": None, "note": "5 messages"},
            {"round_number": 2, "value": 0.9592942190866189, "team_id": None, "note": "5 messages"},
            {"round_number": 3, "value": 0.9214426752509268, "team_id": None, "note": "5 messages"},
            {"round_number": 4, "value": 0.8401680504168058, "team_id": None, "note": "5 messages"},
            {"round_number": 5, "value": 0.9157015435010396, "team_id": None, "note": "5 messages"},
        ],
        "per_agent": [],
        "replicas": None,
        "agreement": None,
        "judge": None,
        "cost_usd": 0.0,
        "sidecar": None,
        "error": None,
    },
}

SPOT_THE_DIFFERENCE_METRICS = {
    "round_success": {
        "name": "round_success",
        "kind": "deterministic",
        "version": 1,
        "unit": "share of rounds won",
        "status": "ok",
        "score": 0.8,
        "summary": "4 of 5 rounds won",
        "rounds": 5,
        "per_round": [
            {
                "round_number": 1,
                "value": 1.0,
                "team_id": "a",
                "note": "won: all 2 differences found, 583 characters",
            },
            {
                "round_number": 1,
                "value": 0.0,
                "team_id": "b",
                "note": "lost: viewer_left_b: 1 of 2 differences found, 0 false positive(s)",
            },
            {
                "round_number": 2,
                "value": 1.0,
                "team_id": "a",
                "note": "won: all 4 differences found, 553 characters",
            },
            {
                "round_number": 2,
                "value": 1.0,
                "team_id": "b",
                "note": "won: all 4 differences found, 782 characters",
            },
            {
                "round_number": 3,
                "value": 1.0,
                "team_id": "a",
                "note": "won: all 3 differences found, 404 characters",
            },
            {
                "round_number": 3,
                "value": 1.0,
                "team_id": "b",
                "note": "won: all 3 differences found, 544 characters",
            },
            {
                "round_number": 4,
                "value": 1.0,
                "team_id": "a",
                "note": "won: all 4 differences found, 551 characters",
            },
            {
                "round_number": 4,
                "value": 1.0,
                "team_id": "b",
                "note": "won: all 4 differences found, 765 characters",
            },
            {
                "round_number": 5,
                "value": 1.0,
                "team_id": "a",
                "note": "won: all 3 differences found, 537 characters",
            },
            {
                "round_number": 5,
                "value": 1.0,
                "team_id": "b",
                "note": "won: all 3 differences found, 384 characters",
            },
        ],
        "per_agent": [],
        "replicas": None,
        "agreement": None,
        "judge": None,
        "cost_usd": 0.0,
        "sidecar": None,
        "error": None,
    }
}

REPORTS = {
    "signal_game": ("topographic_similarity,round_success", SIGNAL_GAME_METRICS),
    "spot_the_difference": ("round_success", SPOT_THE_DIFFERENCE_METRICS),
}


@pytest.mark.parametrize("scenario", sorted(REPORTS))
def test_evaluate_writes_the_report_of_its_metrics(
    scenario: str,
    cli_run: Callable[[str], CliRun],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, _ = cli_run(scenario)
    folder = tmp_path / "copy"
    shutil.copytree(source, folder)
    metrics, expected = REPORTS[scenario]
    with pytest.raises(SystemExit) as done:
        main(["evaluate", scenario, "--run-dir", str(folder), "--metrics", metrics])
    assert done.value.code == 0
    report = json.loads((folder / f"{scenario}_report.json").read_text())
    assert (report["run_id"], report["scenario"], report["run_status"]) == (
        f"{scenario}/{source.name}", scenario, "completed"
    )  # fmt: skip
    assert report["metrics"] == expected
    assert (report["left_blank"], report["log_lines_skipped"]) == (
        {}, {"invalid": 0, "unknown": 0, "truncated_tail": False}
    )  # fmt: skip
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"report: {folder}/{scenario}_report.json · evaluation cost $0.000000"


def test_spot_the_difference_counts_a_round_won_when_every_team_won_it(
    cli_run: Callable[[str], CliRun],
) -> None:
    run_dir, _ = cli_run("spot_the_difference")
    log = _log(run_dir, "spot_the_difference")
    assert [(n, t, ok) for n, t, ok, _ in verdicts(log)] == [
        (n, t, not (n == 1 and t == "b")) for n in range(1, 6) for t in ("a", "b")
    ]
    load_scenario("spot_the_difference")  # registers its events, so the reader knows them
    events = read_events(str(log)).events
    ranked = [e.winners for e in events if isinstance(e, SpotTheDifferenceRoundRanked)]
    assert ranked == [["a"], ["a"], ["a"], ["a"], ["b"]]


def test_a_signal_game_fork_whose_knobs_drop_parallel_tool_calls_is_warned_about(
    cli_run: Callable[[str], CliRun], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _ = cli_run("signal_game")
    knobs = json.loads((source / "config.json").read_text())
    knobs["agent_model_settings"] = {"max_tokens": 4000}  # the object replaces the source's
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps(knobs))
    argv = ["fork-at-round", "signal_game", "--source-run-dir", str(source), "--after-round", "4",
            "--runs-dir", str(tmp_path / "forks"), "--knobs", str(path), "--wait"]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    warned = [x for x in capsys.readouterr().err.splitlines() if "warning" in x]
    assert warned == [
        "glossogen: warning: signal_game: agent_model_settings.parallel_tool_calls is not false, "
        "so a model may send and choose in one response; the presets set it to false"
    ]
