"""A refusal over REST and MCP names the server's runs directory, never its path (the CLI's
user typed ``--runs-dir``, and its line names it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import (
    Answer,
    _cli,
    _mcp,
)


def _rest_refusal(runs_dir: str, method: str, route: str, **request: Any) -> Answer:
    """A REST refusal: its status and its one line (``field: message`` when it names one)."""
    got = TestClient(create_app(runs_dir)).request(method, f"/api/g/local/runs/{route}", **request)
    detail = got.json()["detail"]
    line = f"{detail['field']}: {detail['message']}" if "field" in detail else detail["message"]
    return Answer(got.status_code != 200, line, got.status_code)


def test_a_refusal_over_rest_and_mcp_never_names_the_servers_runs_directory(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's user typed ``--runs-dir``, and its line names it; a client of the server gave
    no path and cannot act on one: REST and MCP name the server's runs directory, not its path."""
    runs = str(tmp_path / "runs")
    played = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    out = str(tmp_path / "out")
    cli_line = f"--scenario 'nosuch' has no run under {runs} (scenarios there: veyru)"
    assert _cli(capsys, "analyze", "--runs-dir", runs, "--scenario", "nosuch", "--measure",
                "run_id:count") == Answer(True, cli_line, 65)  # fmt: skip
    assert _cli(capsys, "export", "--runs-dir", runs, "--out", out, "--scenario",
                "nosuch") == Answer(True, cli_line, 65)  # fmt: skip
    served = "scenario 'nosuch' has no run in the server's runs directory (scenarios there: veyru)"
    nosuch = {"kind": "filters", "scenario": ["nosuch"]}
    assert [
        _rest_refusal(runs, "POST", "analysis/query",
                      json={"selection": nosuch, "measures": [{"field": "run_id", "agg": "count"}]}),
        _rest_refusal(runs, "GET", "analysis/fields", params={"scenario": "nosuch"}),
        _rest_refusal(runs, "POST", "export/preview", json={"selection": nosuch}),
        _mcp(runs, "analyze_runs", measures=["run_id:count"], selection=nosuch)[0],
        _mcp(runs, "list_analysis_fields", selection=nosuch)[0],
        _mcp(runs, "list_runs", scenario=["nosuch"])[0],
        _mcp(runs, "export_runs", out=out, scenario=["nosuch"])[0],
        _mcp(runs, "evaluate_runs", metrics=["round_success"], scenario=["nosuch"])[0],
    ] == [
        Answer(True, f"scenario: {served}", 422),
        Answer(True, f"scenario: {served}", 422),
        Answer(True, f"scenario: {served}", 422),
        *[Answer(True, served, "tool error")] * 5,
    ]  # fmt: skip
    gone = str(tmp_path / "gone")
    assert _cli(capsys, "analyze", "--runs-dir", gone, "--measure", "run_id:count") == Answer(
        True, f"--runs-dir {gone!r} does not exist", 66
    )
    missing = "the server's runs directory does not exist"
    assert [
        _rest_refusal(
            gone, "POST", "analysis/query", json={"measures": [{"field": "run_id", "agg": "count"}]}
        ),
        _rest_refusal(gone, "GET", "analysis/fields"),
        _rest_refusal(gone, "POST", "export/preview", json={"selection": {"kind": "filters"}}),
        _mcp(gone, "analyze_runs", measures=["run_id:count"])[0],
        _mcp(gone, "list_analysis_fields")[0],
        _mcp(gone, "list_runs")[0],
        _mcp(gone, "export_runs", out=out)[0],
        _mcp(gone, "evaluate_runs", metrics=["round_success"])[0],
    ] == [*[Answer(True, missing, 503)] * 3, *[Answer(True, missing, "tool error")] * 5]
    assert not os.path.exists(out)
    # a cohort over MCP with a run id that resolves to no run: refused before any flow run
    # (as the export refuses it), naming the id, never the server's runs directory
    answer, result = _mcp(runs, "evaluate_runs", metrics=["round_success"],
                          run_ids=[played.run_id, "veyru/1"])  # fmt: skip
    assert (answer, result) == (
        Answer(True, "run ids that no longer resolve: veyru/1", "tool error"),
        None,
    )
    # a run whose log never ended is refused: counted and listed alike, as the summary counts it
    unended = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_500)
    log = Path(runs) / unended.run_id / "veyru.jsonl"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if '"simulation_ended"' not in line))  # fmt: skip
    answer, result = _mcp(runs, "evaluate_runs", metrics=["round_success"],
                          run_ids=[played.run_id, unended.run_id])  # fmt: skip
    assert result is not None
    assert (answer.line, result["not_evaluated"], sorted(result["not_evaluated_runs"])) == (
        "evaluated 1 of 2 runs in the server's runs directory: 1 scored, 0 skipped (report up "
        f"to date); 1 not evaluated ({unended.run_id}) · evaluation cost $0.000000",
        1, [unended.run_id])  # fmt: skip
    assert result["not_evaluated_runs"][unended.run_id] == (
        f"{unended.run_id} has no simulation_ended (still playing, or killed): pass "
        "allow_incomplete to score what it logged"
    )
    # no metric named is refused as the command line's --metrics '' is
    assert _mcp(runs, "evaluate_runs", metrics=[])[0] == Answer(
        True, "metrics names no metric", "tool error"
    )
