"""An export through the CLI, REST (``/csv``, ``/preview``, ``/raw``) and MCP: the same tables
byte for byte, and each refusal the same line, each surface naming the value its own way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import (
    EXPORT_SURFACES,
    NOT_A_RUN_ID,
    RUN_ID_SHAPE,
    STATUS,
    SURFACES,
    TABLES,
    Answer,
    _cli,
    _mcp,
    cohort_through,
    export_refused_through,
    refused_as,
)

NO_OPERATOR = "{knob} 'x': no operator; write <knob><op><value> with op one of != >= <= = > <"
KNOB = {"cli": "--knob", "rest": "knob", "mcp": "knob"}
"""How each surface names a refused knob condition: the CLI's flag, the body's field and the
tool's argument (was ``knob condition`` for both: issue 32)."""


def export_through(
    surface: str, runs_dir: str, out: Path, knob: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[Answer, bytes | None]:
    """``glossogen export``, ``POST .../export/csv`` or MCP ``export_runs`` of the run level
    table of the runs ``knob`` selects: the answer and the table's bytes."""
    if surface == "cli":
        flags = [f for k in knob for f in ("--knob", k)]
        answer = _cli(capsys, "export", "--runs-dir", runs_dir, "--out", str(out),
                      "--frames", "run_level", *flags)  # fmt: skip
        return answer, None if answer.refused else (out / "run_level.csv").read_bytes()
    if surface == "rest":
        got = TestClient(create_app(runs_dir)).post(
            "/api/g/local/runs/export/csv",
            json={"selection": {"kind": "filters", "knob": knob or None}, "frames": ["run_level"]},
        )
        if got.status_code != 200:
            detail = got.json()["detail"]
            return Answer(True, f"{detail['field']}: {detail['message']}", got.status_code), None
        return Answer(False, "", 200), got.content
    answer, _ = _mcp(runs_dir, "export_runs", out=str(out), frames=["run_level"], knob=knob)
    return answer, None if answer.refused else (out / "run_level.csv").read_bytes()


@pytest.mark.parametrize("surface", SURFACES)
def test_an_export_writes_and_refuses_the_same_through_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One selection, the same run level table byte for byte (the CLI's table is the
    reference); one knob condition without an operator, one line naming it the surface's way,
    nothing written."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=2, now_unix=1_790_000_000)
    refused, _ = export_through(surface, runs, tmp_path / "refused", ["x"], capsys)
    line = NO_OPERATOR.format(knob=KNOB[surface])
    assert refused == refused_as(surface, line, "knob")
    assert not (tmp_path / "refused").exists()
    answer, table = export_through(surface, runs, tmp_path / "out", [], capsys)
    assert (answer.refused, answer.status) == (False, STATUS[surface][0])
    assert not export_through("cli", runs, tmp_path / "reference", [], capsys)[0].refused
    assert table == (tmp_path / "reference" / "run_level.csv").read_bytes()
    assert table is not None and table.decode().count("\n") == 2  # the header and the run


OVER = "the selection holds 2 runs, over the 1-run limit; narrow the selection or raise"
OVER_REST = f"max_runs: {OVER} it on the command line (`glossogen export --max-runs`)"


def malformed_run_id(sent: str) -> dict[str, Any]:
    """The export case of a run id ``sent`` not shaped ``<scenario>/<run_dir_name>``."""
    return {
        "cli": ["--run-id", sent],
        "rest": {"selection": {"kind": "run_ids", "run_ids": [sent]}},
        "mcp": {"run_ids": [sent]},
        "said": {"cli": f"--run-id '{sent}': {NOT_A_RUN_ID}",
                 "rest": f"run_ids: run_ids '{sent}': {NOT_A_RUN_ID}",
                 "mcp": f"run_ids '{sent}': {NOT_A_RUN_ID}"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    }  # fmt: skip


EXPORT_REFUSALS: dict[str, dict[str, Any]] = {
    "unknown-table": {
        "cli": ["--frames", "nope"], "rest": {"frames": ["nope"]}, "mcp": {"frames": ["nope"]},
        "said": {"cli": f"--frames: unknown table 'nope' (tables: {TABLES})",
                 "rest": f"frames: unknown table 'nope' (tables: {TABLES})",
                 "mcp": f"unknown table 'nope' (tables: {TABLES})"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "table-named-twice": {
        "cli": ["--frames", "run_level,run_level"], "rest": {"frames": ["run_level", "run_level"]},
        "mcp": {"frames": ["run_level", "run_level"]},
        "said": {"cli": "--frames 'run_level,run_level': the table 'run_level' is named twice",
                 "rest": "frames: the table 'run_level' is named twice",
                 "mcp": "the table 'run_level' is named twice"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "empty-table-name": {
        "cli": ["--frames", "run_level,"], "rest": {"frames": ["run_level", ""]},
        "mcp": {"frames": ["run_level", ""]},
        "said": {"cli": "--frames 'run_level,': a table name is empty",
                 "rest": "frames: a table name is empty", "mcp": "a table name is empty"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "no-table": {  # MCP took frames [] as the default tables (was: exported 3 tables)
        "cli": ["--frames", ""], "rest": {"frames": []}, "mcp": {"frames": []},
        "said": {"cli": f"--frames: no table named (tables: {TABLES})",
                 "rest": f"frames: no table named (tables: {TABLES})",
                 "mcp": f"no table named (tables: {TABLES})"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "missing-run-id": {
        "cli": ["--run-id", "veyru/1"],
        "rest": {"selection": {"kind": "run_ids", "run_ids": ["veyru/1"]}},
        "mcp": {"run_ids": ["veyru/1"]},
        "said": dict.fromkeys(("cli", "mcp"), "run ids that no longer resolve: veyru/1")
        | {"rest": "run_ids: run ids that no longer resolve: veyru/1"},
        "status": {"cli": 66, "rest": 404, "rest-raw": 404},
        "answered": {"rest-preview": "missing_run_ids: veyru/1"},  # listed, not refused
    },
    # was: read as an unreadable run, exit 0 "0 runs matched"
    "malformed-run-id": malformed_run_id("veyru/1790000000/"),
    # the backslash echoed once (was 'veyru\\1796437285', repr's)
    "backslash-run-id": malformed_run_id("veyru\\1796437285"),
    "unknown-scenario": {
        "cli": ["--scenario", "nosuch"],
        "rest": {"selection": {"kind": "filters", "scenario": ["nosuch"]}},
        "mcp": {"scenario": ["nosuch"]},
        "said": {"cli": "--scenario 'nosuch' has no run under {runs} (scenarios there: veyru)",
                 "rest": "scenario: scenario 'nosuch' has no run in the server's runs "
                         "directory (scenarios there: veyru)",
                 "mcp": "scenario 'nosuch' has no run in the server's runs directory "
                        "(scenarios there: veyru)"},
        "status": {"cli": 65, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "over-max-runs": {
        "cli": ["--max-runs", "1"], "rest": {}, "mcp": {"max_runs": 1},
        "said": {"cli": f"{OVER} it with --max-runs", "rest": OVER_REST,
                 "mcp": f"{OVER} max_runs"},
        "status": {"cli": 65, "rest": 413, "rest-raw": 413},
        "answered": {"rest-preview": OVER_REST},  # the refusal a download would meet, listed
    },
}  # fmt: skip
"""Each refusal of an export as each surface words it: the CLI's flags and exit code, REST's
field (or limit) before the line and its status (``rest`` the ``/csv`` route, ``rest-preview``
and ``rest-raw`` the others), MCP's tool error; the line the library's, save that REST and MCP
name the server's runs directory, never its path (the CLI's user typed it). ``answered``: a
route that answers 200 instead, with what it lists (the preview's ``refusals`` and
``missing_run_ids``; nothing for a zip)."""


@pytest.mark.parametrize("surface", EXPORT_SURFACES)
@pytest.mark.parametrize("case", list(EXPORT_REFUSALS))
def test_an_export_is_refused_with_the_same_line_through_every_surface(
    surface: str, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REST plans the same library request as the CLI and MCP: an unknown table, an id that no
    longer resolves, a scenario no run has and a selection over the run ceiling are one line
    each (issue 32: REST's own wording of the last two is gone), through each REST route
    (``/csv``, ``/preview``, ``/raw``) as through the CLI and MCP, nothing written. The
    preview lists what a download would refuse with (the same line) and the ids that no longer
    resolve. ``/raw`` refuses the tables the body names as ``/csv`` does (one body, one
    verdict), and a table named twice or an empty name is refused by the one export plan."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_100)
    asked = EXPORT_REFUSALS[case]
    answer = export_refused_through(surface, runs, tmp_path / "out", asked, capsys)
    if surface in asked.get("answered", {}):
        expected = Answer(False, asked["answered"][surface], 200)
    else:
        said = asked["said"][surface.partition("-")[0]].format(runs=runs)
        expected = Answer(True, said, asked["status"].get(surface, "tool error"))
    assert answer == expected
    assert not (tmp_path / "out").exists()


HUGE = "100000000000000000000000000000"
"""10**29: past the ``max_runs`` a JSON answer holds exactly."""
MAX_RUNS_BOUND = "must be at most 9007199254740991 (2**53 - 1, the largest whole number a JSON answer holds exactly)"


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize(("value", "detail"), [
    ("0", "0: must be at least 1"), (HUGE, f"{HUGE}: {MAX_RUNS_BOUND}"),
])  # fmt: skip
def test_export_bounds_max_runs_as_analyze_does(
    surface: str, value: str, detail: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --max-runs`` / ``export_runs max_runs`` take analyze's bound, 1..2**53 - 1, in
    its words (was: 10**29 exported; 0 was ``--max-runs must be at least 1, got 0``), nothing
    written."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1)
    out = tmp_path / "out"
    if surface == "cli":
        answer = _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), "--max-runs", value)
        assert answer == Answer(True, f"--max-runs {detail}", 64)
        analyzed = _cli(capsys, "analyze", "--runs-dir", runs, "--measure", "run_id:count",
                        "--max-runs", value)  # fmt: skip
        assert analyzed.line == answer.line
    else:
        answer, _ = _mcp(runs, "export_runs", out=str(out), max_runs=int(value))
        assert answer == Answer(True, f"max_runs {detail}", "tool error")
    assert not out.exists()


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_run_ids_with_a_filter_are_refused_alike_by_the_cli_and_mcp(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --run-id ... --scenario ...`` and ``export_runs(run_ids, scenario)``: one line
    naming both (was "run_ids cannot be combined with filters" over MCP), nothing written."""
    runs = str(tmp_path / "runs")
    folder = play_run(runs, "veyru", rounds=1)
    out = tmp_path / "out"
    if surface == "cli":
        answer = _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), "--run-id",
                      folder.run_id, "--scenario", "veyru", "--contains-agent-id", "x")  # fmt: skip
        line = "--run-id cannot be combined with --scenario, --contains-agent-id"
    else:
        answer, _ = _mcp(runs, "export_runs", out=str(out), run_ids=[folder.run_id],
                         scenario=["veyru"], contains_agent_id="x")  # fmt: skip
        line = "run_ids cannot be combined with scenario, contains_agent_id"
    assert answer == Answer(True, line, 64 if surface == "cli" else "tool error")
    assert not out.exists()


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
@pytest.mark.parametrize("shape", ["absolute", "blank-after"])
def test_a_run_id_not_shaped_scenario_slash_run_is_quoted_as_sent_by_every_surface(
    surface: str, shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run-id parse (``export.is_run_id``): the run's absolute path (was, on REST and
    MCP: ``run ids that no longer resolve: veyru/<run>``, though it resolves) and an id with a
    blank after it (was: taken silently) are refused quoting what was sent, exit 64 / 422 / a
    tool error, nothing written; an evaluation refuses it alike before any flow run."""
    runs = str(tmp_path / "runs")
    folder = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    sent = folder.url if shape == "absolute" else f"{folder.run_id} "
    quoted = repr(sent)  # MCP too: the client sent the path (was cut to the run id)
    names = {"cli": f"--run-id {quoted}", "rest": f"run_ids: run_ids {quoted}",
             "mcp": f"run_ids {quoted}"}  # fmt: skip
    why = f"a path, not a run id: {RUN_ID_SHAPE}" if shape == "absolute" else NOT_A_RUN_ID
    line = f"{names[surface]}: {why}"
    case = {"cli": ["--run-id", sent], "rest": {"selection": {"kind": "run_ids", "run_ids": [sent]}},
            "mcp": {"run_ids": [sent]}}  # fmt: skip
    answer = export_refused_through(surface, runs, tmp_path / "out", case, capsys)
    assert answer == Answer(True, line, {"cli": 64, "rest": 422, "mcp": "tool error"}[surface])
    assert not (tmp_path / "out").exists()
    if surface == "rest":
        return
    evaluated = cohort_through(surface, runs, ["--run-id", sent], {"run_ids": [sent]}, capsys)
    assert evaluated == Answer(
        True, line.removeprefix("rest: "), 64 if surface == "cli" else "tool error"
    )
    assert not (Path(folder.url) / "veyru_report.json").exists()
