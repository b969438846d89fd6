"""``glossogen analyze``: its output exactly, and one line naming each bad value."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from glossogen.cli import main
from tests.analysis.cohort import Cohort, analyze, analyze_json, build


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("analysis-cli-runs")))


def test_csv_with_a_paired_comparison(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    code = analyze(
        "--runs-dir", cohort.runs_dir, "--by", "round_budget_chars", "--measure", "task_done",
        "--measure", "mean_chars_per_round:max", "--compare", "round_budget_chars=300,600",
        "--seed", "7", "--resamples", "10", "--csv",
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0
    assert out.splitlines() == [
        "round_budget_chars,measure,value,n,missing,runs,low,high,interval",
        "300,task_done:mean,1.0,2,0,2,1.0,1.0,bootstrap",
        "300,mean_chars_per_round:max,20.0,2,0,2,,,",
        "600,task_done:mean,0.5,2,0,2,0.0,1.0,bootstrap",
        "600,mean_chars_per_round:max,30.0,1,1,1,,,",
        "(blank),task_done:mean,0.0,1,0,1,,,none",
        "(blank),mean_chars_per_round:max,50.0,1,0,1,,,",
        "",
        "measure,key,a,b,a_value,b_value,difference,low,high,interval,paired,pairing,n_a,n_b,pairs",
        "task_done:mean,round_budget_chars,300,600,1.0,0.5,-0.5,-1.0,0.0,paired bootstrap,true,"
        "seed,2,2,2",
    ]
    assert err == "glossogen: note: comparisons are of means and rates only\n"


def test_the_terminal_table(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    code = analyze(
        "--runs-dir", cohort.runs_dir, "--grain", "round", "--by", "round_budget_chars",
        "--measure", "round_success:rate", "--seed", "7", "--resamples", "10",
    )  # fmt: skip
    assert code == 0
    assert [line.rstrip() for line in capsys.readouterr().out.splitlines()] == [
        "round grain: 10 rows of 5 runs",
        "round_budget_chars  measure             value  n  missing  runs  low  high  interval",
        "300                 round_success:rate   0.75  4        0     2  0.5     1  bootstrap",
        "600                 round_success:rate   0.25  4        0     2    0   0.5  bootstrap",
        "(blank)             round_success:rate      1  2        0     1             none",
    ]


def test_json_is_the_typed_result(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    code = analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done:rate", "--json")
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    (group,) = result["groups"]
    (cell,) = group["cells"]
    assert (cell["measure"], cell["value"], cell["n"], cell["missing"]) == (
        "task_done:rate",
        0.6,
        5,
        0,
    )
    assert cell["interval"]["method"] == "wilson"
    assert result["run_ids"] == sorted(cohort.ids.values())


def test_list_fields(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, "--list-fields", "--csv") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "name,family,dtype,rows,runs,distinct,values"
    assert "knob.round_budget_chars,knob,Int64,4,4,2,300; 600" in lines
    assert "metric.task_done,metric,Int64,5,5,2,0; 1" in lines
    # h45fix33b: money was listed as Float64, though it is held as decimals to be added.
    import csv

    money = [row[:3] for row in csv.reader(lines) if row[0].endswith("_usd")]
    assert money == [["total_cost_usd", "run", "Decimal(precision=38, scale=18)"],
                     ["judge_cost_usd", "run", "Decimal(precision=38, scale=18)"]]  # fmt: skip


BAD = [
    (["--grain", "week", "--measure", "x"],
     "--grain 'week' is not one of run, round, agent, message, call, observation"),
    (["--measure", "x:avg"],
     "--measure 'x:avg': unknown aggregate 'avg' (one of mean, median, sum, count, min, max, "
     "stddev, sem, rate)"),
    (["--by", "a,b,c", "--measure", "x"], "--by 'a,b,c': at most two keys"),
    (["--by", "", "--measure", "x"], "--by '': a key is empty (K1[,K2])"),
    (["--by", "a,", "--measure", "x"], "--by 'a,': a key is empty (K1[,K2])"),
    (["--filter", "noise", "--measure", "x"],
     "--filter 'noise' has no operator (one of != >= <= = > <)"),
    (["--compare", "budget", "--measure", "x"], "--compare 'budget' is not KEY=A,B"),
    (["--sort", "zzz", "--measure", "x"], "--sort 'zzz' is neither a measure (x:mean) nor a key"),
    (["--knob", "seed", "--measure", "x"],
     "--knob 'seed': no operator; write <knob><op><value> with op one of != >= <= = > <"),
    (["--grain", "observation", "--measure", "x"],
     "--metric is required at the observation grain (its metric's observations are the rows)"),
    (["--metric", "task_done", "--measure", "x"],
     "--metric 'task_done': only the observation grain takes a metric (the --grain is run)"),
    (["--by", "a,a", "--measure", "x"], "--by 'a,a': the key 'a' is named twice"),
    ([], "--measure is required (FIELD[:AGG])"),
    (["--measure", "x", "--plot", "/absent-folder/chart.svg"],
     "--plot '/absent-folder/chart.svg': its folder '/absent-folder' does not exist"),
    (["--measure", "x", "--plot", ".svg"], "--plot '.svg': the file has no name before .svg"),
    (["--measure", "x", "--plot", "out/.PNG"],
     "--plot 'out/.PNG': the file has no name before .PNG"),
    (["--measure", "x", "--limit", "-1"],
     "--limit -1: must be at least 1"),
    (["--measure", "x", "--resamples", "5"],
     "--resamples 5: Input should be greater than or equal to 10"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "line"), BAD)
def test_bad_input_is_refused_before_any_run_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    # The runs dir does not exist: the query is refused first, so its line is the one shown.
    assert analyze("--runs-dir", str(tmp_path / "absent"), *args) == 64
    assert capsys.readouterr().err == f"glossogen: error: {line}\n"


def test_names_the_rows_do_not_hold(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "nosuch") == 64
    assert capsys.readouterr().err == (
        "glossogen: error: --measure 'nosuch': no such field at the run grain of this "
        "selection (list the grain's fields)\n"
    )
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "x", "--filter",
                   "knob.seed>a") == 64  # fmt: skip
    assert capsys.readouterr().err == (
        "glossogen: error: --measure 'x': no such field at the run grain of this "
        "selection (list the grain's fields)\n"
    )
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--filter",
                   "knob.seed>a") == 64  # fmt: skip
    assert capsys.readouterr().err == (
        "glossogen: error: --filter 'knob.seed>a': knob.seed is a number, 'a' is not\n"
    )
    assert analyze("--runs-dir", str(Path(cohort.runs_dir) / "absent"), "--measure", "x") == 66
    assert capsys.readouterr().err == (
        f"glossogen: error: --runs-dir '{cohort.runs_dir}/absent' does not exist\n"
    )


@pytest.mark.parametrize("chart", ["bar", "line", "scatter", "heatmap"])
@pytest.mark.parametrize("ext", ["svg", "png"])
def test_plot_writes_a_valid_chart(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str], chart: str, ext: str
) -> None:
    import xml.etree.ElementTree as ET

    path = tmp_path / f"{chart}.{ext}"
    code = analyze(
        "--runs-dir", cohort.runs_dir, "--grain", "round", "--by", "round_number,round_budget_chars",
        "--measure", "round_success:rate", "--plot", str(path), "--chart", chart, "--csv",
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    if ext == "svg":  # 7.2 by 4 inches, at 72 points an inch
        root = ET.parse(path).getroot()
        assert (root.tag, root.get("width"), root.get("height")) == (
            "{http://www.w3.org/2000/svg}svg", "518.4pt", "288pt"
        )  # fmt: skip
        assert root.find(".//{http://www.w3.org/2000/svg}g[@id='axes_1']") is not None
    else:  # the PNG signature, then IHDR: 720 by 400 pixels (7.2 by 4 inches at 100 dpi)
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
        assert struct.unpack(">II", data[16:24]) == (720, 400)


def test_plot_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    absent = str(tmp_path / "absent")
    assert analyze("--runs-dir", absent, "--measure", "x", "--plot", "a.pdf") == 64
    assert (
        capsys.readouterr().err == "glossogen: error: --plot 'a.pdf': write a .svg or .png file\n"
    )
    assert (
        analyze("--runs-dir", absent, "--measure", "x", "--plot", "a.svg", "--chart", "pie") == 64
    )
    assert capsys.readouterr().err == (
        "glossogen: error: --chart 'pie' is not one of bar, line, scatter, heatmap\n"
    )
    assert analyze("--runs-dir", absent, "--measure", "x", "--plot", "a.svg", "--chart",
                   "heatmap") == 64  # fmt: skip
    assert capsys.readouterr().err == (
        "glossogen: error: --chart 'heatmap' needs two keys (--by K1,K2)\n"
    )


@pytest.mark.parametrize(
    ("flag", "value", "code", "out", "err"),
    [
        ("--run-id-contains", "zz", 0, "anything,measure,value,n,missing,runs,low,high,interval\n",
         "glossogen: note: no run matched the selection\n"),
        ("--scenario", "nosuch", 65, "",
         "glossogen: error: --scenario 'nosuch' has no run under RUNS (scenarios there: veyru)\n"),
    ],
)  # fmt: skip
def test_a_selection_of_no_run_is_no_error_but_a_scenario_no_run_has_is_refused(
    cohort: Cohort,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    value: str,
    code: int,
    out: str,
    err: str,
) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, flag, value, "--by", "anything",
                   "--measure", "anything", "--csv") == code  # fmt: skip
    assert capsys.readouterr() == (out, err.replace("RUNS", str(cohort.runs_dir)))


def test_sort_and_limit(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    code = analyze("--runs-dir", cohort.runs_dir, "--by", "round_budget_chars", "--measure",
                   "task_done:sum", "--sort", "-round_budget_chars", "--csv")  # fmt: skip
    assert code == 0
    assert [line.split(",")[0] for line in capsys.readouterr().out.splitlines()] == [
        "round_budget_chars", "600", "300", "(blank)"
    ]  # fmt: skip
    code = analyze("--runs-dir", cohort.runs_dir, "--by", "seed", "--measure",
                   "mean_chars_per_round:max", "--sort", "-mean_chars_per_round:max",
                   "--limit", "2", "--csv")  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "seed,measure,value,n,missing,runs,low,high,interval",
        "3,mean_chars_per_round:max,50.0,1,0,1,,,",
        "1,mean_chars_per_round:max,30.0,2,0,2,,,",
    ]


def test_fields_of_runs_never_scored_say_how_to_score_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fixtures.played_runs import play_run

    for i in range(2):
        play_run(str(tmp_path), rounds=2, now_unix=1_790_000_100 + i)
    note = (
        "glossogen: note: no run of this selection has a report yet: metrics and the round "
        "grain's rows come from scoring them (glossogen evaluate)\n"
    )
    # The first listing reads the runs; the second is answered from the projection cache.
    for grain in ("round", "run", "round"):
        code = analyze("--runs-dir", str(tmp_path), "--grain", grain, "--list-fields", "--csv")
        out, err = capsys.readouterr()
        assert (code, err) == (0, note)
        assert not [line for line in out.splitlines() if line.startswith("metric.")]


def test_the_title_and_the_chart_count_the_runs_the_rows_come_from(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A filter keeps the rounds of r1 and r2: the table and the chart both say 2 runs of 5.
    svg = tmp_path / "f.svg"
    assert analyze("--runs-dir", cohort.runs_dir, "--grain", "round", "--filter",
                   "round_budget_chars=300", "--measure", "round_success", "--by",
                   "channel_noise_level", "--plot", str(svg)) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] == "round grain: 4 rows of 2 runs (5 selected)"
    assert "<!-- 2 runs (5 selected); error bars: 95% interval -->" in svg.read_text()
    # No row left: 0 runs, on the chart too.
    assert analyze("--runs-dir", cohort.runs_dir, "--grain", "round", "--filter",
                   "round_budget_chars=900", "--measure", "round_success", "--plot",
                   str(svg)) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] == "round grain: 0 rows of 0 runs (5 selected)"
    assert "<!-- 0 runs (5 selected); error bars: 95% interval -->" in svg.read_text()
    assert "<!-- no row is left after the filters -->" in svg.read_text()  # not a bare frame
    # No filter, every run adds rows: the runs alone.
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--plot",
                   str(svg)) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] == "run grain: 5 rows of 5 runs"
    assert "<!-- 5 runs; error bars: 95% interval -->" in svg.read_text()


def test_a_plot_of_a_selection_of_no_run_says_so_as_the_table_does(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No run matched: the table is empty with a note, and the chart, written as asked, says
    the same in its frame rather than drawing an empty scale (the answer is not an error)."""
    for chart in ("bar", "line", "scatter", "heatmap"):
        svg = tmp_path / f"{chart}.svg"
        by = "round_budget_chars" + (",channel_noise_level" if chart == "heatmap" else "")
        assert analyze("--runs-dir", cohort.runs_dir, "--knob", "round_budget_chars>10000",
                       "--by", by, "--measure", "task_done", "--plot", str(svg),
                       "--chart", chart) == 0  # fmt: skip
        out, err = capsys.readouterr()
        assert (out.splitlines()[0], err) == (
            "run grain: 0 rows of 0 runs", "glossogen: note: no run matched the selection\n"
        )  # fmt: skip
        drawn = svg.read_text()
        assert "<!-- no run matched the selection -->" in drawn
        assert "<!-- 0 runs" in drawn and "<!-- 0.0 -->" not in drawn  # no bare 0..1 scale
    # Runs with rows, but no value of the measure in any group: said too.
    svg = tmp_path / "none.svg"
    assert analyze("--runs-dir", cohort.runs_dir, "--filter", f"run_id={cohort.ids['r4']}",
                   "--measure", "mean_chars_per_round", "--plot", str(svg)) == 0  # fmt: skip
    capsys.readouterr()
    assert "<!-- no group has a value of mean_chars_per_round:mean -->" in svg.read_text()


