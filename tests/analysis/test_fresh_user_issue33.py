"""What a fresh user found in analysis and export (issue 33): each fixed, asserted as seen.

Each surface (the CLI in-process, REST through the FastAPI app) is asked what the user asked;
the exact line, exit code, status or value is asserted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.export.test_cli import _export as export  # glossogen export in this process
from tests.mcp.conftest import call, in_process_session

API = "/api/g/local/runs/analysis"


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("issue33-runs")))


@pytest.fixture(scope="module")
def client(cohort: Cohort) -> TestClient:
    from glossogen.server import create_app

    return TestClient(create_app(cohort.runs_dir))


def test_an_export_to_an_empty_out_is_refused_and_writes_nothing(
    cohort: Cohort,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert export("--runs-dir", cohort.runs_dir, "--out", "") == 64
    assert capsys.readouterr() == ("", "glossogen: error: --out '': names no folder\n")
    assert list(tmp_path.iterdir()) == []


def _round_rates(client: TestClient) -> dict[str, Any]:
    query = {"grain": "round", "by": ["round_budget_chars"],
             "measures": [{"field": "round_success", "agg": "rate"}], "resamples": 10}  # fmt: skip
    got = client.post(f"{API}/query", json=query)
    assert got.status_code == 200, got.text
    return got.json()


def test_render_draws_a_value_outside_its_interval_and_refuses_an_inverted_one(
    client: TestClient,
) -> None:
    result = _round_rates(client)
    cell = result["groups"][0]["cells"][0]
    cell["value"], cell["interval"] = 0.9, {"low": 0.1, "high": 0.5, "method": "bootstrap"}
    for chart in ("bar", "line", "scatter"):
        drawn = client.post(f"{API}/render", json={"result": result, "chart": chart})
        assert drawn.status_code == 200, drawn.text
        assert drawn.json()["svg"].startswith("<?xml")
    cell["interval"] = {"low": 0.5, "high": 0.1, "method": "bootstrap"}
    refused = client.post(f"{API}/render", json={"result": result, "chart": "bar"})
    assert (refused.status_code, refused.json()) == (
        422,
        {
            "detail": {
                "field": "result.groups.0.cells.0.interval",
                "message": "low 0.5 is above high 0.1",
            }
        },
    )


def test_error_bars_run_from_the_value_to_the_interval_ends_clipped_at_the_value() -> None:
    from glossogen.analysis import Cell
    from glossogen.analysis._plot import _errors

    def cell(value: float, low: float | None, high: float | None) -> Cell:
        return Cell.model_validate({"measure": "m:mean", "value": value, "n": 2, "missing": 0,
                                    "runs": 2, "interval": {"low": low, "high": high,
                                                            "method": "bootstrap"}})  # fmt: skip

    low, high = _errors([cell(0.9, 0.1, 0.5), cell(0.0, 0.25, 1.0), cell(0.5, 0.25, 1.0)])
    assert (low, high) == ([0.8, 0.0, 0.25], [0.0, 1.0, 0.5])


def test_render_reads_a_value_that_is_not_finite_as_missing(client: TestClient) -> None:
    result = _round_rates(client)
    result["groups"][0]["cells"][0]["value"] = float("nan")
    result["groups"][1]["cells"][0]["interval"]["high"] = float("inf")
    body = json.dumps({"result": result, "chart": "bar"})  # NaN and Infinity as JSON5 spells them
    drawn = client.post(f"{API}/render", content=body, headers={"content-type": "application/json"})
    assert drawn.status_code == 200, drawn.text
    rows = [line.split(",") for line in drawn.json()["csv"].splitlines()]
    assert rows[0] == ["round_budget_chars", "measure", "value", "n", "missing", "runs", "low",
                       "high", "interval"]  # fmt: skip
    assert rows[1][:6] == ["300", "round_success:rate", "", "4", "0", "2"]  # NaN: blank
    assert (rows[2][:3], rows[2][7]) == (["600", "round_success:rate", "0.25"], "")  # inf: blank


@pytest.fixture(scope="module")
def damaged(cohort: Cohort, tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    """The cohort with r2's score ``"12.5"`` (text) and r3's round 1 value ``"abc"``."""
    import shutil

    root = tmp_path_factory.mktemp("issue33-damaged") / "runs"
    shutil.copytree(cohort.runs_dir, root, ignore=shutil.ignore_patterns(".glossogen"))
    for short, edit in (("r2", "score"), ("r3", "per_round")):
        report = next((root / cohort.ids[short]).parent.glob(
            f"{cohort.ids[short].split('/')[-1]}/*_report.json"))  # fmt: skip
        data = json.loads(report.read_text())
        entry = data["metrics"]["mean_chars_per_round"]
        if edit == "score":
            entry["score"] = "12.5"
        else:
            entry["per_round"][0]["value"] = "abc"
        report.write_text(json.dumps(data))
    return Cohort(str(root), cohort.ids)


def test_a_text_value_is_missing_for_its_run_with_a_note_at_every_grain_and_in_export(
    damaged: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = damaged.ids
    note = ("glossogen: note: metric.mean_chars_per_round: a value that is not a finite number "
            "(text, NaN or infinite) counted as missing in {}\n")  # fmt: skip
    head = "measure,value,n,missing,runs,low,high,interval"
    for flags, line, run in [  # r2's score is text: missing; r3's round 1 is text: missing
        (["--measure", "mean_chars_per_round"],
         "mean_chars_per_round:mean,30.0,3,2,3,", "r2"),  # 10, 30, 50
        (["--grain", "round", "--measure", "mean_chars_per_round"],
         f"mean_chars_per_round:mean,{195 / 7!r},7,3,4,", "r3"),  # 8 12 20 20 35 40 60
    ]:  # fmt: skip
        assert analyze("--runs-dir", damaged.runs_dir, *flags, "--csv") == 0
        out, err = capsys.readouterr()
        assert (out.splitlines()[0], err) == (head, note.format(ids[run]))
        assert out.splitlines()[1].startswith(line)
    assert analyze("--runs-dir", damaged.runs_dir, "--grain", "observation", "--metric",
                   "mean_chars_per_round", "--measure", "value", "--csv") == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert out.splitlines()[1].startswith(f"value:mean,{195 / 7!r},7,1,4,")
    assert err == ("glossogen: note: value: a value that is not a finite number (text, NaN or "
                   f"infinite) counted as missing in {ids['r3']}\n")  # fmt: skip
    assert export("--runs-dir", damaged.runs_dir, "--out", str(tmp_path / "x")) == 0
    written = ("glossogen: note: metric.mean_chars_per_round: a value that is not a finite "
               "number (text, NaN or infinite) written blank for {}\n")  # fmt: skip
    assert capsys.readouterr().err == written.format(ids["r2"]) + written.format(ids["r3"])
    import polars as pl

    runs = pl.read_csv(tmp_path / "x" / "run_level.csv")
    assert runs.get_column("metric.mean_chars_per_round").to_list() == [10.0, None, 30.0, None,
                                                                        50.0]  # fmt: skip
    rounds = pl.read_csv(tmp_path / "x" / "round_level.csv").filter(pl.col("run_id") == ids["r3"])
    assert rounds.get_column("metric.mean_chars_per_round").to_list() == [None, 35.0]


def test_a_knob_value_that_is_not_a_finite_number_is_refused_alike_by_analyze_and_export(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for value, op in (("nan", "="), ("1e999", "<"), ("inf", ">")):
        cond = f"round_budget_chars{op}{value}"
        line = (f"glossogen: error: --knob {cond!r}: knob 'round_budget_chars', operator "
                f"{op!r}, value {value!r}: the run records a number; this is not a finite one\n")  # fmt: skip
        assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--knob",
                       cond) == 65  # fmt: skip
        assert capsys.readouterr() == ("", line)
        assert export("--runs-dir", cohort.runs_dir, "--out", str(tmp_path / "x"), "--knob",
                      cond) == 65  # fmt: skip
        assert capsys.readouterr() == ("", line)
    assert not (tmp_path / "x").exists()
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--filter",
                   "knob.round_budget_chars<1e999") == 64  # fmt: skip
    assert capsys.readouterr().err == ("glossogen: error: --filter 'knob.round_budget_chars<1e999'"
                                       ": knob.round_budget_chars is a number, '1e999' is not a finite number\n")  # fmt: skip


def test_a_filter_on_a_boolean_field_takes_true_false_1_or_0(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    for cond in ("has_evaluation=true", "has_evaluation=1", "has_evaluation>0",
                 "has_evaluation!=FALSE"):  # fmt: skip
        assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done:count",
                       "--filter", cond, "--csv") == 0  # fmt: skip
        assert capsys.readouterr() == (
            "measure,value,n,missing,runs,low,high,interval\ntask_done:count,5,5,0,5,,,\n",
            "",
        )
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done:count", "--filter",
                   "has_evaluation=0", "--csv") == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[1] == "task_done:count,,0,0,0,,,"
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--filter",
                   "has_evaluation=yes") == 64  # fmt: skip
    assert capsys.readouterr() == ("", "glossogen: error: --filter 'has_evaluation=yes': "
                                   "has_evaluation is true or false; write true, false, 1 or 0\n")  # fmt: skip


def test_rest_takes_numbers_as_filter_values_and_arms_and_refuses_mistyped_integers(
    client: TestClient,
) -> None:
    texts = {"grain": "round", "by": ["round_budget_chars"], "resamples": 10,
             "measures": [{"field": "round_success", "agg": "rate"}],
             "filters": [{"field": "round_number", "op": ">", "value": "1"}],
             "compare": {"key": "round_budget_chars", "a": "300", "b": "600"}}  # fmt: skip
    numbers = {**texts, "filters": [{"field": "round_number", "op": ">", "value": 1}],
               "compare": {"key": "round_budget_chars", "a": 300, "b": 600}}  # fmt: skip
    as_text = client.post(f"{API}/query", json=texts)
    as_numbers = client.post(f"{API}/query", json=numbers)
    assert (as_text.status_code, as_numbers.status_code) == (200, 200)
    assert as_numbers.json()["groups"] == as_text.json()["groups"]
    assert as_numbers.json()["comparisons"] == as_text.json()["comparisons"]
    for field, value, message in [
        ("seed", True, "Input should be a valid integer"),
        ("limit", "3", "Input should be a valid integer"),
        ("resamples", 20.0, "Input should be a valid integer"),
    ]:
        got = client.post(f"{API}/query", json={**texts, field: value})
        assert (got.status_code, got.json()) == (
            422, {"detail": {"field": field, "message": message}})  # fmt: skip


def test_a_key_named_twice_is_named_as_typed(
    cohort: Cohort, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--by", "a,a") == 64
    assert capsys.readouterr() == ("", "glossogen: error: --by 'a,a': the key 'a' is named twice\n")
    got = client.post(f"{API}/query", json={"by": ["", "x"], "measures": [{"field": "x"}]})
    assert got.json() == {"detail": {"field": "by", "message": "key ',x': a key is empty"}}


FORMULA = '=HYPERLINK("http://x")'


@pytest.fixture(scope="module")
def labelled(cohort: Cohort, tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    """The cohort with r1 labelled ``note`` = a formula and r2 ``note`` = ``+1``."""
    import shutil

    root = tmp_path_factory.mktemp("issue33-labelled") / "runs"
    shutil.copytree(cohort.runs_dir, root, ignore=shutil.ignore_patterns(".glossogen"))
    for short, note in (("r1", FORMULA), ("r2", "+1")):
        (root / cohort.ids[short] / "labels.json").write_text(json.dumps({"note": note}))
    return Cohort(str(root), cohort.ids)


def test_a_formula_label_is_itself_in_json_rest_mcp_and_filters_and_guarded_in_csv(
    labelled: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    from glossogen.server import create_app

    flags = ["--by", "label.note", "--measure", "task_done:count"]
    for _ in range(2):  # cold, then from the cache
        got = analyze_json(capsys, "--runs-dir", labelled.runs_dir, *flags)
        assert [g["keys"]["label.note"] for g in got["groups"]] == ["+1", FORMULA, None]
    picked = analyze_json(capsys, "--runs-dir", labelled.runs_dir, "--measure",
                          "task_done:count", "--filter", f"note={FORMULA}")  # fmt: skip
    assert [c["value"] for g in picked["groups"] for c in g["cells"]] == [1.0]
    assert analyze("--runs-dir", labelled.runs_dir, *flags, "--csv") == 0
    assert capsys.readouterr().out.splitlines() == [
        "label.note,measure,value,n,missing,runs,low,high,interval",
        "'+1,task_done:count,1,1,0,1,,,",
        '"\'=HYPERLINK(""http://x"")",task_done:count,1,1,0,1,,,',
        "(blank),task_done:count,3,3,0,3,,,",
    ]
    client = TestClient(create_app(labelled.runs_dir))
    query = {"by": ["label.note"], "measures": [{"field": "task_done", "agg": "count"}]}
    answered = client.post(f"{API}/query", json=query).json()
    assert [g["keys"]["label.note"] for g in answered["groups"]] == ["+1", FORMULA, None]
    drawn = client.post(f"{API}/render", json={"result": answered, "chart": "table"}).json()
    assert [line.split(",")[0] for line in drawn["csv"].splitlines()[1:]] == [
        "'+1", "\"'=HYPERLINK(\"\"http://x\"\")\"", "(blank)"]  # fmt: skip

    async def ask() -> dict[str, Any]:
        async with in_process_session(Path(labelled.runs_dir), tmp_path) as session:
            return await call(session, "analyze_runs", by=["label.note"],
                              measures=["task_done:count"])  # fmt: skip

    mcp = asyncio.run(ask())
    assert [g["keys"]["label.note"] for g in mcp["groups"]] == ["+1", FORMULA, None]


def test_wording_names_what_was_typed(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = cohort.runs_dir
    for args, line in [
        (["--measure", "task_done", "--measure", "task_done"],
         "--measure 'task_done:mean': a measure is named twice"),
        (["--grain", "run", "--metric", "x", "--measure", "x"],
         "--metric 'x': only the observation grain takes a metric (the --grain is run)"),
        (["--grain", "observation", "--metric", "\udcff", "--measure", "x"],
         "--metric '\\xff': not UTF-8 text"),
        (["--measure", "x", "--chart", "\udcff"], "--chart '\\xff': not UTF-8 text"),
        (["--dashboard", "", "--out", str(tmp_path / "d")],
         "--dashboard '': a dashboard is a .yaml, .yml or .json file"),
    ]:  # fmt: skip
        assert (analyze("--runs-dir", runs, *args), capsys.readouterr()) == (
            64, ("", f"glossogen: error: {line}\n"))  # fmt: skip
    for frames, line in [
        ("run_level,", "--frames 'run_level,': a table name is empty"),
        ("run_level,run_level", "--frames 'run_level,run_level': the table 'run_level' is named "
         "twice"),
    ]:  # fmt: skip
        assert export("--runs-dir", runs, "--out", str(tmp_path / "x"), "--frames", frames) == 64
        assert capsys.readouterr() == ("", f"glossogen: error: {line}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_whole_number_shows_whole_on_the_terminal(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    from glossogen.analysis._render import number

    assert (number(77461.0), number(0.75), number(1e20), number(12345.5)) == (
        "77461", "0.75", "1e+20", "1.235e+04")  # fmt: skip
    total = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--measure",
                         "total_input_tokens:sum")["groups"][0]["cells"][0]["value"]  # fmt: skip
    assert total == 172980.0  # the cohort's scripted runs' input tokens, summed
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "total_input_tokens:sum") == 0
    assert f" {int(total)} " in capsys.readouterr().out


def test_a_dashboard_name_with_an_extension_and_too_many_groups_to_draw_are_refused(
    client: TestClient,
) -> None:
    board = {"queries": {"q": {"measures": [{"field": "task_done"}]}},
             "charts": [{"name": "c", "query": "q", "chart": "table"}]}  # fmt: skip
    got = client.put(f"{API}/dashboards/x.yaml", json=board)
    assert (got.status_code, got.json()) == (422, {"detail": {"field": "dashboard", "message": (
        "'x.yaml': a dashboard's name takes no extension; name it 'x' (kept as x.yaml)")}})  # fmt: skip
    result = _round_rates(client)
    group = result["groups"][0]
    result["groups"] = [{**group, "keys": {"round_budget_chars": str(i)}} for i in range(501)]
    drawn = client.post(f"{API}/render", json={"result": result, "chart": "bar"})
    assert (drawn.status_code, drawn.json()) == (422, {"detail": {"field": "result.groups",
        "message": "501 groups: at most 500 are drawn; narrow the query or set its limit"}})  # fmt: skip
    table = client.post(f"{API}/render", json={"result": result, "chart": "table"})
    assert table.status_code == 200
    assert len(table.json()["csv"].splitlines()) == 502


# u45a's findings left last stop (REST's parameter names, 1e999, the legend).


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "Input should be a valid integer, unable to parse string as an integer"),
        ("0", "max_runs 0: must be at least 1"),
        ("100000000000000000000000000000", "max_runs 100000000000000000000000000000: must be "
         "at most 9007199254740991 (2**53 - 1, the largest whole number a JSON answer holds "
         "exactly)"),
    ],
)  # fmt: skip
def test_fields_names_a_bad_max_runs_max_runs_whatever_is_wrong_with_it(
    client: TestClient, value: str, message: str
) -> None:
    """``?max_runs=abc`` was named ``query.max_runs``, ``?max_runs=0`` ``max_runs``."""
    got = client.get(f"{API}/fields", params={"max_runs": value})
    assert (got.status_code, got.json()) == (
        422, {"detail": {"field": "max_runs", "message": message}})  # fmt: skip


def test_a_json_number_past_a_floats_range_is_refused_not_echoed_as_inf(
    client: TestClient,
) -> None:
    """Was ``filter 'total_chars>inf': total_chars is a number, 'inf' is not`` (``inf`` was
    never typed). What was typed is lost when the JSON is read, so the place is named."""
    line = ("the number reads as inf, not a finite number (a YAML .inf, or a JSON or YAML "
            "number past ±1.8e308, does); give a finite one")  # fmt: skip
    for body, field in (
        (b'{"measures": [{"field": "total_chars"}], "filters": [{"field": "total_chars", '
         b'"op": ">", "value": 1e999}]}', "filters.0.value"),
        (b'{"measures": [{"field": "total_chars"}], "by": ["round_budget_chars"], "compare": '
         b'{"key": "round_budget_chars", "a": 300, "b": -1e999}}', "compare.b"),
    ):  # fmt: skip
        got = client.post(f"{API}/query", content=body,
                          headers={"content-type": "application/json"})  # fmt: skip
        assert (got.status_code, got.json()) == (
            422, {"detail": {"field": field, "message": line.replace("inf", "-inf", 1)
                             if field == "compare.b" else line}})  # fmt: skip
    typed = client.post(f"{API}/query", json={
        "measures": [{"field": "total_chars"}],
        "filters": [{"field": "total_chars", "op": ">", "value": "1e999"}]})  # fmt: skip
    assert (typed.status_code, typed.json()) == (422, {"detail": {"field": "filters", "message": (
        "filter 'total_chars>1e999': total_chars is a number, '1e999' is not a finite number")}})  # fmt: skip


@pytest.mark.parametrize("chart", ["bar", "line", "scatter"])
def test_a_two_key_chart_draws_its_legend_when_the_second_key_has_one_value(
    cohort: Cohort, tmp_path: Path, chart: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--knob channel_noise_level=0.1``: r2 (budget 300) and r5 (no budget), both 0.1. The
    legend (titled by the second key, one entry ``0.1``) was not drawn: one value, no legend."""
    path = tmp_path / "chart.svg"
    assert analyze("--runs-dir", cohort.runs_dir, "--knob", "channel_noise_level=0.1", "--by",
                   "round_budget_chars,channel_noise_level", "--measure", "task_done",
                   "--chart", chart, "--plot", str(path)) == 0  # fmt: skip
    capsys.readouterr()
    svg = path.read_text()
    assert svg.count('<g id="legend_1">') == 1
    legend = svg[svg.index('<g id="legend_1">') :]
    assert [t for t in ("<!-- channel_noise_level -->", "<!-- 0.1 -->") if t in legend] == [
        "<!-- channel_noise_level -->", "<!-- 0.1 -->"]  # fmt: skip
    one_key = tmp_path / "one.svg"
    assert analyze("--runs-dir", cohort.runs_dir, "--by", "round_budget_chars", "--measure",
                   "task_done", "--chart", chart, "--plot", str(one_key)) == 0  # fmt: skip
    assert '<g id="legend_1">' not in one_key.read_text()  # one key: no series to name
