"""Evaluating a run or a cohort through the CLI and MCP (REST has none): the same scores and
the same refusals, each surface naming the value its own way (the CLI's flag, the tool's
argument); a run whose ``labels.json`` is not UTF-8 named alike by every surface."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from glossogen.cli import main
from glossogen.server import create_app
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import (
    STATUS,
    Answer,
    _cli,
    _mcp,
    cohort_through,
    with_played_source,
)

JUDGE_REFUSALS = [
    (
        ["--metrics", "language_repetition"],
        {"metrics": ["language_repetition"]},
        "language_repetition needs a judge: pass {model} and {provider}",
    ),
    (
        ["--model", "m"],
        {"judge_model": "m"},
        "{model} and {provider} go together (the judge)",
    ),
    (["--judge-replicas", "0"], {"judge_replicas": 0}, "{judge_replicas} 0: must be at least 1"),
    (["--probe-replicas", "0"], {"probe_replicas": 0}, "{probe_replicas} 0: must be at least 1"),
    (
        ["--judge-settings", "tempxx=1", "--model", "m", "--provider", "openai"],
        {"judge_settings": ["tempxx=1"], "judge_model": "m", "judge_provider": "openai"},
        "{judge_settings} tempxx='1': unknown setting (known: max_tokens, temperature, top_p, "
        "seed, thinking, parallel_tool_calls, timeout, cache)",
    ),
]
EVALUATE_FIELDS = ("judge_replicas", "probe_replicas", "judge_settings")
NAMES = {
    "cli": {"model": "--model", "provider": "--provider"}
    | {f: f"--{f.replace('_', '-')}" for f in EVALUATE_FIELDS},
    "mcp": {"model": "judge_model", "provider": "judge_provider"} | {f: f for f in EVALUATE_FIELDS},
}
"""How each surface names the judge and its settings: the CLI's flags, ``evaluate_run``'s
arguments."""


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize(
    ("flags", "arguments", "line"),
    JUDGE_REFUSALS,
    ids=["no-judge", "half", "judge-replicas", "probe-replicas", "judge-settings"],
)
def test_an_evaluation_without_its_judge_is_one_refusal_each_surface_words_its_way(
    surface: str,
    flags: list[str],
    arguments: dict[str, Any],
    line: str,
    played_source: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = tmp_path / "runs"
    with_played_source(runs, played_source)
    run_dir, run_id = runs / "veyru" / played_source.name, f"veyru/{played_source.name}"
    if surface == "cli":
        answer = _cli(capsys, "evaluate", "veyru", "--run-dir", str(run_dir), *flags)
        expected = Answer(True, line.format(**NAMES["cli"]), 64)
    else:
        answer = _mcp(str(runs), "evaluate_run", run_id=run_id, **arguments)[0]
        expected = Answer(True, line.format(**NAMES["mcp"]), "tool error")
    assert answer == expected
    assert not (run_dir / "veyru_report.json").exists()


def _scored(folder: RunFolder) -> dict[str, Any]:
    report = json.loads((Path(folder.url) / "veyru_report.json").read_text())
    entry = report["metrics"]["round_success"]
    return {k: entry[k] for k in ("status", "score", "rounds")}


def test_evaluating_a_run_scores_the_same_through_the_cli_and_mcp(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs played alike (one seed, one clock): each scored through one surface."""
    by_cli = play_run(str(tmp_path / "a"), "veyru", rounds=2, now_unix=1_790_000_000)
    by_mcp = play_run(str(tmp_path / "b"), "veyru", rounds=2, now_unix=1_790_000_000)
    cli = _cli(capsys, "evaluate", "veyru", "--run-dir", by_cli.url, "--metrics", "round_success")
    assert (cli.refused, cli.status) == (False, 0)
    answer, result = _mcp(
        str(tmp_path / "b"), "evaluate_run", run_id=by_mcp.run_id, metrics=["round_success"]
    )
    assert (answer.refused, answer.status) == (False, "ok")
    assert result is not None
    assert _scored(by_cli) == _scored(by_mcp) == {"status": "ok", "score": 1.0, "rounds": 2}
    assert {k: result["entries"]["round_success"][k] for k in ("status", "score", "rounds")} == (
        _scored(by_mcp)
    )


LABELS_NOT_TEXT = "{where}veyru/1790000000/labels.json is not UTF-8 text (byte 0xff at offset 7)"