def test_the_observation_grain_counts_only_the_runs_that_add_rows(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    # r4's report holds no mean_chars_per_round: its run adds no row (8+12+20+20+25+35+40+60).
    assert analyze("--runs-dir", cohort.runs_dir, "--grain", "observation", "--metric",
                   "mean_chars_per_round", "--measure", "value:sum", "--by",
                   "scenario_name") == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "observation grain: 8 rows of 4 runs (5 selected)"
    assert out[2].split() == ["veyru", "value:sum", "220", "8", "0", "4"]


def test_a_rate_is_checked_on_the_rows_left_after_the_filters(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run grain round_success: r1 0.5, r2 1, r3 0, r4 0.5, r5 1; below 0.5 only r3's 0 is left.
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "round_success:rate", "--filter",
                   "round_success<0.5", "--csv") == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[1].split(",")[:5] == [
        "round_success:rate", "0.0", "1", "0", "1"
    ]  # fmt: skip
    # A 0.5 left among the rows is refused, as before.
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "round_success:rate", "--filter",
                   "round_success>0") == 64  # fmt: skip
    assert capsys.readouterr().err == (
        "glossogen: error: --measure 'round_success:rate': a rate needs 0/1 values; "
        "metric.round_success holds 0.5\n"
    )


def test_list_fields_cuts_long_values_in_the_terminal_table_only(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--runs-dir", cohort.runs_dir, "--grain", "message", "--list-fields"]
    listed = {f["name"]: f["values"] for f in analyze_json(capsys, *args)["fields"]}
    texts = listed["text"]
    assert max(len(v) for v in texts) > 40  # --json keeps each value whole
    assert analyze(*args) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("text "))
    each = "; ".join(v if len(v) <= 40 else f"{v[:40]}..." for v in texts)
    assert row.endswith(each if len(each) <= 120 else f"{each[:120]}...")
    at = lines[1].index("values")  # lines[0] is the title, lines[1] the header
    assert max(len(line[at:]) for line in lines[2:]) == 123  # 120 and the "..."


