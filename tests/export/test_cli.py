"""``glossogen export``: flags, refusals before anything is written, S3 ``--out`` on moto."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import s3fs

from glossogen.cli import main
from tests.export.conftest import CUT, FORK, OLD, A, B, C, Cohort


def _export(*args: str) -> int:
    try:
        main(["export", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_default_tables_and_the_legend(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _export("--runs-dir", str(cohort.runs_dir), "--out", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "agent_level.csv",
        "columns.csv",
        "round_level.csv",
        "run_level.csv",
    ]
    assert capsys.readouterr().out.splitlines() == [
        f"exported 6 runs to {out}",
        "run_level.csv: 6 rows",
        "round_level.csv: 2 rows",
        "agent_level.csv: 12 rows",
        "columns.csv: the legend",
    ]
    assert [r["run_id"] for r in _rows(out / "run_level.csv")] == sorted([A, B, C, FORK, CUT, OLD])


def test_one_table_is_a_bare_csv_without_legend(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = _export(
        "--runs-dir", str(cohort.runs_dir), "--out", str(out),
        "--frames", "message_level", "--run-id", C, "--no-repeat-run-columns",
    )  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out.splitlines()[0] == f"exported 1 run to {out}"
    assert [p.name for p in out.iterdir()] == ["message_level.csv"]
    rows = _rows(out / "message_level.csv")
    assert len(rows) == 8
    assert list(rows[0])[-3:] == ["character_entropy_bits", "gzip_compression_ratio",
                                  "repetition_factor"]  # fmt: skip
    assert {r["channel_id"]: r["is_primary_channel"] for r in rows} == {
        "table": "true",
        "postmortem": "false",
    }


def test_the_spec_example_with_labels_and_frames(cohort: Cohort, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = _export(
        "--runs-dir", str(cohort.runs_dir), "--out", str(out),
        "--label", "baseline_oss", "--label", "budget=800", "--frames", "run_level,round_level",
    )  # fmt: skip
    assert code == 0
    assert [r["run_id"] for r in _rows(out / "run_level.csv")] == [A]
    # The contract's two label prefixes: budget=800 is label.budget 800, the bare tag
    # baseline_oss is label_flag.baseline_oss True, on the run's row and every round's.
    assert [
        (r["round_number"], r["metric.round_success"], r["label.budget"],
         r["label_flag.baseline_oss"]) for r in _rows(out / "round_level.csv")
    ] == [
        ("1", "0.0", "800", "True"),
        ("2", "1.0", "800", "True"),
    ]  # fmt: skip
    assert [(r["label.budget"], r["label_flag.baseline_oss"])
            for r in _rows(out / "run_level.csv")] == [("800", "True")]  # fmt: skip
    assert {r["table"] for r in _rows(out / "columns.csv")} == {"run_level", "round_level"}


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--run-id", A, "--scenario", "veyru"], 64,
         "--run-id cannot be combined with --scenario"),
        (["--run-id", A, "--label", "x", "--knob", "a=1", "--status", "completed"], 64,
         # the selection's fields' order, as REST's ``run_ids cannot be combined with labels,
         # status, knob`` (h50names; was --label, --knob, --status)
         "--run-id cannot be combined with --label, --status, --knob"),
        (["--run-id", ""], 64, "--run-id needs a run id (<scenario>/<run_dir_name>)"),
        (["--frames", ""], 64, "--frames: no table named (tables: run_level, round_level, "
         "agent_level, message_level, round_context, call_level)"),
        (["--frames", " , "], 64, "--frames: no table named (tables: run_level, round_level, "
         "agent_level, message_level, round_context, call_level)"),
        (["--knob", "round_count"], 64, "--knob 'round_count': no operator; write "
         "<knob><op><value> with op one of != >= <= = > <"),
        (["--knob", "round_count>=lots"], 65, "--knob 'round_count>=lots': knob 'round_count', "
         "operator '>=', value 'lots': the run records a number"),
        (["--knob", "postmortem_enabled=maybe"], 65, "--knob 'postmortem_enabled=maybe': knob "
         "'postmortem_enabled', operator '=', value 'maybe': the run records a boolean; "
         "write true or false"),
        (["--run-id", A, "--run-id", "veyru/42"], 66, "run ids that no longer resolve: veyru/42"),
        (["--max-runs", "3"], 65, "the selection holds 6 runs, over the 3-run limit; "
         "narrow the selection or raise it with --max-runs"),
        (["--frames", "run_level,everything"], 64, "--frames: unknown table 'everything' "
         "(tables: run_level, round_level, agent_level, message_level, round_context, call_level)"),
        (["--include-atif"], 64, "--include-logs and --include-atif apply to --raw"),
    ],
)  # fmt: skip
def test_refusals_name_the_problem_and_write_nothing(
    cohort: Cohort,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    out = tmp_path / "out"
    assert _export("--runs-dir", str(cohort.runs_dir), "--out", str(out), *args) == code
    assert capsys.readouterr().err == f"glossogen: error: {message}\n"
    assert not out.exists()


def test_raw_adds_the_run_folders_zip(cohort: Cohort, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = _export("--runs-dir", str(cohort.runs_dir), "--out", str(out), "--run-id", A,
                   "--frames", "run_level", "--raw")  # fmt: skip
    assert code == 0
    with zipfile.ZipFile(out / "runs.zip") as zf:
        names = set(zf.namelist())
    assert {"manifest.csv", f"{A}/veyru.jsonl", f"{A}/veyru_report.json"} <= names


def test_out_may_be_an_s3_url(cohort: Cohort, tmp_path: Path, s3_bucket: str) -> None:
    local = tmp_path / "local"
    args = ["--runs-dir", str(cohort.runs_dir), "--run-id", A, "--run-id", OLD]
    assert _export(*args, "--out", str(local)) == 0
    assert _export(*args, "--out", f"{s3_bucket}/nightly/2026-11-29") == 0
    fs = s3fs.S3FileSystem()
    prefix = f"{s3_bucket[5:]}/nightly/2026-11-29"
    fs.invalidate_cache()
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls(prefix)) == sorted(
        p.name for p in local.iterdir()
    )
    for name in ("run_level.csv", "columns.csv"):
        remote = list(csv.DictReader(io.StringIO(fs.cat_file(f"{prefix}/{name}").decode())))
        assert remote == _rows(local / name)


def test_the_export_process_never_imports_prefect(cohort: Cohort, tmp_path: Path) -> None:
    script = (
        "import sys\nfrom glossogen.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('prefect', 'atif', 's3fs') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "export", "--runs-dir", str(cohort.runs_dir),
         "--out", str(tmp_path / "o"), "--frames", "run_level,message_level"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines()[-1] == "[]"


def test_runs_dir_may_be_an_s3_url(cohort: Cohort, tmp_path: Path, s3_bucket: str) -> None:
    fs = s3fs.S3FileSystem()
    for run_id in (A, OLD):
        fs.put(str(cohort.folder(run_id)), f"{s3_bucket[5:]}/runs/{run_id}", recursive=True)
    fs.invalidate_cache()
    frames = ["--frames", "run_level,agent_level,message_level"]
    assert _export("--runs-dir", f"{s3_bucket}/runs", "--out", str(tmp_path / "s3"), *frames) == 0
    args = ["--runs-dir", str(cohort.runs_dir), "--run-id", A, "--run-id", OLD]
    assert _export(*args, "--out", str(tmp_path / "local"), *frames) == 0
    for name in ("run_level.csv", "agent_level.csv", "message_level.csv"):
        assert _rows(tmp_path / "s3" / name) == _rows(tmp_path / "local" / name)


def test_an_out_or_runs_dir_that_is_no_folder_is_refused_before_writing(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "notes.md"
    file.write_text("keep me\n")
    runs = str(cohort.runs_dir)
    cases = [
        (["--runs-dir", runs, "--out", str(file)], 64,
         f"--out {str(file)!r} is a file, not a folder"),
        (["--runs-dir", runs, "--out", str(file / "x")], 64,
         f"--out {str(file / 'x')!r}: {file} is a file, not a folder"),
        (["--runs-dir", runs, "--out", "/dev/null/x"], 64,
         "--out '/dev/null/x': /dev/null is not a folder"),
        (["--runs-dir", str(file), "--out", str(tmp_path / "o")], 66,
         f"--runs-dir {str(file)!r} is a file, not a folder"),
        (["--runs-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "o")], 66,
         f"--runs-dir {str(tmp_path / 'nope')!r} does not exist"),
    ]  # fmt: skip
    for args, code, message in cases:
        assert _export(*args) == code
        assert capsys.readouterr().err == f"glossogen: error: {message}\n"
    assert file.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def test_a_filter_matching_nothing_writes_header_only_tables(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["--runs-dir", str(cohort.runs_dir), "--out", str(out)]
    assert _export(*args, "--run-id-contains", "zz", "--frames", "run_level,message_level") == 0
    captured = capsys.readouterr()
    assert captured.err == "glossogen: note: 0 runs matched\n"
    assert captured.out.splitlines()[:3] == [
        f"exported 0 runs to {out}",
        "run_level.csv: 0 rows",
        "message_level.csv: 0 rows",
    ]
    lines = (out / "run_level.csv").read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("run_id,scenario_name,status,status_detail,")
    assert (out / "message_level.csv").read_text().startswith("run_id,scenario_name,round_number,")
    assert _export(*args, "--knob", "no_knob_anywhere=1") == 0  # an undeclared knob: no error
    assert capsys.readouterr().err == "glossogen: note: 0 runs matched\n"


def test_a_scenario_no_run_has_is_refused_65_before_anything_is_written(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["--runs-dir", str(cohort.runs_dir), "--out", str(out)]
    assert _export(*args, "--scenario", "nosuch") == 65
    assert capsys.readouterr().err == (
        f"glossogen: error: --scenario 'nosuch' has no run under {cohort.runs_dir} (scenarios "
        "there: prisoners_dilemma, veyru)\n"
    )
    assert not out.exists()


def test_help_shows_full_flag_names_at_80_columns() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "export", "--help"],
        capture_output=True, text=True, check=True, env={"COLUMNS": "80", "PATH": ""},
    )  # fmt: skip
    flags = ["--out DIR", "--runs-dir DIR", "--scenario NAME", "--label LABEL",
             "--run-id-contains SUB", "--contains-agent-id ID", "--knob COND",
             "--status STATE", "--run-id ID", "--frames TABLES", "--include-metric-summaries",
             "--repeat-run-columns / --no-repeat-run-columns", "--raw", "--include-logs",
             "--include-atif", "--max-runs N"]  # fmt: skip
    for flag in flags:
        assert f"  {flag}" in done.stdout, flag
    # The rule is a bound: help laid out for an 80-column terminal never runs past it.
    assert max(len(line) for line in done.stdout.splitlines()) <= 80


def test_one_run_and_one_row_are_said_in_the_singular(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["--runs-dir", str(cohort.runs_dir), "--out", str(out), "--run-id", C]
    assert _export(*args, "--frames", "run_level") == 0
    assert capsys.readouterr().out.splitlines() == [
        f"exported 1 run to {out}",
        "run_level.csv: 1 row",
    ]
