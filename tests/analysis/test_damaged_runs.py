"""A run whose side file is damaged is named in a note on every surface, never silently dropped;
a cache that cannot be written is noted; a bad seed is one line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.mcp.conftest import call, in_process_session, refusal


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("analysis-damaged-runs")))


DAMAGES = [
    ("veyru_report.json", b"{not json",
     "veyru_report.json is not valid JSON (Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1))"),
    ("labels.json", b"\xff\xfe{bad",  # README's words (was: not valid JSON (Expecting value ...))
     "labels.json is not UTF-8 text (byte 0xff at offset 0)"),
    ("config.json", b"\xff\xfe", "config.json is not UTF-8 text (byte 0xff at offset 0)"),
    ("labels.json", b'{"bad": "a\xffb"}',  # was: not valid JSON ('utf-8' codec can't decode ...)
     "labels.json is not UTF-8 text (byte 0xff at offset 10)"),
    ("veyru.jsonl", b"", "veyru.jsonl is not a run log (empty)"),
    ("veyru_report.json", b"{}", "veyru_report.json is an empty JSON object (no metrics)"),
    ("labels.json", b'{"bad": "a\\udcffb"}',
     "labels.json is not UTF-8 text (it escapes the lone surrogate \\udcff)"),
    ("config.json", b'{"k": "\\udcff"}',
     "config.json is not UTF-8 text (it escapes the lone surrogate \\udcff)"),
]  # fmt: skip


def _pair(cohort: Cohort, root: Path, name: str, data: bytes) -> tuple[str, str, str]:
    """Two of the cohort's runs copied under ``root``, the first's ``name`` holding ``data``."""
    damaged, kept = cohort.ids["r1"], cohort.ids["r2"]
    for run_id in (damaged, kept):
        shutil.copytree(Path(cohort.runs_dir, run_id), root / run_id)
    (root / damaged / name).write_bytes(data)
    return str(root), damaged, kept


@pytest.mark.parametrize(("name", "data", "reason"), DAMAGES)
def test_a_damaged_run_is_named_in_a_note(
    cohort: Cohort,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    data: bytes,
    reason: str,
) -> None:
    runs_dir, damaged, kept = _pair(cohort, tmp_path, name, data)
    args = ["--runs-dir", runs_dir, "--measure", "total_chars:count", "--by", "run_id"]
    assert analyze(*args) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "run grain: 1 rows of 1 runs"
    assert err == f"glossogen: note: skipped {damaged}: {damaged}/{reason}\n"
    result = analyze_json(capsys, *args)
    assert result["notes"] == [f"skipped {damaged}: {damaged}/{reason}"]
    assert result["run_ids"] == [kept]
    listed = analyze_json(capsys, "--runs-dir", runs_dir, "--list-fields")
    assert listed["notes"] == [f"skipped {damaged}: {damaged}/{reason}"]


def test_a_damaged_run_is_named_by_mcp(cohort: Cohort, tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    runs_dir, damaged, _ = _pair(cohort, tmp_path / "runs", "labels.json", b"\xff\xfe{bad")
    note = f"skipped {damaged}: {damaged}/labels.json is not UTF-8 text (byte 0xff at offset 0)"

    async def flow() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with in_process_session(Path(runs_dir), tmp_path / "home") as session:
            got = await call(session, "analyze_runs", measures=["total_chars:count"])
            listed = await call(session, "list_analysis_fields")
            bad_seed = await refusal(session, "analyze_runs", measures=["total_chars"], seed=-1)
            return got, listed, bad_seed

    got, listed, bad_seed = asyncio.run(flow())
    assert got["notes"] == [note]
    assert listed["notes"] == [note]
    assert bad_seed == "seed -1: must be at least 0"  # as --limit 0 is said


def test_mcp_lists_around_and_reads_from_its_log_a_run_whose_labels_are_not_utf8_text(
    cohort: Cohort, tmp_path: Path
) -> None:
    """A labels.json escaping a lone surrogate was a bare ``Error executing tool`` from
    list_runs and get_run; now list_runs skips the run and get_run reads it from its log, as
    the run page does, naming the file within the served runs directory in ``warnings`` (was:
    a refusal in that line, issue 32)."""
    (tmp_path / "home").mkdir()
    runs_dir, damaged, kept = _pair(
        cohort, tmp_path / "runs", "labels.json", b'{"bad": "a\\udcffb"}'
    )

    async def flow() -> tuple[dict[str, Any], dict[str, Any]]:
        async with in_process_session(Path(runs_dir), tmp_path / "home") as session:
            listed = await call(session, "list_runs")
            return listed, await call(session, "get_run", run_id=damaged)

    listed, got = asyncio.run(flow())
    assert [row["run_id"] for row in listed["runs"]] == [kept]
    assert (got["run_id"], got["status"], got["labels"], got["warnings"]) == (
        damaged, "completed", {},
        [f"{damaged}/labels.json is not UTF-8 text (it escapes the lone surrogate \\udcff)"],
    )  # fmt: skip


def test_mcp_export_runs_names_the_runs_it_skipped(cohort: Cohort, tmp_path: Path) -> None:
    """export_runs was silent about a skipped run the CLI's note and REST's preview name."""
    (tmp_path / "home").mkdir()
    runs_dir, damaged, _ = _pair(cohort, tmp_path / "runs", "veyru_report.json", b"{}")

    async def flow() -> dict[str, Any]:
        async with in_process_session(Path(runs_dir), tmp_path / "home") as session:
            return await call(session, "export_runs", out=str(tmp_path / "out"))

    done = asyncio.run(flow())
    assert done["runs"] == 1
    assert done["unreadable_runs"] == {
        damaged: f"{damaged}/veyru_report.json is an empty JSON object (no metrics)"
    }


def test_mcp_get_run_names_labels_that_are_not_json_in_one_warning(
    cohort: Cohort, tmp_path: Path
) -> None:
    """Was ``Error executing tool get_run`` and a traceback on the server's stderr, then a
    refusal in this line; now the run from its log and the line in ``warnings`` (issue 32)."""
    (tmp_path / "home").mkdir()
    runs_dir, damaged, _ = _pair(cohort, tmp_path / "runs", "labels.json", b"{bad")

    async def flow() -> dict[str, Any]:
        async with in_process_session(Path(runs_dir), tmp_path / "home") as session:
            return await call(session, "get_run", run_id=damaged)

    got = asyncio.run(flow())
    assert (got["status"], got["labels"], got["warnings"]) == ("completed", {}, [
        f"{damaged}/labels.json is not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1))"
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("make", "why"),
    [
        ("folder", "Is a directory"),
        ("file", ".glossogen is a file"),
    ],
)
def test_a_cache_that_cannot_be_written_is_noted(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str, why: str
) -> None:
    runs_dir, _, _ = _pair(cohort, tmp_path, "labels.json", b"{}")
    if make == "folder":
        (tmp_path / ".glossogen" / "analysis_projection.zip").mkdir(parents=True)
    else:
        (tmp_path / ".glossogen").write_text("")
    assert analyze("--runs-dir", runs_dir, "--measure", "total_chars:count") == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "run grain: 2 rows of 2 runs"
    assert err == (
        "glossogen: note: answered without the cache: .glossogen/analysis_projection.zip "
        f"cannot be written ({why})\n"
    )


def test_a_negative_seed_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze("--runs-dir", str(tmp_path), "--measure", "x", "--seed", "-1") == 64
    assert capsys.readouterr().err == ("glossogen: error: --seed -1: must be at least 0\n")


@pytest.mark.parametrize("where", [[], ["--filter", "round_number>9"]])
def test_a_heatmap_with_a_blank_cell_or_no_group_is_drawn(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: list[str]
) -> None:
    path = tmp_path / "heat.png"
    code = analyze("--runs-dir", cohort.runs_dir, "--grain", "round", "--by",
                   "round_budget_chars,channel_noise_level", "--measure", "round_success:rate",
                   "--resamples", "10", "--chart", "heatmap", "--plot", str(path), *where)  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    head = "0 rows of 0 runs (5 selected)" if where else "10 rows of 5 runs"
    assert out.splitlines()[0] == f"round grain: {head}"


LOOSE = [
    (["--measure", "x", "--chart", "pie"], 64,
     "--chart 'pie' is not one of bar, line, scatter, heatmap"),
    (["--measure", "x", "--by", ","], 64, "--by ',': a key is empty (K1[,K2])"),
    (["--measure", "x", "--by", "a,"], 64, "--by 'a,': a key is empty (K1[,K2])"),
    (["--measure", "total_chars", "--filter", "total_chars>=nan"], 64,
     "--filter 'total_chars>=nan': total_chars is a number, 'nan' is not"),
    (["--grain", "observation", "--metric", "nope", "--measure", "value"], 64,
     "--metric 'nope': no report of this selection has this metric (they have "
     "mean_chars_per_round, round_success, task_done, team_split)"),
]  # fmt: skip

WORDED = [
    (["--measure", "task_done", "--compare", "channel_noise_level=0,0.0"], 64,
     "--compare 'channel_noise_level=0,0.0' names the arm '0.0' twice"),
    (["--measure", "x", "--out", "dash"], 64,
     "--out DIR goes with --dashboard FILE (a dashboard's report folder)"),
    (["--measure", "x", "--knob", "channel_noise_level>abc"], 65,
     "--knob 'channel_noise_level>abc': knob 'channel_noise_level', operator '>', value 'abc': "
     "the run records a number"),
    (["--measure", "x", "--knob", "garbage"], 64,
     "--knob 'garbage': no operator; write <knob><op><value> with op one of != >= <= = > <"),
    (["--measure", "x", "--max-runs", "3"], 65,
     "the selection holds 5 runs, over the 3-run limit; narrow the selection or raise it with "
     "--max-runs"),
    (["--measure", "\udcff\udcfe"], 64, "--measure '\\xff\\xfe': not UTF-8 text"),
    (["--measure", "y" * 100_000], 64,
     f"--measure {'y' * 80!r}...: no such field at the run grain of this selection (list the "
     "grain's fields)"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "line"), [*LOOSE, *WORDED])
def test_loose_input_is_refused(
    cohort: Cohort, capsys: pytest.CaptureFixture[str], args: list[str], code: int, line: str
) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, *args) == code
    assert capsys.readouterr().err == f"glossogen: error: {line}\n"


def test_an_empty_runs_dir_is_not_the_working_directory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert analyze("--runs-dir", "", "--measure", "x") == 66
    assert capsys.readouterr().err == "glossogen: error: --runs-dir '' names no folder\n"


def test_compare_arms_are_read_as_filters_read_values(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    result = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--measure", "task_done",
                          "--compare", "channel_noise_level=0,0.10", "--resamples", "10")  # fmt: skip
    (comparison,) = result["comparisons"]
    assert (comparison["a"], comparison["b"], comparison["n_a"], comparison["n_b"]) == (
        "0.0",
        "0.1",
        2,
        2,
    )


def test_a_report_older_than_its_changed_log_is_noted(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    runs_dir, changed, _ = _pair(cohort, tmp_path, "labels.json", b"{}")
    log = tmp_path / changed / "veyru.jsonl"
    report = tmp_path / changed / "veyru_report.json"
    scored = json.loads(report.read_text())
    scored["log_sha256"] = hashlib.sha256(log.read_bytes()).hexdigest()  # as evaluate writes
    report.write_text(json.dumps(scored))
    log.write_bytes(log.read_bytes() + b"\n")
    stamp = report.stat().st_mtime_ns
    os.utime(log, ns=(stamp + 10**9, stamp + 10**9))
    assert analyze("--runs-dir", runs_dir, "--measure", "total_chars:count") == 0
    assert capsys.readouterr().err == (
        f"glossogen: note: the log of {changed} changed after its report was written: its "
        "metrics are of the earlier log (glossogen evaluate scores it again)\n"
    )
    # h45fix33b: REST answered the same query with "notes": [] (its selection left it out).
    import httpx

    from tests.server.serving import serving_here

    cli = analyze_json(capsys, "--runs-dir", runs_dir, "--measure", "total_chars:count")
    with serving_here(runs_dir) as base:
        got = httpx.post(f"{base}/api/g/local/runs/analysis/query", timeout=None,
                         json={"measures": [{"field": "total_chars", "agg": "count"}]})  # fmt: skip
    assert got.status_code == 200, got.text
    assert (
        got.json()["notes"]
        == cli["notes"]
        == [
            f"the log of {changed} changed after its report was written: its metrics are of the "
            "earlier log (glossogen evaluate scores it again)"
        ]
    )


def test_the_header_counts_the_runs_the_filtered_rows_come_from(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--runs-dir", cohort.runs_dir, "--measure", "total_chars:count",
            "--filter", "channel_noise_level=0"]  # fmt: skip
    assert analyze(*args) == 0
    assert capsys.readouterr().out.splitlines()[0] == "run grain: 2 rows of 2 runs (5 selected)"
    result = analyze_json(capsys, *args)
    assert (result["runs"], result["runs_after_filters"], result["rows"]) == (5, 2, 2)


def test_damaged_log_lines_are_a_note(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs_dir, damaged, _ = _pair(cohort, tmp_path, "labels.json", b"{}")
    log = tmp_path / damaged / "veyru.jsonl"
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join([*lines[:3], b"{garbage", *lines[3:]]))
    for grain in ("message", "call"):  # each grain that reads the whole log names the line
        args = ["--runs-dir", runs_dir, "--grain", grain, "--measure", "run_id:count"]
        assert analyze(*args) == 0
        # As the export: the line as the run was selected, then as the grain's table read it.
        selected = f"{damaged}: 1 damaged log line skipped (line 4) in {damaged}/veyru.jsonl"
        note = (f"{damaged}: {grain}_level: 1 damaged log line skipped (line 4) in "
                f"{damaged}/veyru.jsonl")  # fmt: skip
        assert capsys.readouterr().err == (
            f"glossogen: note: {selected}\nglossogen: note: {note}\n"
        )
        assert analyze_json(capsys, *args)["notes"] == [selected, note]


def test_a_truncated_last_line_is_named_at_every_grain_as_the_export_names_it(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs_dir, damaged, _ = _pair(cohort, tmp_path, "labels.json", b"{}")
    log = tmp_path / damaged / "veyru.jsonl"
    whole = log.read_bytes()
    last = whole.count(b"\n") + 1
    log.write_bytes(whole + b'{"event_type": "agent_ou')  # cut off mid-write
    named = (f"{damaged}: 1 damaged log line skipped (line {last} truncated) in "
             f"{damaged}/veyru.jsonl")  # fmt: skip
    for grain in ("run", "run", "round", "agent", "message", "call"):  # run twice: cached too
        args = ["--runs-dir", runs_dir, "--grain", grain, "--measure", "run_id:count"]
        assert analyze(*args) == 0
        assert capsys.readouterr().err.splitlines()[0] == f"glossogen: note: {named}"
        assert analyze_json(capsys, *args)["notes"][0] == named
    # The export's CLI, in the same process:
    with pytest.raises(SystemExit) as exported:
        main(["export", "--runs-dir", runs_dir, "--out", str(tmp_path / "out"), "--frames",
              "run_level"])  # fmt: skip
    assert exported.value.code == 0
    assert capsys.readouterr().err == (  # the export names it with the log's whole path
        f"glossogen: note: {damaged}: 1 damaged log line skipped (line {last} truncated) in "
        f"{runs_dir}/{damaged}/veyru.jsonl\n"
    )


def test_an_export_before_in_the_same_process_adds_no_line_to_an_analysis(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The export's CLI prints the library's notes only while it runs (an MCP or REST server
    exports and analyses in one process; so does this test session)."""
    runs_dir, damaged, _ = _pair(cohort, tmp_path, "labels.json", b"{}")
    log = tmp_path / damaged / "veyru.jsonl"
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join([*lines[:3], b"{garbage", *lines[3:]]))
    with pytest.raises(SystemExit) as exported:
        main(["export", "--runs-dir", runs_dir, "--out", str(tmp_path / "out"), "--frames",
              "message_level"])  # fmt: skip
    assert exported.value.code == 0
    capsys.readouterr()
    assert analyze("--runs-dir", runs_dir, "--grain", "message", "--measure", "run_id:count") == 0
    selected = f"{damaged}: 1 damaged log line skipped (line 4) in {damaged}/veyru.jsonl"
    note = f"{damaged}: message_level: 1 damaged log line skipped (line 4) in {damaged}/veyru.jsonl"
    assert capsys.readouterr().err == f"glossogen: note: {selected}\nglossogen: note: {note}\n"


