"""``glossogen evaluate`` as a new user meets it: folders stored anywhere, bad flag values named,
skipped log lines and dropped entries said, the run's status in the report, exit codes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from flows.evaluate import evaluate
from glossogen.cli import main
from glossogen.evaluation import (
    MetricContext,
    Scored,
    check_request,
    metric,
    plan_evaluation,
    scenario_of,
    score_all,
    write_outcomes,
)
from tests.evaluation._logs import CASE_05, RunLog

FO, SE = "field_observer", "stabilization_engineer"


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as done:
        main(["evaluate", *args])
    return int(done.value.code)


def _fresh_copy(tmp_path: Path) -> Path:
    """The GlossoGen 0.5 run folder copied to ``<tmp>/x/run-fresh`` (not ``<scenario>/<ts>``)."""
    target = tmp_path / "x" / "run-fresh"
    shutil.copytree(CASE_05, target)
    return target


# 1. a run folder stored anywhere


def test_a_folder_stored_anywhere_evaluates_by_absolute_and_relative_path(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    folder = _fresh_copy(tmp_path)
    assert _cli("veyru", "--run-dir", str(folder), "--metrics", "round_success") == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"report: {folder}/veyru_report.json · evaluation cost $0.000000"
    )
    monkeypatch.chdir(folder)
    assert _cli("veyru", "--run-dir", ".", "--metrics", "mean_chars_per_round") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"report: {folder}/veyru_report.json · evaluation cost $0.000000"
    report = json.loads((folder / "veyru_report.json").read_text())
    assert (report["run_id"], report["scenario"]) == ("veyru/1795939736", "veyru")
    assert {n: m["score"] for n, m in report["metrics"].items()} == {
        "mean_chars_per_round": 91.2,  # 456 characters over 5 rounds
        "round_success": 1.0,
    }
    monkeypatch.chdir(tmp_path / "x")
    assert _cli("veyru", "--run-dir", "run-fresh", "--metrics", "messages_per_round") == 0
    assert (
        json.loads((folder / "veyru_report.json").read_text())["metrics"]["messages_per_round"][
            "score"
        ]
        == 3.6
    )  # 18 messages over 5 rounds


def test_the_flow_takes_the_scenario_or_finds_it_from_the_folders_log(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _fresh_copy(tmp_path)
    named = asyncio.run(evaluate(str(folder), check_request("round_success"), scenario="veyru"))
    assert (named.report.scenario, named.report.metrics["round_success"].score) == ("veyru", 1.0)
    monkeypatch.chdir(folder.parent)
    found = asyncio.run(
        evaluate("run-fresh", check_request("mean_chars_per_message"))
    )  # no scenario given
    assert found.report.scenario == "veyru"
    # 456 characters over 18 messages
    assert found.report.metrics["mean_chars_per_message"].score == pytest.approx(456 / 18)
    assert sorted(found.report.metrics) == ["mean_chars_per_message", "round_success"]


def test_the_scenario_is_the_logs_name_else_the_parent_folders(tmp_path: Path) -> None:
    folder = _fresh_copy(tmp_path)
    assert scenario_of(str(folder)) == "veyru"
    assert plan_evaluation(str(folder), "round_success").run.run_dir == str(folder)
    bare = tmp_path / "prisoners_dilemma" / "17"
    bare.mkdir(parents=True)
    (bare / "notes.jsonl").write_text("")
    assert scenario_of(str(bare)) == "prisoners_dilemma"


# 2 and 3. a bad flag value is named, with its value; always 64


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--judge-settings", "temperature=banana"],
         "--judge-settings temperature='banana': not a number"),
        (["--judge-settings", "temperature=9"], "--judge-settings temperature='9': must be at most 2.0"),
        (["--judge-settings", "max_tokens=0"], "--judge-settings max_tokens='0': must be at least 1"),
        (["--judge-settings", "seed=1.5"], "--judge-settings seed='1.5': not an integer"),
        (["--judge-settings", "nosuch=1"],
         "--judge-settings nosuch='1': unknown setting (known: max_tokens, temperature, top_p, "
         "seed, thinking, parallel_tool_calls, timeout, cache)"),
        (["--judge-settings", "temperature"], "--judge-settings 'temperature': not key=value"),
        (["--judge-replicas", "0"], "--judge-replicas 0: must be at least 1"),
        (["--probe-replicas", "-1"], "--probe-replicas -1: must be at least 1"),
    ],
)  # fmt: skip
def test_a_bad_flag_value_is_named_with_its_value_and_exits_64(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _fresh_copy(tmp_path)
    code = _cli("veyru", "--run-dir", str(folder), "--model", "m", "--provider", "openai", *flags)
    assert code == 64
    assert capsys.readouterr().err == f"glossogen: error: {message}\n"
    assert not (folder / "veyru_report.json").exists()


# 4. skipped log lines


def test_skipped_log_lines_are_counted_in_the_report_and_noted(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abcd").say(1, SE, "ab").verdict(1, True)
    run_dir = log.end().write()
    path = run_dir / "veyru.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    damaged = [
        *lines[:3],
        "not json at all\n",
        '{"event_type": "veyru_case_started", "round_number": 1}\n',
        *lines[3:],
        "[1, 2]\n",
        '{"event_type": "message_sent", "round_num',  # cut mid-write
    ]
    path.write_text("".join(damaged))
    assert _cli("veyru", "--run-dir", str(run_dir), "--metrics", "mean_chars_per_message") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].split("\t")[:2] == ["mean_chars_per_message", "3"]
    assert captured.err == (
        "glossogen: note: skipped log lines: 2 invalid, 1 of unknown event types, a truncated "
        "last line; the metrics describe the rest (report: log_lines_skipped)\n"
    )
    report = json.loads((run_dir / "veyru_report.json").read_text())
    assert report["log_lines_skipped"] == {"invalid": 2, "unknown": 1, "truncated_tail": True}
    assert report["metrics"]["mean_chars_per_message"]["score"] == 3.0  # (4 + 2) / 2


def test_a_clean_log_reports_no_skipped_lines(tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abcd").verdict(1, True)
    plan = plan_evaluation(str(log.end().write()), "round_success")
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    assert report.model_dump()["log_lines_skipped"] == {
        "invalid": 0,
        "unknown": 0,
        "truncated_tail": False,
    }


def test_nan_and_infinity_as_values_are_skipped_lines_and_as_words_are_text(
    tmp_path: Path,
) -> None:
    # A line of a type the metrics read holding NaN or Infinity as a value is the reader's:
    # invalid, as JSON has no such numbers. The words in a message's text are just text.
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "NaN Infinity").llm(1, FO, 0.25).llm(1, SE, 0.5).verdict(1, True)
    run_dir = log.complete(1).end().write()
    path = run_dir / "veyru.jsonl"
    text = path.read_text()
    assert text.count('"cost_usd":0.5,') == 1
    path.write_text(text.replace('"cost_usd":0.5,', '"cost_usd":NaN,'))
    plan = plan_evaluation(str(run_dir), "mean_chars_per_message,cost_per_round_usd")
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    assert report.model_dump()["log_lines_skipped"] == {
        "invalid": 1,
        "unknown": 0,
        "truncated_tail": False,
    }
    assert report.metrics["mean_chars_per_message"].score == 12.0
    assert report.metrics["cost_per_round_usd"].score == 0.25


# 5. entries dropped because the log changed


def test_entries_of_a_changed_log_are_dropped_and_named(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abcd").verdict(1, True)
    run_dir = log.end().write()
    path = run_dir / "veyru.jsonl"
    code = _cli("veyru", "--run-dir", str(run_dir), "--metrics",
                "round_success,messages_per_round,mean_chars_per_message")  # fmt: skip
    assert code == 0
    old_sha = hashlib.sha256(path.read_bytes()).hexdigest()
    capsys.readouterr()
    # the run was played on (resumed): the log now holds a second round
    longer = RunLog(tmp_path)
    longer.round(1).say(1, FO, "abcd").verdict(1, True)
    longer.round(2).say(2, SE, "ab").verdict(2, False)
    path.unlink()
    longer.end().write()
    new_sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert _cli("veyru", "--run-dir", str(run_dir), "--metrics", "mean_chars_per_message") == 0
    assert capsys.readouterr().err == (
        "glossogen: note: dropped the report's entries for messages_per_round, round_success: "
        f"the log changed since they were scored (sha256 {old_sha[:12]}, now {new_sha[:12]}); "
        "evaluate them again to restore them\n"
    )
    report = json.loads((run_dir / "veyru_report.json").read_text())
    assert report["log_sha256"] == new_sha
    assert {n: m["score"] for n, m in report["metrics"].items()} == {"mean_chars_per_message": 3.0}


# 6. the run's status


@pytest.mark.parametrize("status", ["completed", "interrupted", "error"])
def test_the_report_carries_the_runs_status(status: str, tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abcd").verdict(1, True).complete(1)
    plan = plan_evaluation(str(log.end(status).write()), "round_success")
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    saved = json.loads((log.run_dir / "veyru_report.json").read_text())
    assert (report.run_status, saved["run_status"]) == (status, status)


def test_an_incomplete_run_has_a_null_status_and_a_note(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = RunLog(tmp_path)
    log.round(1).say(1, FO, "abcd").verdict(1, True).complete(1)
    run_dir = log.write()
    code = _cli("veyru", "--run-dir", str(run_dir), "--metrics", "round_success",
                "--allow-incomplete")  # fmt: skip
    assert code == 0
    assert capsys.readouterr().err == (
        "glossogen: note: run status: no simulation_ended (report: run_status)\n"
    )
    report = json.loads((run_dir / "veyru_report.json").read_text())
    assert report["run_status"] is None
    assert report["metrics"]["round_success"]["score"] == 1.0


# 7. a log that is not a run log is unreadable input


def test_an_empty_or_garbage_log_exits_66(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "veyru" / "1"
    run_dir.mkdir(parents=True)
    log = run_dir / "veyru.jsonl"
    log.write_text("")
    assert _cli("veyru", "--run-dir", str(run_dir)) == 66
    # The export's words, the file within the runs directory the folder sits in, as MCP's
    # evaluate_run and the listings say it (was: <abs path> is empty: not a run log).
    said = "glossogen: error: veyru/1/veyru.jsonl is not a run log"
    assert capsys.readouterr().err == f"{said} (empty)\n"
    log.write_text("garbage\n{not json\n")
    assert _cli("veyru", "--run-dir", str(run_dir)) == 66
    assert capsys.readouterr().err == f"{said} (no simulation_started event)\n"
    assert sorted(p.name for p in run_dir.iterdir()) == ["veyru.jsonl"]


# 8. --plot names both files; Ctrl-C says what was written


def test_plot_prints_the_report_and_the_page(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _fresh_copy(tmp_path)
    assert _cli("veyru", "--run-dir", str(folder), "--metrics", "round_success", "--plot") == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"report: {folder}/veyru_report.json · evaluation cost $0.000000",
        f"plot: {folder}/report.html",
    ]
    assert (folder / "report.html").exists()


async def _ctrl_c(ctx: MetricContext) -> Scored:
    """Stands for the user pressing Ctrl-C while a metric is scored."""
    raise KeyboardInterrupt


def test_ctrl_c_before_the_report_is_written_says_it_is_unchanged(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from glossogen.evaluation import _registry

    monkeypatch.setitem(_registry._registry, "ctrl_c", None)  # unregistered after the test
    metric("ctrl_c", unit="x")(_ctrl_c)
    folder = _fresh_copy(tmp_path)
    assert _cli("veyru", "--run-dir", str(folder), "--metrics", "round_success") == 0
    before = (folder / "veyru_report.json").read_bytes()
    capsys.readouterr()
    assert (
        _cli("veyru", "--run-dir", str(folder), "--metrics", "mean_chars_per_round,ctrl_c") == 130
    )
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"glossogen: error: interrupted before the report was written: "
        f"{folder}/veyru_report.json is unchanged"
    )
    assert (folder / "veyru_report.json").read_bytes() == before
    shutil.rmtree(folder)
    shutil.copytree(CASE_05, folder)
    assert _cli("veyru", "--run-dir", str(folder), "--metrics", "ctrl_c") == 130
    assert not (folder / "veyru_report.json").exists()


# a huggingface judge goes through build_model, so it takes an llm:huggingface slot


def test_a_huggingface_judge_is_gated_by_its_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from glossogen.concurrency import GatedModel
    from glossogen.evaluation._judge import build_judge_model

    monkeypatch.setenv("HF_TOKEN", "hf-test")
    model = build_judge_model("huggingface", "Qwen/Qwen3-8B")
    assert isinstance(model, GatedModel)
    assert (model.gate_provider, model.model_name) == ("huggingface", "Qwen/Qwen3-8B")