@pytest.mark.parametrize("surface", ["cli", "mcp", "cli-cohort", "mcp-cohort"])
def test_a_run_whose_labels_are_not_utf8_is_unreadable_to_every_evaluation(
    surface: str, prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluate --run-dir`` and ``evaluate_run`` scored a run whose ``labels.json`` is not
    UTF-8 (exit 0, a report written) where every cohort surface counts it unreadable: now one
    line, exit 66 / a tool error (``evaluation.load_run``'s check), no report written; each
    names the run's file within its runs directory, as ``evaluate_runs`` does (the CLI named it
    by its absolute path)."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=2, now_unix=1_790_000_000)
    (Path(folder.url) / "labels.json").write_bytes(b'{"a": "\xff"}')
    if surface == "cli":
        answer = _cli(capsys, "evaluate", "veyru", "--run-dir", folder.url,
                      "--metrics", "round_success")  # fmt: skip
        expected = Answer(True, LABELS_NOT_TEXT.format(where=""), 66)
    elif surface == "mcp":
        answer = _mcp(str(runs), "evaluate_run", run_id=folder.run_id,
                      metrics=["round_success"])[0]  # fmt: skip
        expected = Answer(True, LABELS_NOT_TEXT.format(where=""), "tool error")
    elif surface == "cli-cohort":  # the run named on stderr, the summary on stdout, exit 1
        with pytest.raises(SystemExit) as exited:
            main(["evaluate", "--runs-dir", str(runs), "--metrics", "round_success"])
        err = capsys.readouterr().err
        answer = Answer(True, err.removeprefix("glossogen: error: ").rstrip("\n"),
                        int(exited.value.code or 0))  # fmt: skip
        line = LABELS_NOT_TEXT.format(where="")  # within --runs-dir, as MCP (was its abs path)
        expected = Answer(True, f"veyru/1790000000: not evaluated: {line}", 1)
    else:
        _, result = _mcp(str(runs), "evaluate_runs", metrics=["round_success"])
        assert result is not None
        answer = Answer(True, result["not_evaluated_runs"][folder.run_id], "tool error")
        expected = Answer(True, LABELS_NOT_TEXT.format(where=""), "tool error")
    assert answer == expected
    assert not (Path(folder.url) / "veyru_report.json").exists()


COHORT_NAMES = {
    "cli": NAMES["cli"]
    | {"spend_cap_usd": "--spend-cap-usd", "knob": "--knob", "run_ids": "--run-id"},
    "mcp": NAMES["mcp"] | {"spend_cap_usd": "spend_cap_usd", "knob": "knob", "run_ids": "run_ids"},
}
"""How each surface names a cohort's refused values: the CLI's flags, ``evaluate_runs``'s
arguments (a knob condition by the tool's argument, ``knob``, as the export's tools name it)."""
COHORT_REFUSALS = {
    "negative-cap": (["--spend-cap-usd", "-1"], {"spend_cap_usd": -1.0},
                     "{spend_cap_usd} must be a number of USD of at least 0, got -1"),
    "knob-condition": (["--knob", "x"], {"knob": ["x"]},
                       "{knob} 'x': no operator; write <knob><op><value> with op one of "
                       "!= >= <= = > <"),
    "no-judge": (["--metrics", "language_repetition"], {"metrics": ["language_repetition"]},
                 "language_repetition needs a judge: pass {model} and {provider}"),
    # export's check_run_ids (was, on the CLI: "String should have at least 1 character")
    "empty-run-id": (["--run-id", ""], {"run_ids": [""]},
                     "{run_ids} needs a run id (<scenario>/<run_dir_name>)"),
}  # fmt: skip
"""Each refusal of a cohort: the CLI's flags, ``evaluate_runs``'s arguments, the line."""


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize("case", [*COHORT_REFUSALS, "scored"])
def test_a_cohort_is_scored_and_refused_alike_by_the_cli_and_mcp(
    surface: str, case: str, prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluate --runs-dir`` and ``evaluate_runs`` go through the library's cohort entry
    (``launch.check_cohort``, ``launch.evaluate_cohort``): the same summary line and reports
    for two runs played alike, and each refusal one line naming the value the surface's way
    (exit 64 / a tool error), no report written."""
    runs = str(tmp_path / "runs")
    played = [play_run(runs, "veyru", rounds=2, now_unix=1_790_000_000 + i) for i in (0, 1)]
    if case == "scored":
        answer = cohort_through(surface, runs, ["--metrics", "round_success"],
                                {"metrics": ["round_success"]}, capsys)  # fmt: skip
        where = {"cli": f"under {runs}", "mcp": "in the server's runs directory"}[surface]
        line = (
            f"evaluated 2 of 2 runs {where}: 2 scored, 0 skipped (report up to date); "
            "0 not evaluated · evaluation cost $0.000000"
        )  # the CLI's user typed the runs directory; MCP's client gave none: never its path
        assert answer == Answer(False, line, STATUS[surface][0])
        assert [_scored(f) for f in played] == [{"status": "ok", "score": 1.0, "rounds": 2}] * 2
        return
    flags, arguments, line = COHORT_REFUSALS[case]
    answer = cohort_through(surface, runs, flags, arguments, capsys)
    status = 64 if surface == "cli" else "tool error"
    assert answer == Answer(True, line.format(**COHORT_NAMES[surface]), status)
    assert [(Path(f.url) / "veyru_report.json").exists() for f in played] == [False, False]


UNREADABLE_LABELS = [
    (b'{"bad": "a\\udcffb"}', "labels.json is not UTF-8 text (it escapes the lone surrogate \\udcff)"),
    (b'{"bad": "a\xffb"}', "labels.json is not UTF-8 text (byte 0xff at offset 10)"),
]  # fmt: skip
"""A labels.json escaping a lone surrogate, and one holding a raw byte 0xff: README's words."""


@pytest.mark.parametrize(("data", "why"), UNREADABLE_LABELS)
def test_a_run_whose_labels_are_not_utf8_is_named_alike_through_every_surface(
    data: bytes, why: str, prefect_api: str, played_source: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``evaluate`` and ``verify`` printed the file's ``\\udcff`` escape as a byte typed
    (``\\xff``); a raw 0xff was ``not valid JSON ('utf-8' codec can't decode byte 0xff ...)``.
    Now one line, the same on every surface: the CLI's notes and errors, REST's preview, MCP's
    ``export_runs`` and ``evaluate_runs``."""
    runs = tmp_path / "runs"
    with_played_source(runs, played_source)
    damaged = f"veyru/{int(played_source.name) + 1}"
    shutil.copytree(played_source, runs / damaged)
    (runs / damaged / "labels.json").write_bytes(data)
    path = f"{damaged}/{why}"  # within --runs-dir, as REST and MCP (was its absolute path)

    def cli(*argv: str) -> tuple[int, list[str]]:
        with pytest.raises(SystemExit) as exited:
            main(list(argv))
        err = capsys.readouterr().err.splitlines()
        return int(exited.value.code or 0), [e for e in err if damaged in e]

    assert cli("export", "--runs-dir", str(runs), "--out", str(tmp_path / "out")) == (
        0, [f"glossogen: note: skipped {damaged}: {path}"])  # fmt: skip
    assert cli("evaluate", "--runs-dir", str(runs), "--metrics", "round_success") == (
        1, [f"glossogen: error: {damaged}: not evaluated: {path}"])  # fmt: skip
    assert cli("verify", "--runs-dir", str(runs)) == (
        66, [f"glossogen: error: {damaged}: cannot be read: {path}"])  # fmt: skip
    preview = TestClient(create_app(str(runs))).post(
        "/api/g/local/runs/export/preview", json={"selection": {"kind": "filters"}}
    )
    assert preview.json()["unreadable_runs"] == {damaged: f"{damaged}/{why}"}
    _, exported = _mcp(str(runs), "export_runs", out=str(tmp_path / "mcp-out"))
    assert exported is not None and exported["unreadable_runs"] == {damaged: f"{damaged}/{why}"}
    _, evaluated = _mcp(str(runs), "evaluate_runs", metrics=["round_success"])
    assert evaluated is not None
    assert evaluated["not_evaluated_runs"] == {damaged: f"{damaged}/{why}"}


@pytest.mark.parametrize(("surface", "status"), [("cli", 66), ("mcp", "tool error")])
def test_a_cohort_of_a_run_id_that_no_longer_resolves_is_refused_before_any_flow_run(
    surface: str, status: int | str, prefect_api: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``evaluate --runs-dir R --run-id veyru/1`` and ``evaluate_runs`` refuse the id as the
    export does (``export.check_selection`` in ``launch.check_cohort``), exit 66 / a tool
    error (was: an evaluate-cohort flow run, then ``1 not evaluated``, exit 1)."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    answer = cohort_through(surface, runs, ["--run-id", "veyru/1"], {"run_ids": ["veyru/1"]},
                            capsys)  # fmt: skip
    assert answer == Answer(True, "run ids that no longer resolve: veyru/1", status)
