"""What a second fresh user of ``glossogen analyze`` found: each a one-line refusal, never a trace.

Each bad target, value or combination is refused with one line naming it, an exact exit code or
HTTP status, and nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.cohort import Cohort, analyze, build

LONG = "n" * 300


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("second-user-runs")))


def test_a_plot_target_that_cannot_be_a_file_is_refused_before_any_run_is_read(
    deep_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = str(deep_tmp / "absent")  # never read: the target is refused first
    (deep_tmp / "adir.svg").mkdir()
    (deep_tmp / "afile").write_text("x")
    whole = repr(str(deep_tmp / f"{LONG}.svg"))  # a path is echoed whole, however long
    for target, line in [
        (f"{deep_tmp}/adir.svg", f"'{deep_tmp}/adir.svg': a folder, not a file"),
        (f"{deep_tmp}/afile/x.svg", f"'{deep_tmp}/afile/x.svg': its folder '{deep_tmp}/afile' "
         "is a file"),
        (str(deep_tmp / f"{LONG}.svg"), f"{whole}: the file name is too long"),
    ]:  # fmt: skip
        assert analyze("--runs-dir", absent, "--measure", "x", "--plot", target) == 64
        assert capsys.readouterr() == ("", f"glossogen: error: --plot {line}\n")
    assert sorted(p.name for p in deep_tmp.iterdir()) == ["adir.svg", "afile"]


def test_a_plot_the_system_refuses_is_one_line_after_the_table(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    code = analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done:count", "--csv",
                   "--plot", "/proc/x.svg")  # fmt: skip
    assert code == 73
    assert capsys.readouterr() == (
        "measure,value,n,missing,runs,low,high,interval\ntask_done:count,5,5,0,5,,,\n",
        "glossogen: error: --plot '/proc/x.svg': cannot be written: No such file or directory\n",
    )


BOARD = """\
queries:
  done: {measures: [{field: task_done, agg: count}]}
charts:
  - {name: done, query: done, chart: table}
