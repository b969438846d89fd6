"""Issue 32, a fresh user's disagreements between the surfaces, each one library check now: a
path not UTF-8 text given as the export's ``out``, the runs the list leaves out as unreadable, a
number that is not finite, a body with two refused values, a knob condition's name, an export
of one unreadable run, and pydantic's ``Value error, `` tag taken off in one place.

Each surface is driven as its user drives it (``tests/surfaces/drive.py``): the
CLI's entry in this process, the FastAPI app over HTTP, the MCP tools through the SDK's client.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import Answer, _cli, _mcp

ROOT = Path(__file__).resolve().parents[1]
EXPORT = "/api/g/local/runs/export"
EMPTY_REPORT = "is an empty JSON object (no metrics)"


def _unreadable(runs: str, run_id: str) -> None:
    """Make ``run_id`` unreadable: its report is ``{}`` (no metrics)."""
    (Path(runs) / run_id / "veyru_report.json").write_text("{}")


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_an_export_out_not_utf8_text_is_refused_alike_before_any_folder(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out $'/tmp/x\\xff'`` was taken (exit 0, a folder named with the byte made); MCP's
    ``out`` was refused. Now the export's own check refuses it on each surface, its value
    named the surface's way, exit 64, nothing made."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    out = str(tmp_path / "x\udcff")
    if surface == "cli":
        answer = _cli(capsys, "export", "--runs-dir", runs, "--out", out, "--frames", "run_level")
        typed = repr(out).replace("\\udcff", "\\xff")  # the CLI shows the byte typed
        assert answer == Answer(True, f"--out {typed}: not UTF-8 text", 64)
    else:
        answer, _ = _mcp(runs, "export_runs", out=out, frames=["run_level"])
        assert answer == Answer(True, f"out {out!r}: not UTF-8 text", "tool error")
    assert sorted(os.listdir(tmp_path)) == ["runs"]


def test_list_runs_and_the_run_list_page_name_the_runs_left_out_as_unreadable(
    tmp_path: Path,
) -> None:
    """MCP ``list_runs`` and the browser's list left an unreadable run out saying nothing (the
    export's surfaces name it); now ``list_runs`` returns it with why, and the page says
    ``skipped <run>: <why>`` as the CLI's note does, the file named within the runs dir."""
    runs = str(tmp_path / "runs")
    kept = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000).run_id
    bad = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_100).run_id
    _unreadable(runs, bad)
    _, listed = _mcp(runs, "list_runs")
    assert listed is not None
    assert [r["run_id"] for r in listed["runs"]] == [kept]
    assert listed["unreadable_runs"] == {bad: f"{bad}/veyru_report.json {EMPTY_REPORT}"}
    page = TestClient(create_app(runs)).get("/")
    assert page.status_code == 200
    assert re.findall(r'<p class="footer unreadable">([^<]*)</p>', page.text) == [
        f"skipped {bad}: {bad}/veyru_report.json {EMPTY_REPORT}"
    ]
    assert runs not in page.text  # never the server's runs directory by its path


def test_a_body_with_two_refused_values_names_both_over_rest_as_mcp_does(
    tmp_path: Path,
) -> None:
    """REST's preview named only the first of two refused values; MCP's line names both. Now
    the 422 keeps the first as ``field``/``message`` and lists every one under ``errors``."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    body = {"selection": {"kind": "filters"}, "include_logs": "zz", "include_atif": "no!"}
    got = TestClient(create_app(runs)).post(f"{EXPORT}/preview", json=body)
    boolean = "Input should be a valid boolean, unable to interpret input"
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "include_logs", "message": boolean,
        "errors": [{"field": "include_logs", "message": boolean},
                   {"field": "include_atif", "message": boolean}],
    }})  # fmt: skip
    answer, _ = _mcp(runs, "export_runs", out=str(tmp_path / "out"), include_atif="no!",
                     include_logs="zz")  # fmt: skip
    mcp_lines = sorted(answer.line.split("; "))
    rest_lines = sorted(f"{e['field']}: {e['message']}" for e in got.json()["detail"]["errors"])
    assert rest_lines == mcp_lines
    assert not (tmp_path / "out").exists()
    # The analysis query's body alike (the same handler): both of its refused values.
    body = {"measures": [{"field": "run_id", "agg": "count"}], "limit": "abc", "seed": "x"}
    got = TestClient(create_app(runs)).post("/api/g/local/runs/analysis/query", json=body)
    integer = "Input should be a valid integer"
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "limit", "message": integer,
        "errors": [{"field": "limit", "message": integer}, {"field": "seed", "message": integer}],
    }})  # fmt: skip
    answer, _ = _mcp(runs, "analyze_runs", measures=["run_id:count"], limit="abc", seed="x")
    assert answer.line == f"limit: {integer}; seed: {integer}"


KNOB_LINE = (
    "'round_count>=abc': knob 'round_count', operator '>=', value 'abc': the run records a number"
)


@pytest.mark.parametrize(("surface", "name"), [("cli", "--knob"), ("rest", "knob"),
                                               ("mcp", "knob")])  # fmt: skip
def test_a_knob_condition_is_named_as_each_surface_names_its_field(
    surface: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REST and MCP said ``knob 'round_count>=abc': ...`` where every other refusal
    names the body's field or the tool's argument: ``knob`` (the CLI: ``--knob``)."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    out = str(tmp_path / "out")
    if surface == "cli":
        answer = _cli(capsys, "export", "--runs-dir", runs, "--out", out,
                      "--knob", "round_count>=abc")  # fmt: skip
        assert answer == Answer(True, f"{name} {KNOB_LINE}", 65)
    elif surface == "rest":
        body = {"selection": {"kind": "filters", "knob": ["round_count>=abc"]}}
        got = TestClient(create_app(runs)).post(f"{EXPORT}/preview", json=body)
        assert (got.status_code, got.json()) == (
            422, {"detail": {"field": "knob", "message": f"{name} {KNOB_LINE}"}})  # fmt: skip
    else:
        answer, _ = _mcp(runs, "export_runs", out=out, knob=["round_count>=abc"])
        assert answer == Answer(True, f"{name} {KNOB_LINE}", "tool error")
    assert not Path(out).exists()


def test_an_export_naming_one_unreadable_run_refuses_it_as_a_missing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --run-id`` of an unreadable run noted ``skipped <run>: <why>`` and then
    ``0 runs matched``, wrong: the run matched, then was skipped; then the skip note alone,
    exit 0 and ``exported 0 runs``. A run the user named that cannot be read is refused now
    as one that no longer resolves is: exit 66, one line naming it and why, nothing written
    (issue 32)."""
    runs = str(tmp_path / "runs")
    bad = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000).run_id
    _unreadable(runs, bad)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:
        from glossogen.cli import main

        main(["export", "--runs-dir", runs, "--out", str(out), "--run-id", bad,
              "--frames", "run_level"])  # fmt: skip
    said, noted = capsys.readouterr()
    assert (exited.value.code, said) == (66, "")
    assert noted == (
        f"glossogen: error: runs that cannot be read: {bad}: {bad}/veyru_report.json "
        f"{EMPTY_REPORT}\n"
    )
    assert not out.exists()


def test_pydantics_value_error_tag_is_taken_off_in_one_place() -> None:
    """Each surface took ``Value error, `` off our validators' lines itself (11 places); one
    function of the refusals layer does it now (``refusals.validator_line``)."""
    found = subprocess.run(
        ["git", "grep", "-n", "-F", 'Value error, "', "--", "glossogen"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert [line.partition(":")[0] for line in found.stdout.splitlines()] == [
        "glossogen/refusals.py"
    ]
