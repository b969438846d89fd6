"""What a fresh user found in the analysis of issue 33 (h47int, fb7035b): each fixed, as seen.

Each surface (the CLI in this process, REST through the FastAPI app, MCP through the in-process
server) is asked what the user asked; the exact line, exit code, status or value is asserted.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.mcp.conftest import call, in_process_session

API = "/api/g/local/runs/analysis"


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("u47a-runs")))


@pytest.fixture(scope="module")
def client(cohort: Cohort) -> TestClient:  # the app serving the cohort
    from glossogen.server import create_app as app_of

    return TestClient(app_of(cohort.runs_dir))


def test_a_run_whose_log_is_empty_is_skipped_alike_by_the_cli_rest_and_mcp(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REST read an emptied log (its report kept) as a queued run: 5 runs, a ``queued`` group
    with a null interval, a note saying the log changed after its report; CLI and MCP skip it."""
    from glossogen.server import create_app

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    emptied = cohort.ids["r2"]
    (runs / emptied / "veyru.jsonl").write_bytes(b"")
    note = f"skipped {emptied}: {emptied}/veyru.jsonl is not a run log (empty)"
    flags = ["--by", "status", "--measure", "task_done", "--resamples", "10"]
    cli = analyze_json(capsys, "--runs-dir", str(runs), *flags)
    query: dict[str, Any] = {"by": ["status"], "measures": [{"field": "task_done"}],
                             "resamples": 10}  # fmt: skip
    rest = TestClient(create_app(str(runs))).post(f"{API}/query", json=query)
    assert rest.status_code == 200, rest.text

    async def ask() -> dict[str, Any]:
        async with in_process_session(runs, tmp_path) as session:
            return await call(session, "analyze_runs", by=["status"], measures=["task_done"],
                              resamples=10)  # fmt: skip

    mcp = asyncio.run(ask())
    assert cli["runs"] == rest.json()["runs"] == mcp["runs"] == 4
    assert [g["keys"]["status"] for g in rest.json()["groups"]] == ["completed"]
    assert note in cli["notes"]
    assert rest.json()["groups"] == cli["groups"] == mcp["groups"]
    assert rest.json()["notes"] == cli["notes"] == mcp["notes"]
    queued = dict(query, selection={"kind": "filters", "status": "queued"})
    selected = TestClient(create_app(str(runs))).post(f"{API}/query", json=queued).json()
    assert selected["runs"] == 0


def test_a_seed_is_bounded_as_limit_is_on_every_surface(
    cohort: Cohort, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was taken up to 18446744073709551615, a number JSON readers read back as another."""
    line = ("18446744073709551615: must be at most 9007199254740991 (2**53 - 1, the largest "
            "whole number a JSON answer holds exactly)")  # fmt: skip
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--seed",
                   "18446744073709551615") == 64  # fmt: skip
    assert capsys.readouterr() == ("", f"glossogen: error: --seed {line}\n")
    got = client.post(f"{API}/query", json={"measures": [{"field": "task_done"}],
                                            "seed": 18446744073709551615})  # fmt: skip
    assert (got.status_code, got.json()) == (
        422, {"detail": {"field": "seed", "message": f"seed {line}"}})  # fmt: skip
    low = client.post(f"{API}/query", json={"measures": [{"field": "task_done"}], "seed": -1})
    assert low.json() == {"detail": {"field": "seed", "message": "seed -1: must be at least 0"}}
    top = client.post(f"{API}/query", json={"measures": [{"field": "task_done"}],
                                            "seed": 2**53 - 1, "resamples": 10})  # fmt: skip
    assert (top.status_code, top.json()["query"]["seed"]) == (200, 9007199254740991)


def test_a_filter_past_a_floats_range_says_not_a_finite_number(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``'1e999' is not a number``: 1e999 is a number, not a finite one (as --knob says)."""
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--filter",
                   "total_chars>1e999") == 64  # fmt: skip
    assert capsys.readouterr() == ("", "glossogen: error: --filter 'total_chars>1e999': "
                                   "total_chars is a number, '1e999' is not a finite number\n")  # fmt: skip