"""


def test_a_dashboard_folder_that_cannot_be_made_is_one_line(
    cohort: Cohort, deep_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = deep_tmp / "board.yaml"
    board.write_text(BOARD)
    (deep_tmp / "afile").write_text("x")
    long = str(deep_tmp / LONG)
    for out, line in [
        ("", "''': names no folder"[1:]),
        (long, f"{long}: the folder name is too long"),  # whole, however long
        (f"{deep_tmp}/afile/dash", f"{deep_tmp}/afile/dash: its folder {deep_tmp}/afile is a file"),
    ]:  # fmt: skip
        assert analyze("--runs-dir", str(deep_tmp / "absent"), "--dashboard", str(board),
                       "--out", out) == 64  # fmt: skip
        assert capsys.readouterr() == ("", f"glossogen: error: --out {line}\n")
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out",
                   "/proc/dash") == 73  # fmt: skip
    assert capsys.readouterr() == (
        "", "glossogen: error: --out /proc/dash: cannot be written: No such file or directory\n"
    )  # fmt: skip
    assert sorted(p.name for p in deep_tmp.iterdir()) == ["afile", "board.yaml"]
    assert not Path("/proc/dash").exists()


def test_list_fields_refuses_a_metric_no_report_holds(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, "--list-fields", "--grain", "observation",
                   "--metric", "nope") == 64  # fmt: skip
    assert capsys.readouterr() == ("", f"glossogen: error: --metric {NOPE}\n")


NOPE = (
    "'nope': no report of this selection has this metric (they have mean_chars_per_round, "
    "round_success, task_done, team_split)"
)


def cut(text: str) -> str:
    """How a refusal echoes ``text``: quoted, its first 80 characters and ``...``."""
    return repr(text[:80]) + "..."


def test_every_long_typed_value_echoed_is_cut_at_80_and_a_path_never(
    cohort: Cohort, deep_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = "9" * 5000
    absent = str(deep_tmp / "absent")
    for args, code, line in [
        (["--runs-dir", cohort.runs_dir, "--measure", "task_done", "--compare",
          f"round_budget_chars=300,{huge}"], 64,
         f"--compare {cut(f'round_budget_chars=300,{huge}')}: no row has "
         f"knob.round_budget_chars {cut(huge)} (it holds 300, 600; an empty arm names the rows without it)"),
        (["--runs-dir", cohort.runs_dir, "--measure", "task_done", "--knob",
          f"round_budget_chars={huge}x"], 65,
         f"--knob {cut(f'round_budget_chars={huge}x')}: knob 'round_budget_chars', operator "
         f"'=', value {cut(f'{huge}x')}: the run records a number"),
        (["--runs-dir", cohort.runs_dir, "--measure", "task_done", "--scenario", LONG], 65,
         f"--scenario {cut(LONG)} has no run under {cohort.runs_dir} (scenarios there: veyru)"),
        (["--runs-dir", absent, "--measure", "x", "--chart", LONG], 64,
         f"--chart {cut(LONG)} is not one of bar, line, scatter, heatmap"),
        (["--runs-dir", cohort.runs_dir, "--measure", "x", "--status", LONG], 65,
         f"--status {cut(LONG)} is no run's status (one of completed, incomplete, error, "
         "interrupted, running, stopped, queued, or scenario_complete)"),
    ]:  # fmt: skip
        assert (analyze(*args), capsys.readouterr()) == (code, ("", f"glossogen: error: {line}\n"))
    board = deep_tmp / "board.yaml"
    board.write_text(BOARD.replace("name: done,", f"name: {LONG},"))
    assert analyze("--runs-dir", absent, "--dashboard", str(board), "--out",
                   str(deep_tmp / "o")) == 64  # fmt: skip
    assert capsys.readouterr() == ("", (
        f"glossogen: error: --dashboard {board}: charts.0.name {cut(LONG)}: String should "
        "match pattern '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'\n"
    ))  # fmt: skip


def test_compare_reads_a_text_arm_as_a_filter_reads_it(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--runs-dir", cohort.runs_dir, "--measure", "task_done", "--compare"]
    assert analyze(*args, "scenario_name=VEYRU,other") == 64  # VEYRU is the group veyru
    assert capsys.readouterr() == ("", (
        "glossogen: error: --compare 'scenario_name=VEYRU,other': no row has scenario_name "
        "'other' (it holds veyru)\n"
    ))  # fmt: skip
    assert analyze(*args, "scenario_name=VEYRU,veyru") == 64
    assert capsys.readouterr() == ("", (
        "glossogen: error: --compare 'scenario_name=VEYRU,veyru' names the arm 'veyru' twice\n"
    ))  # fmt: skip
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--filter",
                   "scenario_name=VEYRU", "--csv") == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[1] == "task_done:mean,0.6,5,0,5,0.2,1.0,bootstrap"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--list-fields", "--plot", "x.svg"],
         "--list-fields lists the grain's fields; it takes no --plot"),
        (["--list-fields", "--measure", "task_done"],
         "--list-fields lists the grain's fields; it takes no --measure"),
        (["--measure", "x", "--chart", "heatmap"], "--chart 'heatmap' needs two keys (--by K1,K2)"),
        (["--measure", "x", "--chart", "heatmap", "--plot", "x.svg"],
         "--chart 'heatmap' needs two keys (--by K1,K2)"),
        (["--measure", "x", "--chart", "line"], "--chart 'line' draws the --plot FILE: give --plot"),
        # A byte no UTF-8 decodes, in any flag (named as typed, \xff), and a seed over 64 bits:
        (["--measure", "x", "--filter", "a=\udcff"], "--filter 'a=\\xff': not UTF-8 text"),
        (["--measure", "x", "--compare", "a=\udcff,b"], "--compare 'a=\\xff,b': not UTF-8 text"),
        (["--measure", "\udcff"], "--measure '\\xff': not UTF-8 text"),
        (["--measure", "x", "--by", "\udcff"], "--by '\\xff': not UTF-8 text"),
        (["--measure", "x", "--seed", "18446744073709551615"],
         "--seed 18446744073709551615: must be at most 9007199254740991 (2**53 - 1, the "
         "largest whole number a JSON answer holds exactly)"),
        (["--measure", "x", "--seed", "-1"], "--seed -1: must be at least 0"),
    ],
)  # fmt: skip
def test_an_option_that_would_be_ignored_or_a_bad_byte_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    assert analyze("--runs-dir", str(tmp_path / "absent"), *args) == 64
    assert capsys.readouterr() == ("", f"glossogen: error: {line}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_refused_query_writes_no_cache(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    for grain in ("run", "round", "agent"):
        assert analyze("--runs-dir", str(runs), "--grain", grain, "--measure", "nope") == 64
        assert capsys.readouterr() == ("", (
            f"glossogen: error: --measure 'nope': no such field at the {grain} grain of this "
            "selection (list the grain's fields)\n"
        ))  # fmt: skip
        assert not (runs / ".glossogen").exists()
    assert analyze("--runs-dir", str(runs), "--measure", "task_done", "--csv") == 0
    capsys.readouterr()
    assert (runs / ".glossogen" / "analysis_projection.zip").is_file()


@pytest.mark.parametrize(
    ("data", "code", "reason"),
    [
        (b"queries: [\n", 64,
         "line 2, column 1: expected the node content, but found '<stream end>'"),
        (b"title: \xff\xfe\n", 64, "not UTF-8 text"),
    ],
)  # fmt: skip
def test_a_dashboard_that_does_not_parse_exits_64_utf8_or_not(
    deep_tmp: Path, capsys: pytest.CaptureFixture[str], data: bytes, code: int, reason: str
) -> None:
    board = deep_tmp / "board.yaml"
    board.write_bytes(data)
    assert analyze("--runs-dir", str(deep_tmp / "absent"), "--dashboard", str(board), "--out",
                   str(deep_tmp / "out")) == code  # fmt: skip
    assert capsys.readouterr() == ("", f"glossogen: error: --dashboard {board}: {reason}\n")
    assert sorted(p.name for p in deep_tmp.iterdir()) == ["board.yaml"]


def test_the_largest_seed_is_taken(cohort: Cohort, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", "--csv",
                   "--seed", "9007199254740991") == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[1].startswith("task_done:mean,0.6,5,0,5,")