def test_a_count_is_a_whole_number_in_csv_and_in_the_table(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--runs-dir", cohort.runs_dir, "--grain", "round", "--measure", "run_id:count",
            "--measure", "round_success"]  # fmt: skip
    assert analyze(*args, "--csv") == 0
    assert capsys.readouterr().out.splitlines() == [
        "measure,value,n,missing,runs,low,high,interval",
        "run_id:count,10,10,0,5,,,",
        "round_success:mean,0.6,10,0,5,0.3,0.9,bootstrap",
    ]
    assert analyze(*args) == 0
    assert capsys.readouterr().out.splitlines()[2].split() == ["run_id:count", "10", "10", "0", "5"]


def test_a_run_id_that_no_longer_resolves_is_refused_as_the_export_refuses_it(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cohort is the export's selection: an unknown id is not silently dropped (exit 66)."""
    known = cohort.ids["r1"]
    for grain in ("run", "round"):
        code = analyze("--runs-dir", cohort.runs_dir, "--grain", grain, "--measure",
                       "total_chars", "--run-id", known, "--run-id", "veyru/9999999999",
                       "--run-id", "veyru/1")  # fmt: skip
        out, err = capsys.readouterr()
        assert (code, out, err) == (
            66, "", "glossogen: error: run ids that no longer resolve: veyru/9999999999, veyru/1\n"
        )  # fmt: skip
    code = analyze("--runs-dir", cohort.runs_dir, "--list-fields", "--run-id", "veyru/9999999999")
    assert (code, capsys.readouterr().err) == (
        66, "glossogen: error: run ids that no longer resolve: veyru/9999999999\n"
    )  # fmt: skip
    exported = 0
    try:  # glossogen export refuses the same selection with the same line and code
        main(["export", "--runs-dir", cohort.runs_dir, "--out",
              str(Path(cohort.runs_dir).parent / "export.zip"), "--run-id", "veyru/9999999999"])  # fmt: skip
    except SystemExit as exc:
        exported = int(exc.code or 0)
    assert (exported, capsys.readouterr().err) == (
        66, "glossogen: error: run ids that no longer resolve: veyru/9999999999\n"
    )  # fmt: skip


def test_a_report_value_that_is_not_finite_is_missing_with_a_note(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NaN and infinity count as missing (a note names run and field); an aggregate that
    overflows is blank with a note, while a mean whose sum overflows but which fits a float
    is given, with its interval; no library warning reaches stderr."""
    import shutil
    import warnings

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    for short, score, rounds in (("r1", "NaN", ["Infinity", "30"]),
                                 ("r2", "1e308", ["1e308", "1e308"])):  # fmt: skip
        report = runs / cohort.ids[short] / "veyru_report.json"
        data = json.loads(report.read_text())
        entry = data["metrics"]["mean_chars_per_round"]
        entry["score"] = "@score@"
        for row, value in zip(entry["per_round"], rounds, strict=True):
            row["value"] = f"@{value}@"
        text = json.dumps(data).replace('"@score@"', score)
        for value in rounds:
            text = text.replace(f'"@{value}@"', value, 1)
        report.write_text(text)
    note = ("glossogen: note: metric.mean_chars_per_round: a value that is not a finite number "
            "(text, NaN or infinite) counted as missing in {}\n")  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = analyze("--runs-dir", str(runs), "--measure", "mean_chars_per_round", "--csv")
        out, err = capsys.readouterr()
        assert (code, err) == (0, note.format(cohort.ids["r1"]))
        # r1's NaN missing; r2 1e308, r3 30, r5 50 (r4 none). A draw of three runs that holds
        # r2 twice sums past 1.8e308, yet the interval is found (the values scaled by 2**-1024):
        # a draw of r3 thrice (1 in 27) is its low end, 30, and of r2 thrice its high, 1e308.
        assert out.splitlines() == [
            "measure,value,n,missing,runs,low,high,interval",
            f"mean_chars_per_round:mean,{(1e308 + 30 + 50) / 3!r},3,2,3,30.0,1e+308,bootstrap",
        ]
        code = analyze("--runs-dir", str(runs), "--grain", "round", "--measure",
                       "mean_chars_per_round:sum", "--measure", "mean_chars_per_round",
                       "--csv")  # fmt: skip
        out, err = capsys.readouterr()
        assert (code, err) == (0, note.format(cohort.ids["r1"]) + (
            "glossogen: note: mean_chars_per_round:sum: overflows a float (beyond 1.8e308): "
            "left blank\n"
        ))  # fmt: skip
        # Two 1e308: their sum is blank (JSON has no infinity); the mean of the seven values
        # (30; 1e308, 1e308; 25, 35; 40, 60) is 2e308 / 7 + 190 / 7, a float. Its interval,
        # worked by hand: runs r1 (30 in 1 round), r2 (2e308 in 2), r3 (60 in 2), r5 (100 in
        # 2), default_rng(0)'s 2000 draws of 4 runs: 2.5% at a draw of r1 alone (30), 97.5% at
        # 7.5e307.
        assert 2 * (1e308 / 7) + 190 / 7 == 2.857142857142857e307
        scaled = np.ldexp([30.0, 1e308, 60.0, 100.0], -1024) * [1, 2, 1, 1]  # r2: 2 x 1e308
        picks = np.random.default_rng(0).integers(0, 4, size=(2000, 4))
        estimates = scaled[picks].sum(axis=1) / np.array([1, 2, 2, 2])[picks].sum(axis=1)
        bounds = [math.ldexp(b, 1024) for b in np.quantile(estimates, [0.025, 0.975])]
        assert bounds == [30.0, 7.5e307]
        assert out.splitlines() == [
            "measure,value,n,missing,runs,low,high,interval",
            "mean_chars_per_round:sum,,7,3,4,,,",
            "mean_chars_per_round:mean,2.857142857142857e+307,7,3,4,30.0,7.5e+307,bootstrap",
        ]
        result = analyze_json(capsys, "--runs-dir", str(runs), "--grain", "round", "--measure",
                              "mean_chars_per_round:sum")  # fmt: skip
        assert result["groups"][0]["cells"][0] == {
            "measure": "mean_chars_per_round:sum", "value": None, "n": 7, "missing": 3,
            "runs": 4, "interval": None,
        }  # fmt: skip
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    ("flag", "value", "typed"),
    [
        ("--by", "\udcff", "'\\xff'"),
        ("--measure", "\udcff", "'\\xff'"),
        ("--filter", "\udcff=1", "'\\xff=1'"),
        ("--by", "seed,\udcff", "'seed,\\xff'"),
    ],
)
def test_a_flag_that_is_not_utf8_is_refused_alike(
    cohort: Cohort, capsys: pytest.CaptureFixture[str], flag: str, value: str, typed: str
) -> None:
    """A raw byte no UTF-8 decodes (``$'\\xff'``): the same line for --by, --measure, --filter,
    the byte named as typed."""
    args = ["--runs-dir", cohort.runs_dir, flag, value]
    if flag != "--measure":
        args += ["--measure", "total_chars"]
    code = analyze(*args)
    out, err = capsys.readouterr()
    assert (code, out, err) == (
        64, "", f"glossogen: error: {flag} {typed}: not UTF-8 text\n"
    )  # fmt: skip