def test_a_dashboards_nan_is_worded_as_nan_not_as_a_number_past_the_range(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``the number reads as nan, ... (a JSON or YAML number past ±1.8e308 does)``."""
    board = tmp_path / "board.yaml"
    out = tmp_path / "out"
    for value, line in (
        (".nan", "the value reads as NaN (a YAML .nan, a JSON NaN), not a number; give a "
                 "finite one"),
        (".inf", "the number reads as inf, not a finite number (a YAML .inf, or a JSON or YAML "
                 "number past ±1.8e308, does); give a finite one"),
    ):  # fmt: skip
        board.write_text("queries:\n  q:\n    measures: [total_chars]\n    filters:\n"
                         f"      - {{field: total_chars, op: '>', value: {value}}}\n"
                         "charts:\n  - {name: c, query: q}\n")  # fmt: skip
        assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out",
                       str(out)) == 64  # fmt: skip
        assert capsys.readouterr() == (
            "",
            f"glossogen: error: --dashboard {board}: queries.q.filters.0.value: {line}\n",
        )
    assert not out.exists()


def test_an_unknown_body_key_is_refused_echoing_its_value(client: TestClient) -> None:
    """Was ``Extra inputs are not permitted`` alone; a dashboard's key echoes its value (as
    MCP's line now does: one wording, :func:`glossogen.refusals.unknown_key_line`)."""
    got = client.post(f"{API}/query", json={"measures": [{"field": "task_done"}], "sede": 7})
    assert (got.status_code, got.json()) == (
        422, {"detail": {"field": "sede", "message": "sede 7: Extra inputs are not permitted"}})  # fmt: skip
    text = client.post(f"{API}/query", json={"measures": [{"field": "task_done"}], "x": "a"})
    assert text.json() == {
        "detail": {"field": "x", "message": "x 'a': Extra inputs are not permitted"}
    }


@pytest.fixture(scope="module")
def many(cohort: Cohort, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The cohort with one run's report holding a metric of 501 rounds (501 groups by round)."""
    import json

    runs = tmp_path_factory.mktemp("u47a-many") / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    report = runs / cohort.ids["r1"] / "veyru_report.json"
    data = json.loads(report.read_text())
    data["metrics"]["many"] = {
        "name": "many", "kind": "deterministic", "version": 1, "unit": "u", "status": "ok",
        "score": 1.0, "summary": "", "rounds": 2,
        "per_round": [{"round_number": n, "value": n} for n in range(1, 502)],
    }  # fmt: skip
    report.write_text(json.dumps(data))
    return str(runs)


MANY = ["--grain", "observation", "--metric", "many", "--by", "round_number", "--measure",
        "value", "--resamples", "10"]  # fmt: skip
TOO_MANY = "501 groups: at most 500 are drawn; narrow the query or set its limit"


def test_too_many_groups_to_draw_are_refused_by_plot_and_a_dashboard_as_by_render(
    many: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only REST's /render refused 501 groups; --plot and a dashboard drew an unreadable chart."""
    from glossogen.server import create_app

    plot = tmp_path / "chart.svg"
    assert analyze("--runs-dir", many, *MANY, "--plot", str(plot)) == 64
    assert capsys.readouterr() == ("", f"glossogen: error: --plot {TOO_MANY}\n")
    assert not plot.exists()
    assert analyze("--runs-dir", many, *MANY, "--limit", "500", "--plot", str(plot)) == 0
    capsys.readouterr()
    assert plot.read_bytes().startswith(b"<?xml")
    board = tmp_path / "board.yaml"
    board.write_text("queries:\n  rounds:\n    grain: observation\n    metric: many\n"
                     "    by: [round_number]\n    measures: [{field: value}]\n    resamples: 10\n"
                     "charts:\n  - {name: c, query: rounds}\n")  # fmt: skip
    out = tmp_path / "out"
    assert analyze("--runs-dir", many, "--dashboard", str(board), "--out", str(out)) == 64
    assert capsys.readouterr() == (
        "", f"glossogen: error: --dashboard {board}: queries.rounds {TOO_MANY}\n")  # fmt: skip
    assert not out.exists()
    client = TestClient(create_app(many))
    query = {"grain": "observation", "metric": "many", "by": ["round_number"],
             "measures": [{"field": "value"}], "resamples": 10}  # fmt: skip
    result = client.post(f"{API}/query", json=query).json()
    drawn = client.post(f"{API}/render", json={"result": result, "chart": "bar"})
    assert (drawn.status_code, drawn.json()) == (
        422, {"detail": {"field": "result.groups", "message": TOO_MANY}})  # fmt: skip


def test_a_number_in_labels_json_is_a_label_false_is_none_and_a_list_is_named_in_a_note(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``{"budget": 800}`` gave no ``label.budget`` and ``--label budget=800`` matched nothing;
    ``{"flagf": false, "num": 3, "lst": [1, 2]}`` left even the ``labels`` cell blank."""
    import json

    from glossogen.server import create_app

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    labelled = cohort.ids["r1"]
    (runs / labelled / "labels.json").write_text(json.dumps(
        {"budget": 800, "share": 0.5, "flagf": False, "pilot": True, "lst": [1, 2],
         "obj": {"a": 1}}))  # fmt: skip
    notes = [f"{labelled}: labels.json's 'lst' holds a list, not a label (a label's value is "
             "text, a number, true or false)",
             f"{labelled}: labels.json's 'obj' holds an object, not a label (a label's value is "
             "text, a number, true or false)"]  # fmt: skip
    flags = ["--by", "labels", "--measure", "task_done:count"]
    for _ in range(2):  # read afresh, then from the projection cache: the same answer
        cli = analyze_json(capsys, "--runs-dir", str(runs), *flags, "--label", "budget=800")
        assert [g["keys"]["labels"] for g in cli["groups"]] == [
            "budget=800; share=0.5; pilot"]  # fmt: skip
        assert (cli["runs"], cli["notes"]) == (1, notes)
    by_budget = analyze_json(capsys, "--runs-dir", str(runs), "--by", "label.budget",
                             "--measure", "task_done:count")  # fmt: skip
    assert [(g["keys"]["label.budget"], g["cells"][0]["value"]) for g in by_budget["groups"]] == [
        ("800", 1), (None, 4)]  # fmt: skip
    query = {"by": ["labels"], "measures": [{"field": "task_done", "agg": "count"}],
             "selection": {"kind": "filters", "labels": ["budget=800"]}}  # fmt: skip
    rest = TestClient(create_app(str(runs))).post(f"{API}/query", json=query).json()

    async def ask() -> dict[str, Any]:
        async with in_process_session(runs, tmp_path) as session:
            return await call(session, "analyze_runs", by=["labels"],
                              measures=["task_done:count"],
                              selection={"kind": "filters", "labels": ["budget=800"]})  # fmt: skip

    mcp = asyncio.run(ask())
    for answer in (rest, mcp):
        assert (answer["groups"], answer["notes"]) == (cli["groups"], notes)
    pilot = analyze_json(capsys, "--runs-dir", str(runs), "--measure", "task_done", "--filter",
                         "label_flag.pilot=yes")  # fmt: skip
    assert pilot["notes"] == [*notes, "filter 'label_flag.pilot=yes': no row has label_flag.pilot "
                              "'yes' (it holds True)"]  # fmt: skip


def test_a_filter_on_a_value_no_row_has_is_named_in_a_note_on_every_surface(
    cohort: Cohort, client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``0 rows of 0 runs (5 selected)`` and no note, while ``--compare`` names the values."""
    note = "filter 'scenario_name=veyu': no row has scenario_name 'veyu' (it holds veyru)"
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--filter",
                   "scenario_name=veyu") == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "run grain: 0 rows of 0 runs (5 selected)"
    assert err == f"glossogen: note: {note}\n"
    query = {"measures": [{"field": "task_done"}],
             "filters": [{"field": "scenario_name", "op": "=", "value": "veyu"}]}  # fmt: skip
    assert client.post(f"{API}/query", json=query).json()["notes"] == [note]

    async def ask() -> dict[str, Any]:
        async with in_process_session(Path(cohort.runs_dir), tmp_path) as session:
            return await call(session, "analyze_runs", measures=["task_done"],
                              filters=["scenario_name=veyu"])  # fmt: skip

    assert asyncio.run(ask())["notes"] == [note]
    # A value some row has, and a != or an order, add no note.
    for cond in ("scenario_name=VEYRU", "scenario_name!=veyu", "total_chars>99999"):
        quiet = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--measure", "task_done",
                             "--filter", cond)  # fmt: skip
        assert quiet["notes"] == []


def test_a_dashboard_path_holding_a_byte_that_is_not_utf8_writes_its_report(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was exit 1 and a UnicodeEncodeError writing index.html, after every query was answered.

    The byte in --out already worked; the page names the dashboard's path escaped (\\udcff).
    """
    board = f"{tmp_path}/b\udcffad.yaml"
    Path(board).write_text("queries:\n  q:\n    measures: [{field: task_done}]\n"
                           "    resamples: 10\ncharts:\n  - {name: c, query: q}\n")  # fmt: skip
    out = tmp_path / "out"
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", board, "--out", str(out)) == 0
    capsys.readouterr()
    page = (out / "index.html").read_text()
    assert f"from <code>{tmp_path}/b\\udcffad.yaml</code>" in page


def test_a_number_that_is_not_finite_in_labels_json_is_named_in_a_note_not_read_as_a_label(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``{"huge": 1e400}`` (Infinity once parsed) and ``NaN`` read as the labels ``huge=Infinity``
    and ``nan=NaN`` (u47d); ``1e3`` is ``big=1000.0``, as README says a number reads."""
    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    labelled = cohort.ids["r1"]
    (runs / labelled / "labels.json").write_text('{"huge": 1e400, "nan": NaN, "big": 1e3}')
    answer = analyze_json(capsys, "--runs-dir", str(runs), "--by", "labels", "--measure",
                          "task_done:count", "--label", "big=1000.0")  # fmt: skip
    why = "not a label (a label's value is text, a number, true or false)"
    assert [g["keys"]["labels"] for g in answer["groups"]] == ["big=1000.0"]
    assert answer["notes"] == [
        f"{labelled}: labels.json's 'huge' holds a number that is not finite, {why}",
        f"{labelled}: labels.json's 'nan' holds a number that is not finite, {why}",
    ]
