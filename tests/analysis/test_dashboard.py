"""Dashboards as files: ``glossogen analyze --dashboard FILE --out DIR`` on the small cohort.

The report's CSVs are checked cell by cell against values worked by hand (Wilson's interval by
its formula), its SVGs parsed as SVG, its run list against each log's sha256, and the report
opened in a real headless Chromium (a screenshot is written to the screenshots folder).
"""

from __future__ import annotations

import hashlib
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from glossogen.analysis._dashboard import (
    Dashboard,
    DashboardError,
    dump_dashboard,
    load_dashboard,
    parse_dashboard,
)
from tests.analysis.cohort import Cohort, analyze, build

BOARD = """\
title: Budget study
queries:
  done:
    selection: {kind: filters, scenario: [veyru]}
    by: [round_budget_chars]
    measures: [{field: task_done, agg: rate}, {field: mean_chars_per_round, agg: max}]
  success:
    grain: round
    by: [round_budget_chars]
    measures: [{field: round_success, agg: rate}]
    compare: {key: round_budget_chars, a: "300", b: "600"}
    seed: 7
    resamples: 10
charts:
  - {name: done_by_budget, query: done, chart: bar}
  - {name: success_by_budget, query: success, chart: line, title: Round success by budget}
  - {name: success_table, query: success, chart: table}
"""
SVG = "{http://www.w3.org/2000/svg}"
BODY_WIDTH = 1200 - 2 * 24


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("analysis-dashboard-runs")))


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval, written out (z = 1.959963984540054)."""
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_the_static_report(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str], browser: object,
    shots: Path,
) -> None:  # fmt: skip
    board = tmp_path / "board.yaml"
    board.write_text(BOARD)
    out = tmp_path / "report"
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out", str(out)) == 0
    files = ["done_by_budget.csv", "done_by_budget.svg", "success_by_budget.csv",
             "success_by_budget.svg", "success_by_budget.comparisons.csv", "success_table.csv",
             "success_table.comparisons.csv", "dashboard.json", "results.json", "runs.csv",
             "index.html"]  # fmt: skip
    assert capsys.readouterr().out == f"wrote 11 files to {out}: {', '.join(files)}\n"
    assert sorted(p.name for p in out.iterdir()) == sorted(files)

    w300, w600, wblank = wilson(2, 2), wilson(1, 2), wilson(0, 1)
    assert (out / "done_by_budget.csv").read_text().splitlines() == [
        "round_budget_chars,measure,value,n,missing,runs,low,high,interval",
        f"300,task_done:rate,1.0,2,0,2,{w300[0]!r},1.0,wilson",
        "300,mean_chars_per_round:max,20.0,2,0,2,,,",
        f"600,task_done:rate,0.5,2,0,2,{w600[0]!r},{w600[1]!r},wilson",
        "600,mean_chars_per_round:max,30.0,1,1,1,,,",
        f"(blank),task_done:rate,0.0,1,0,1,0.0,{wblank[1]!r},wilson",
        "(blank),mean_chars_per_round:max,50.0,1,0,1,,,",
    ]
    assert (w300[0], w600[0], wblank[1]) == (0.34238022750665303, 0.09453120573423074,
                                             0.7934506856227626)  # fmt: skip
    success = [
        "round_budget_chars,measure,value,n,missing,runs,low,high,interval",
        "300,round_success:rate,0.75,4,0,2,0.5,1.0,bootstrap",
        "600,round_success:rate,0.25,4,0,2,0.0,0.5,bootstrap",
        "(blank),round_success:rate,1.0,2,0,1,,,none",
    ]
    assert (out / "success_by_budget.csv").read_text().splitlines() == success
    assert (out / "success_table.csv").read_text().splitlines() == success
    # Paired by seed: r1 (0.5) with r3 (0.0), r2 (1.0) with r4 (0.5): each pair differs by
    # -0.5, so every resample of pairs does too.
    assert (out / "success_by_budget.comparisons.csv").read_text().splitlines() == [
        "measure,key,a,b,a_value,b_value,difference,low,high,interval,paired,pairing,n_a,n_b,pairs",
        "round_success:rate,round_budget_chars,300,600,0.75,0.25,-0.5,-0.5,-0.5,paired bootstrap,"
        "true,seed,4,4,2",
    ]
    for name in ("done_by_budget.svg", "success_by_budget.svg"):
        root = ET.parse(out / name).getroot()
        assert (root.tag, root.get("width"), root.get("height")) == (f"{SVG}svg", "518.4pt",
                                                                     "288pt")  # fmt: skip
        assert root.find(f".//{SVG}g[@id='axes_1']") is not None
    runs = (out / "runs.csv").read_text().splitlines()
    assert runs[0] == "run_id,log_sha256,report_sha256"
    expected = []
    for run_id in sorted(cohort.ids.values()):
        folder = Path(cohort.runs_dir, run_id)
        log = hashlib.sha256((folder / "veyru.jsonl").read_bytes()).hexdigest()
        report = hashlib.sha256((folder / "veyru_report.json").read_bytes()).hexdigest()
        expected.append(f"{run_id},{log},{report}")
    assert runs[1:] == expected
    assert json.loads((out / "dashboard.json").read_text())["charts"][1] == {
        "name": "success_by_budget", "query": "success", "chart": "line",
        "title": "Round success by budget",
    }  # fmt: skip
    results = json.loads((out / "results.json").read_text())
    assert results["done"]["run_ids"] == sorted(cohort.ids.values())

    page = browser.new_page(viewport={"width": 1200, "height": 1400})
    page.goto((out / "index.html").as_uri())
    # The tables take the window's width (less the 1.5rem margins and the scroll bar), every
    # table within it, the comparisons' fifteen columns too; prose keeps its 60rem (960 px).
    assert page.evaluate(
        "[document.body.getBoundingClientRect().width, "
        "document.querySelector('p.meta').getBoundingClientRect().width, "
        "Array.from(document.querySelectorAll('table')).map(t => [t.className, "
        "t.getBoundingClientRect().right <= document.body.getBoundingClientRect().right])]"
    ) == [BODY_WIDTH, 960, [["cells", True], ["cells", True], ["comparisons", True],
                            ["cells", True], ["comparisons", True], ["runs", True]]]  # fmt: skip
    # No number is broken across lines: each number cell is one line box.
    assert (
        page.evaluate(
            "Array.from(document.querySelectorAll('td.num')).filter(td => { const r = "
            "document.createRange(); r.selectNodeContents(td); return r.getClientRects().length "
            "> 1; }).map(td => td.textContent)"
        )
        == []
    )
    # Nor a word: a header or a cell of one word ("300", "difference") is one line box, in
    # this window and a narrower one (they broke anywhere: an arm '300' read '30' over '0' at
    # 900 px); only a sha256 may break.
    broken_words = (
        "Array.from(document.querySelectorAll('th, td')).filter(c => !c.querySelector('code') "
        "&& !/\\s/.test(c.textContent.trim())).filter(c => { const r = document.createRange(); "
        "r.selectNodeContents(c); return r.getClientRects().length > 1; }).map(c => c.textContent)"
    )
    assert page.evaluate(broken_words) == []
    page.set_viewport_size({"width": 900, "height": 1400})
    assert page.evaluate(broken_words) == []
    page.set_viewport_size({"width": 1200, "height": 1400})
    # Two comparison rows (one a table), each with 8 number cells: a_value ... high, n_a ... pairs.
    assert page.locator("table.comparisons td.num").count() == 2 * 8
    page.wait_for_function(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
    )
    # Both charts drawn: 518.4 by 288 points, at a CSS pixel's 0.75 point.
    assert page.evaluate("Array.from(document.images).map(i => [i.naturalWidth, "
                         "i.naturalHeight])") == [[691, 384], [691, 384]]  # fmt: skip
    assert page.inner_text("h1") == "Budget study"
    assert page.locator("h2").all_inner_texts() == [
        "done_by_budget", "Round success by budget", "success_table", "Runs",
    ]  # fmt: skip
    assert page.locator("table.runs tbody tr").count() == 5
    # No run id is broken across lines either (the hashes beside it may wrap).
    assert page.evaluate(
        "Array.from(document.querySelectorAll('table.runs td.id')).map(td => { const r = "
        "document.createRange(); r.selectNodeContents(td); return r.getClientRects().length; })"
    ) == [1, 1, 1, 1, 1]  # fmt: skip
    first = page.locator("#chart-done_by_budget table.cells tbody tr").first
    assert first.locator("td").all_inner_texts() == [
        "300", "task_done:rate", "1", "2", "0", "2", "0.3424", "1", "wilson",
    ]  # fmt: skip
    page.screenshot(path=str(shots / "dashboard-report.png"), full_page=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: c, query: b}]\n",
            "charts.0.query 'b': no such query (a)",
        ),
        (
            "queries: {a: {measures: [{field: x, agg: avg}]}}\ncharts: [{name: c, query: a}]\n",
            "queries.a.measures.0.agg: measure 'x:avg': unknown aggregate 'avg' (one of mean, "
            "median, sum, count, min, max, stddev, sem, rate)",  # as --measure x:avg is refused
        ),
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: c, query: a, chart: pie}]\n",
            "charts.0.chart 'pie': Input should be 'bar', 'line', 'scatter', 'heatmap' or 'table'",
        ),
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: ../c, query: a}]\n",
            "charts.0.name '../c': String should match pattern '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'",
        ),
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: c, query: a, "
            "chart: heatmap}]\n",
            "charts.0.chart 'heatmap': query 'a' has 0 keys, a heatmap needs two",
        ),
        (
            "queries: {a: {by: [k], measures: [{field: x}]}}\ncharts: [{name: c, query: a, "
            "chart: heatmap}]\n",
            "charts.0.chart 'heatmap': query 'a' has 1 key, a heatmap needs two",
        ),
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: []\nnumbers: [1]\n",
            "charts: List should have at least 1 item after validation, not 0",
        ),
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: c, query: a}]\nnumbers: 1\n",
            "numbers 1: Extra inputs are not permitted",
        ),
        (
            "queries: {a: {measures: []}}\ncharts: [{name: c, query: a}]\n",
            "queries.a.measures: List should have at least 1 item after validation, not 0",
        ),
        (  # as --grain words it: the value and the grains
            "queries: {a: {grain: week, measures: [{field: x}]}}\ncharts: [{name: c, query: a}]\n",
            "queries.a.grain 'week' is not one of run, round, agent, message, call, observation",
        ),
        (
            "queries: {a: {by: [k, ''], measures: [{field: x}]}}\ncharts: [{name: c, query: a}]\n",
            "queries.a.by 'k,': a key is empty",
        ),
        (  # a chart named runs would write runs.csv over the run list
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: runs, query: a}]\n",
            "charts.0.name 'runs': its file runs.csv is also one of the report's own files; "
            "rename the chart",
        ),
        (  # x's comparisons and the chart x.comparisons would write one file
            "queries: {a: {measures: [{field: x}], compare: {key: k, a: '1', b: '2'}}}\n"
            "charts: [{name: x, query: a}, {name: x.comparisons, query: a, chart: table}]\n",
            "charts.1.name 'x.comparisons': its file x.comparisons.csv is also written by chart "
            "'x'; rename the chart",
        ),
        (  # a.csv and A.csv: one file where case is not told apart (macOS, Windows)
            "queries: {a: {measures: [{field: x}]}}\n"
            "charts: [{name: a, query: a}, {name: A, query: a}]\n",
            "charts.1.name 'A': its file A.csv is also written by chart 'a' (as a.csv, case "
            "aside); rename the chart",
        ),
        (
            "queries: {a: {measures: [{field: x}]}}\ncharts: [{name: RUNS, query: a}]\n",
            "charts.0.name 'RUNS': its file RUNS.csv is also one of the report's own files (as "
            "runs.csv, case aside); rename the chart",
        ),
        ("- a\n", "a dashboard is a mapping (title, queries, charts)"),
        ("queries: {a: 1, a: 2}\n", "line 1, column 17: duplicate key 'a' (first at line 1)"),
    ],
)
def test_a_bad_dashboard_is_one_line_and_nothing_is_written(
    deep_tmp: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    board = deep_tmp / "board.yaml"
    board.write_text(text)
    out = deep_tmp / "report"
    # The runs dir does not exist: the file is refused before any run is looked for.
    code = analyze("--runs-dir", str(deep_tmp / "absent"), "--dashboard", str(board), "--out",
                   str(out))  # fmt: skip
    assert (code, capsys.readouterr().err) == (64, f"glossogen: error: --dashboard {board}: "
                                                   f"{message}\n")  # fmt: skip
    assert not out.exists()


def test_dashboard_refusals_of_the_command(
    cohort: Cohort, deep_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = deep_tmp / "board.yaml"
    board.write_text(BOARD.replace("field: round_success", "field: nope"))
    out = deep_tmp / "report"
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out",
                   str(out)) == 64  # fmt: skip
    assert capsys.readouterr().err == (
        f"glossogen: error: --dashboard {board}: queries.success.measures 'nope': no such field "
        "at the round grain of this selection (list the grain's fields)\n"
    )
    assert not out.exists()
    # A query's selection refused names the query's field, not a flag (was: `--scenario 'nosuch'
    # has no run under ...`, though no --scenario was given).
    board.write_text(BOARD.replace("scenario: [veyru]", "scenario: [nosuch]"))
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out",
                   str(out)) == 65  # fmt: skip
    assert capsys.readouterr().err == (
        f"glossogen: error: --dashboard {board}: queries.done.selection.scenario 'nosuch' has no "
        f"run under {cohort.runs_dir} (scenarios there: veyru)\n"
    )
    assert not out.exists()
    assert analyze("--dashboard", str(board), "--out", str(out), "--measure", "x") == 64
    assert capsys.readouterr().err == (
        "glossogen: error: --dashboard takes its queries from the file, not --measure\n"
    )
    assert analyze("--dashboard", str(board)) == 64
    assert (
        capsys.readouterr().err == "glossogen: error: --dashboard FILE and --out DIR go together\n"
    )
    text = deep_tmp / "board.txt"
    text.write_text(BOARD)
    assert analyze("--dashboard", str(text), "--out", str(out)) == 64
    assert capsys.readouterr().err == (
        f"glossogen: error: --dashboard {text}: a dashboard is a .yaml, .yml or .json file\n"
    )


def test_json_and_yaml_read_alike_and_a_saved_dashboard_reads_back(tmp_path: Path) -> None:
    from_yaml = parse_dashboard(BOARD, "board.yaml")
    path = tmp_path / "board.json"
    path.write_text(from_yaml.model_dump_json())
    assert load_dashboard(str(path)) == from_yaml
    assert parse_dashboard(dump_dashboard(from_yaml), "saved.yaml") == from_yaml
    assert dump_dashboard(from_yaml).splitlines()[:12] == [
        "title: Budget study",
        "description: ''",
        "queries:",
        "  done:",
        "    selection:",
        "      kind: filters",
        "      scenario:",
        "      - veyru",
        "    grain: run",
        "    by:",
        "    - round_budget_chars",
        "    filters: []",
    ]
    with pytest.raises(DashboardError, match=r"^board.json: Expecting value: line 1 column 1"):
        parse_dashboard("title: x", "board.json", json_only=True)
    assert isinstance(from_yaml, Dashboard)


SMALL = BOARD.split("charts:")[0] + "charts:\n  - {name: done_by_budget, query: done, chart: bar}\n"
"""The dashboard with only its first chart."""


def test_a_report_is_the_same_bytes_each_time_and_replaces_an_earlier_one_whole(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board, small = tmp_path / "board.yaml", tmp_path / "small.yaml"
    board.write_text(BOARD)
    small.write_text(SMALL)
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out",
                       str(out)) == 0  # fmt: skip
    capsys.readouterr()
    files = sorted(p.name for p in first.iterdir())
    assert len(files) == 11
    # Regenerated, every file is byte for byte the one before: the SVGs carry no date.
    assert [(second / f).read_bytes() == (first / f).read_bytes() for f in files] == [True] * 11
    assert b"dc:date" not in (first / "done_by_budget.svg").read_bytes()
    # Rendered again into an earlier report's folder, the folder is exactly the new report.
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(small), "--out",
                   str(first)) == 0  # fmt: skip
    assert capsys.readouterr().out == (
        f"wrote 6 files to {first}: done_by_budget.csv, done_by_budget.svg, dashboard.json, "
        "results.json, runs.csv, index.html\n"
    )
    assert sorted(p.name for p in first.iterdir()) == sorted([
        "done_by_budget.csv", "done_by_budget.svg", "dashboard.json", "results.json", "runs.csv",
        "index.html",
    ])  # fmt: skip
    assert (first / "done_by_budget.svg").read_bytes() == (
        second / "done_by_budget.svg"
    ).read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_out_that_is_not_a_report_folder_is_refused_untouched(
    cohort: Cohort, deep_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = deep_tmp / "board.yaml"
    board.write_text(BOARD)

    def render(out: Path, dashboard: Path = board) -> tuple[int, str]:
        code = analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(dashboard), "--out",
                       str(out))  # fmt: skip
        return code, capsys.readouterr().err

    afile = deep_tmp / "afile"
    afile.write_text("mine")
    assert render(afile) == (64, f"glossogen: error: --out {afile}: a file, not a folder\n")
    notes = deep_tmp / "notes"
    notes.mkdir()
    (notes / "draft.txt").write_text("mine")
    assert render(notes) == (64, (
        f"glossogen: error: --out {notes}: a folder that holds files and no earlier report "
        "(1, such as 'draft.txt'); name a new or empty folder\n"
    ))  # fmt: skip
    report = deep_tmp / "report"
    assert render(report) == (0, "")
    (report / "mine.csv").write_text("kept")
    assert render(report) == (64, (
        f"glossogen: error: --out {report}: an earlier report, and 'mine.csv', which it did not "
        "write; name a new or empty folder\n"
    ))  # fmt: skip
    assert (afile.read_text(), (notes / "draft.txt").read_text(), len(list(notes.iterdir())),
            (report / "mine.csv").read_text()) == ("mine", "mine", 1, "kept")  # fmt: skip
    missing = deep_tmp / "absent.yaml"
    assert render(deep_tmp / "new", missing) == (66, (
        f"glossogen: error: --dashboard {missing}: No such file or directory\n"
    ))  # fmt: skip
    assert not (deep_tmp / "new").exists()