@pytest.mark.parametrize(
    ("flag", "value", "typed"),
    [("--run-id", "\udcff", "'\\xff'"), ("--scenario", "\udcff", "'\\xff'"),
     ("--label", "a\udcff", "'a\\xff'"), ("--run-id-contains", "\udcff", "'\\xff'"),
     ("--status", "\udcff", "'\\xff'"), ("--contains-agent-id", "\udcff", "'\\xff'"),
     ("--knob", "round_count=\udcff", "'round_count=\\xff'")],
)  # fmt: skip
def test_a_selection_value_that_is_not_utf8_is_one_line_in_analyze_and_export(
    cohort: Cohort,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    value: str,
    typed: str,
) -> None:
    """A byte that is not UTF-8 on the command line (a surrogate) is refused by the shared
    selection, naming the flag and the bytes as typed (``\\xff``), before any run is read
    (was a pydantic traceback)."""
    line = f"glossogen: error: {flag} {typed}: not UTF-8 text\n"
    assert analyze("--runs-dir", cohort.runs_dir, flag, value, "--measure", "total_chars") == 64
    assert capsys.readouterr().err == line
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exported:
        main(["export", "--runs-dir", cohort.runs_dir, flag, value, "--out", str(out)])
    assert (exported.value.code, capsys.readouterr().err) == (64, line)
    assert not out.exists()
