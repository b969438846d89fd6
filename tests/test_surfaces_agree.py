"""One operation through the CLI, REST and MCP: the same result, and the same refusal worded by
each surface (the CLI names its flag, MCP its tool argument, REST the request field).

Each surface is driven as a user drives it: ``glossogen`` in this process (its exit code and
its one line), the FastAPI app over HTTP (``TestClient``), the MCP tools through the SDK's
client connected to ``build_server`` in-process. Each operation where more than one surface
offers it: stop, analyze and export (CLI, REST, MCP); run, resume, evaluate and fork / replace /
cross-run replace (CLI and MCP: REST has none of them). Sweep, verify and rejudge are the CLI's
alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from glossogen.cli import main
from glossogen.mcp import build_server
from glossogen.server import create_app
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import claim_cancelled, claim_unbegun, play_run


@dataclass(frozen=True)
class Answer:
    """What a surface answered: refused or not, its one line, and its own status for it."""

    refused: bool
    line: str
    status: int | str


@pytest.fixture(scope="module")
def played_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scripted 2-round veyru run played for the module: the source the launch-, knobs- and
    evaluation-refusal tests each copy into their own runs folder (:func:`with_played_source`),
    instead of playing one each."""
    return Path(play_run(str(tmp_path_factory.mktemp("played-source")), "veyru", rounds=2).url)


def with_played_source(runs: Path, source: Path) -> None:
    """Copy the played ``source`` run folder (lock file and all, as ``play_run`` leaves it in
    this process) into ``runs``, under its run id."""
    shutil.copytree(source, runs / "veyru" / source.name)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Answer:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capsys.readouterr()
    code = int(exited.value.code or 0)
    if code:
        assert (out, err.count("\n")) == ("", 1), (out, err)
        return Answer(True, err.removeprefix("glossogen: error: ").rstrip("\n"), code)
    return Answer(False, out.splitlines()[0], code)


def _mcp(runs_dir: str, tool: str, **arguments: Any) -> tuple[Answer, dict[str, Any] | None]:
    async def called() -> Any:
        async with Client(build_server(runs_dir)) as client:
            return await client.call_tool(tool, arguments)

    result = asyncio.run(called())
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return Answer(True, text.removeprefix(f"Error executing tool {tool}: "), "tool error"), None
    return Answer(False, str((result.structured_content or {}).get("message", "")), "ok"), (
        result.structured_content
    )


def _rest_stop(runs_dir: str, folder: RunFolder) -> Answer:
    got = TestClient(create_app(runs_dir)).post(f"/api/g/local/runs/{folder.run_id}/stop")
    body = got.json()
    if got.status_code != 200:
        return Answer(True, body["detail"]["message"], got.status_code)
    return Answer(False, body["message"], got.status_code)


def stop_through(
    surface: str, runs_dir: str, folder: RunFolder, capsys: pytest.CaptureFixture[str]
) -> Answer:
    """``glossogen stop``, ``POST .../stop`` or MCP ``stop_run`` of the run in ``folder``."""
    if surface == "cli":
        return _cli(capsys, "stop", folder.url)
    if surface == "rest":
        return _rest_stop(runs_dir, folder)
    return _mcp(runs_dir, "stop_run", run_id=folder.run_id)[0]


SURFACES = ["cli", "rest", "mcp"]
STATUS = {"cli": (0, 65), "rest": (200, 409), "mcp": ("ok", "tool error")}
"""Each surface's own word for done and for refused: an exit code, an HTTP status, a tool
error."""


OTHER_FILES = (
    "run {run_id} has not begun its log and no process holds it, but its folder holds other "
    "files: left as it is"
)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("extra", [False, True], ids=["queued", "holding-other-files"])
def test_stopping_a_claim_answers_the_same_through_every_surface(
    surface: str, extra: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A queued claim is cancelled and removed; one holding a file of its own is refused and
    left as it is: the same line each way, in each surface's status."""
    runs = str(tmp_path / "runs")
    folder = claim_unbegun(runs)
    if extra:
        (Path(folder.url) / "notes.txt").write_text("mine")
    answer = stop_through(surface, runs, folder, capsys)
    if not extra:
        assert answer == Answer(False, claim_cancelled(folder.run_id), STATUS[surface][0])
        assert not Path(folder.url).exists()
        return
    assert answer == Answer(True, OTHER_FILES.format(run_id=folder.run_id), STATUS[surface][1])
    assert sorted(p.name for p in Path(folder.url).iterdir()) == [
        "config.json", "labels.json", "notes.txt"
    ]  # fmt: skip


NOT_A_RUN_ID_LINE = "not a run id (<scenario>/<run_dir_name>, relative to the runs directory)"
STOP_REFUSALS = {
    "not-a-timestamp": ("veyru/abc", "run ids that no longer resolve: veyru/abc"),
    "no-such-run": ("veyru/1", "run ids that no longer resolve: veyru/1"),
    "blank-before": (" veyru/1", "{name} ' veyru/1': " + NOT_A_RUN_ID_LINE),
    "backslash": ("veyru\\1790000000/1", "{name} 'veyru\\1790000000/1': " + NOT_A_RUN_ID_LINE),
    "backslash-one-part": ("veyru\\1", "{name} 'veyru\\1': " + NOT_A_RUN_ID_LINE),
}
"""A run id ``stop`` is given (the CLI's run folder relative to the runs directory) and the
library's line for it (``launch.stop_folder``): the export's words for a malformed id and for
an id that names no run, the input named each surface's way."""
STOP_NAMES = {"cli": "RUN_DIR", "rest": "run_id", "mcp": "run_id"}
STOP_STATUS = {"cli": {64: 64, 66: 66}, "rest": {64: 404, 66: 404},
               "mcp": {64: "tool error", 66: "tool error"}}  # fmt: skip


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("case", list(STOP_REFUSALS))
def test_a_bad_run_id_to_stop_is_refused_with_one_line_through_every_surface(
    surface: str, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``glossogen stop``, ``POST .../stop`` and ``stop_run`` call one check (was three
    wordings: ``'veyru/abc' is not a run folder (<runs-dir>/<scenario>/<unix_ts>)``, ``no run
    veyru/abc``, ``'veyru/abc' is not a run id (<scenario>/<unix_ts>)``; ``veyru/1 holds no run
    log``, ``no run veyru/1: it has no event log``, ``run 'veyru/1' has no event log in the
    server's runs directory``), nothing stopped or removed."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)
    monkeypatch.chdir(runs)  # the CLI's run folder, relative to the runs directory
    sent, line = STOP_REFUSALS[case]
    if surface == "cli":
        answer = _cli(capsys, "stop", sent)
    elif surface == "rest":
        got = TestClient(create_app(str(runs))).post(f"/api/g/local/runs/{sent}/stop")
        answer = Answer(True, got.json()["detail"]["message"], got.status_code)
    else:
        answer = _mcp(str(runs), "stop_run", run_id=sent)[0]
    code = 64 if "not a run id" in line else 66
    said = line.format(name=STOP_NAMES[surface])
    assert answer == Answer(True, said, STOP_STATUS[surface][code])
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == [folder.run_id.split("/")[1]]


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


def cohort_through(
    surface: str, runs: str, flags: list[str], arguments: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> Answer:  # fmt: skip
    """``glossogen evaluate --runs-dir`` or MCP ``evaluate_runs`` of the runs under ``runs``."""
    if surface == "cli":
        return _cli(capsys, "evaluate", "--runs-dir", runs, *flags)
    return _mcp(runs, "evaluate_runs", **arguments)[0]


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
            f"evaluated 2 runs {where}: 2 scored, 0 skipped (report up to date), "
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


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_a_fork_whose_source_does_not_replay_is_refused_alike_by_the_cli_and_mcp(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fork-at-round --replay`` and ``fork_run(replay=True)``: one line, exit 1 / a tool
    error, nothing claimed."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=2)
    log = Path(folder.log_url)
    lines = log.read_text().splitlines()
    seat = ""
    for index, text in enumerate(lines):  # a seat's first message says something else
        event = json.loads(text)
        calls = event.get("tool_calls") or [{}]
        if event["event_type"] == "llm_response_received" and "text" in calls[0].get("args", {}):
            calls[0]["args"]["text"] = "Something else."
            lines[index], seat = json.dumps(event), event["agent_id"]
            break
    log.write_text("\n".join(lines) + "\n")
    before = sorted(p.name for p in (runs / "veyru").iterdir())
    if surface == "cli":
        answer = _cli(capsys, "fork-at-round", "veyru", "--source-run-dir", folder.url,
                      "--after-round", "1", "--runs-dir", str(runs), "--replay")  # fmt: skip
    else:
        answer = _mcp(str(runs), "fork_run", source_run_id=folder.run_id, after_round=1,
                      replay=True)[0]  # fmt: skip
    assert (answer.refused, answer.status) == (True, 1 if surface == "cli" else "tool error")
    assert answer.line.startswith(
        f"rounds 1..1 do not replay from the tape: first divergence: {seat} call 2 "
        "(round 1): request sha256 "
    )
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before


def refused_as(surface: str, line: str, field: str) -> Answer:
    """A usage refusal as each surface gives it: the CLI's line and 64, REST's field at fault
    before its line and 422, MCP's tool error."""
    return {
        "cli": Answer(True, line, 64),
        "rest": Answer(True, f"{field}: {line}", 422),
        "mcp": Answer(True, line, "tool error"),
    }[surface]


NO_SUCH_MEASURE = (
    "{measure} 'nope': no such field at the run grain of this selection (list the grain's "
    "fields); no run of this selection has a report yet: metrics and the round grain's rows "
    "come from scoring them (glossogen evaluate)"
)
MEASURE = {"cli": "--measure", "rest": "measure", "mcp": "measure"}
"""How each surface names a refused measure: the CLI's flag, the request field."""


def analyze_through(
    surface: str,
    runs_dir: str,
    measure: str,
    capsys: pytest.CaptureFixture[str],
    counts: dict[str, int] | None = None,
) -> tuple[Answer, dict[str, Any] | None]:
    """``glossogen analyze --json``, ``POST .../analysis/query`` or MCP ``analyze_runs`` of
    ``measure`` grouped by ``round_count``: the answer and the result's JSON. ``counts``:
    ``limit`` and ``max_runs`` (``--limit``, ``--max-runs``)."""
    counts = counts or {}
    if surface == "cli":
        flags = [f for k, v in counts.items() for f in (f"--{k.replace('_', '-')}", str(v))]
        with pytest.raises(SystemExit) as exited:
            main(["analyze", "--runs-dir", runs_dir, "--measure", measure, "--by", "round_count",
                  "--json", *flags])  # fmt: skip
        out, err = capsys.readouterr()
        if exited.value.code:
            assert (out, err.count("\n")) == ("", 1), (out, err)
            line = err.removeprefix("glossogen: error: ").rstrip("\n")
            return Answer(True, line, int(exited.value.code)), None
        return Answer(False, "", 0), json.loads(out)
    if surface == "rest":
        field, _, agg = measure.partition(":")
        asked = {"field": field, "agg": agg} if agg else {"field": field}  # as typed
        got = TestClient(create_app(runs_dir)).post(
            "/api/g/local/runs/analysis/query",
            json={"measures": [asked], "by": ["round_count"], **counts},
        )
        if got.status_code != 200:
            detail = got.json()["detail"]
            return Answer(True, f"{detail['field']}: {detail['message']}", got.status_code), None
        return Answer(False, "", 200), got.json()
    return _mcp(runs_dir, "analyze_runs", measures=[measure], by=["round_count"], **counts)


@pytest.mark.parametrize("surface", SURFACES)
def test_an_analysis_answers_and_refuses_the_same_through_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One query, one result (the same JSON each way); one unknown measure, one line naming
    it the surface's way (REST also says the field at fault)."""
    runs = str(tmp_path / "runs")
    first = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    second = play_run(runs, "veyru", rounds=2, now_unix=1_790_000_100)
    refused, _ = analyze_through(surface, runs, "nope", capsys)
    line = NO_SUCH_MEASURE.format(measure=MEASURE[surface])
    assert refused == refused_as(surface, line, "measures")
    answer, result = analyze_through(surface, runs, "run_id:count", capsys)
    assert (answer.refused, answer.status) == (False, STATUS[surface][0])
    assert result is not None
    assert (result["runs"], result["run_ids"]) == (2, sorted([first.run_id, second.run_id]))
    assert [(g["keys"], [(c["value"], c["n"]) for c in g["cells"]]) for g in result["groups"]] == [
        ({"round_count": "1"}, [(1.0, 1)]),
        ({"round_count": "2"}, [(1.0, 1)]),
    ]


TOO_MANY = (
    "{flag} %d: must be at most 9007199254740991 (2**53 - 1, the largest whole number a "
    "JSON answer holds exactly)"
)
COUNTS = [
    ("limit", 10**29, TOO_MANY % 10**29),
    ("limit", 2**53, TOO_MANY % 2**53),
    ("max_runs", 10**29, TOO_MANY % 10**29),
    ("max_runs", 2**53, TOO_MANY % 2**53),
    ("limit", 0, "{flag} 0: must be at least 1"),
    ("max_runs", -1, "{flag} -1: must be at least 1"),
]
"""A ``limit`` or ``max_runs`` out of its range (issue 33: a 29-digit ``limit`` was taken and
echoed back in the answer), and the line refusing it."""


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize(("field", "value", "line"), COUNTS, ids=[f"{f}={v}" for f, v, _ in COUNTS])
def test_a_limit_or_max_runs_out_of_range_is_refused_alike_through_every_surface(
    surface: str, field: str, value: int, line: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Refused before any run is read (the folder holds none): CLI 64, REST 422 naming the
    field, MCP a tool error, the same words."""
    runs = tmp_path / "runs"
    runs.mkdir()
    refused, _ = analyze_through(surface, str(runs), "run_id:count", capsys, {field: value})
    flag = f"--{field.replace('_', '-')}" if surface == "cli" else field
    assert refused == refused_as(surface, line.format(flag=flag), field)


@pytest.mark.parametrize("surface", SURFACES)
def test_the_largest_limit_and_max_runs_are_taken_and_echoed_exactly(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    most = {"limit": 2**53 - 1, "max_runs": 2**53 - 1}
    answer, result = analyze_through(surface, runs, "run_id:count", capsys, most)
    assert (answer.refused, answer.status) == (False, STATUS[surface][0])
    assert result is not None
    assert (result["query"]["limit"], result["query"]["max_runs"]) == (9007199254740991,) * 2
    assert [(g["keys"], g["cells"][0]["value"]) for g in result["groups"]] == [
        ({"round_count": "1"}, 1.0)
    ]


TEXT_MEASURE = (
    "{measure} 'status': status is text, not a number: count it ('status:count') or group by "
    "it ({by} status)"
)
BY = {"cli": "--by", "rest": "by", "mcp": "by"}


@pytest.mark.parametrize("surface", SURFACES)
def test_a_text_field_measured_is_named_as_typed_alike_through_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``status`` with no aggregate: named as asked (not ``'status:mean'``), with what a text
    field takes, each surface naming ``by`` its way."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    refused, _ = analyze_through(surface, runs, "status", capsys)
    line = TEXT_MEASURE.format(measure=MEASURE[surface], by=BY[surface])
    assert refused == refused_as(surface, line, "measures")


NO_OPERATOR = "{knob} 'x': no operator; write <knob><op><value> with op one of != >= <= = > <"
KNOB = {"cli": "--knob", "rest": "knob", "mcp": "knob"}
"""How each surface names a refused knob condition: the CLI's flag, the body's field and the
tool's argument (was ``knob condition`` for both: issue 32)."""


def export_through(
    surface: str, runs_dir: str, out: Path, knob: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[Answer, bytes | None]:
    """``glossogen export``, ``POST .../export/csv`` or MCP ``export_runs`` of the run level
    table of the runs ``knob`` selects: the answer and the table's bytes."""
    if surface == "cli":
        flags = [f for k in knob for f in ("--knob", k)]
        answer = _cli(capsys, "export", "--runs-dir", runs_dir, "--out", str(out),
                      "--frames", "run_level", *flags)  # fmt: skip
        return answer, None if answer.refused else (out / "run_level.csv").read_bytes()
    if surface == "rest":
        got = TestClient(create_app(runs_dir)).post(
            "/api/g/local/runs/export/csv",
            json={"selection": {"kind": "filters", "knob": knob or None}, "frames": ["run_level"]},
        )
        if got.status_code != 200:
            detail = got.json()["detail"]
            return Answer(True, f"{detail['field']}: {detail['message']}", got.status_code), None
        return Answer(False, "", 200), got.content
    answer, _ = _mcp(runs_dir, "export_runs", out=str(out), frames=["run_level"], knob=knob)
    return answer, None if answer.refused else (out / "run_level.csv").read_bytes()


@pytest.mark.parametrize("surface", SURFACES)
def test_an_export_writes_and_refuses_the_same_through_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One selection, the same run level table byte for byte (the CLI's table is the
    reference); one knob condition without an operator, one line naming it the surface's way,
    nothing written."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=2, now_unix=1_790_000_000)
    refused, _ = export_through(surface, runs, tmp_path / "refused", ["x"], capsys)
    line = NO_OPERATOR.format(knob=KNOB[surface])
    assert refused == refused_as(surface, line, "knob")
    assert not (tmp_path / "refused").exists()
    answer, table = export_through(surface, runs, tmp_path / "out", [], capsys)
    assert (answer.refused, answer.status) == (False, STATUS[surface][0])
    assert not export_through("cli", runs, tmp_path / "reference", [], capsys)[0].refused
    assert table == (tmp_path / "reference" / "run_level.csv").read_bytes()
    assert table is not None and table.decode().count("\n") == 2  # the header and the run


def _rest_refusal(runs_dir: str, method: str, route: str, **request: Any) -> Answer:
    """A REST refusal: its status and its one line (``field: message`` when it names one)."""
    got = TestClient(create_app(runs_dir)).request(method, f"/api/g/local/runs/{route}", **request)
    detail = got.json()["detail"]
    line = f"{detail['field']}: {detail['message']}" if "field" in detail else detail["message"]
    return Answer(got.status_code != 200, line, got.status_code)


def test_a_refusal_over_rest_and_mcp_never_names_the_servers_runs_directory(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's user typed ``--runs-dir``, and its line names it; a client of the server gave
    no path and cannot act on one: REST and MCP name the server's runs directory, not its path."""
    runs = str(tmp_path / "runs")
    played = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    out = str(tmp_path / "out")
    cli_line = f"--scenario 'nosuch' has no run under {runs} (scenarios there: veyru)"
    assert _cli(capsys, "analyze", "--runs-dir", runs, "--scenario", "nosuch", "--measure",
                "run_id:count") == Answer(True, cli_line, 65)  # fmt: skip
    assert _cli(capsys, "export", "--runs-dir", runs, "--out", out, "--scenario",
                "nosuch") == Answer(True, cli_line, 65)  # fmt: skip
    served = "scenario 'nosuch' has no run in the server's runs directory (scenarios there: veyru)"
    nosuch = {"kind": "filters", "scenario": ["nosuch"]}
    assert [
        _rest_refusal(runs, "POST", "analysis/query",
                      json={"selection": nosuch, "measures": [{"field": "run_id", "agg": "count"}]}),
        _rest_refusal(runs, "GET", "analysis/fields", params={"scenario": "nosuch"}),
        _rest_refusal(runs, "POST", "export/preview", json={"selection": nosuch}),
        _mcp(runs, "analyze_runs", measures=["run_id:count"], selection=nosuch)[0],
        _mcp(runs, "list_analysis_fields", selection=nosuch)[0],
        _mcp(runs, "list_runs", scenario=["nosuch"])[0],
        _mcp(runs, "export_runs", out=out, scenario=["nosuch"])[0],
        _mcp(runs, "evaluate_runs", metrics=["round_success"], scenario=["nosuch"])[0],
    ] == [
        Answer(True, f"scenario: {served}", 422),
        Answer(True, f"scenario: {served}", 422),
        Answer(True, f"scenario: {served}", 422),
        *[Answer(True, served, "tool error")] * 5,
    ]  # fmt: skip
    gone = str(tmp_path / "gone")
    assert _cli(capsys, "analyze", "--runs-dir", gone, "--measure", "run_id:count") == Answer(
        True, f"--runs-dir {gone!r} does not exist", 66
    )
    missing = "the server's runs directory does not exist"
    assert [
        _rest_refusal(
            gone, "POST", "analysis/query", json={"measures": [{"field": "run_id", "agg": "count"}]}
        ),
        _rest_refusal(gone, "GET", "analysis/fields"),
        _rest_refusal(gone, "POST", "export/preview", json={"selection": {"kind": "filters"}}),
        _mcp(gone, "analyze_runs", measures=["run_id:count"])[0],
        _mcp(gone, "list_analysis_fields")[0],
        _mcp(gone, "list_runs")[0],
        _mcp(gone, "export_runs", out=out)[0],
        _mcp(gone, "evaluate_runs", metrics=["round_success"])[0],
    ] == [*[Answer(True, missing, 503)] * 3, *[Answer(True, missing, "tool error")] * 5]
    assert not os.path.exists(out)
    # a cohort over MCP with a run id that resolves to no run: refused before any flow run
    # (as the export refuses it), naming the id, never the server's runs directory
    answer, result = _mcp(runs, "evaluate_runs", metrics=["round_success"],
                          run_ids=[played.run_id, "veyru/1"])  # fmt: skip
    assert (answer, result) == (
        Answer(True, "run ids that no longer resolve: veyru/1", "tool error"),
        None,
    )
    # a run whose log never ended is refused: counted and listed alike, as the summary counts it
    unended = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_500)
    log = Path(runs) / unended.run_id / "veyru.jsonl"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if '"simulation_ended"' not in line))  # fmt: skip
    answer, result = _mcp(runs, "evaluate_runs", metrics=["round_success"],
                          run_ids=[played.run_id, unended.run_id])  # fmt: skip
    assert result is not None
    assert (answer.line, result["not_evaluated"], sorted(result["not_evaluated_runs"])) == (
        "evaluated 2 runs in the server's runs directory: 1 scored, 0 skipped (report up to "
        "date), 1 not evaluated · evaluation cost $0.000000",
        1, [unended.run_id])  # fmt: skip
    assert result["not_evaluated_runs"][unended.run_id] == (
        f"{unended.run_id} has no simulation_ended (still playing, or killed): pass "
        "allow_incomplete to score what it logged"
    )
    # no metric named is refused as the command line's --metrics '' is
    assert _mcp(runs, "evaluate_runs", metrics=[])[0] == Answer(
        True, "metrics names no metric", "tool error"
    )


TABLES = "run_level, round_level, agent_level, message_level, round_context, call_level"
OVER = "the selection holds 2 runs, over the 1-run limit; narrow the selection or raise"
OVER_REST = f"max_runs: {OVER} it on the command line (`glossogen export --max-runs`)"
RUN_ID_SHAPE = "<scenario>/<run_dir_name>, relative to the runs directory"
NOT_A_RUN_ID = f"not a run id ({RUN_ID_SHAPE})"


def malformed_run_id(sent: str) -> dict[str, Any]:
    """The export case of a run id ``sent`` not shaped ``<scenario>/<run_dir_name>``."""
    return {
        "cli": ["--run-id", sent],
        "rest": {"selection": {"kind": "run_ids", "run_ids": [sent]}},
        "mcp": {"run_ids": [sent]},
        "said": {"cli": f"--run-id '{sent}': {NOT_A_RUN_ID}",
                 "rest": f"run_ids: run_ids '{sent}': {NOT_A_RUN_ID}",
                 "mcp": f"run_ids '{sent}': {NOT_A_RUN_ID}"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    }  # fmt: skip


EXPORT_REFUSALS: dict[str, dict[str, Any]] = {
    "unknown-table": {
        "cli": ["--frames", "nope"], "rest": {"frames": ["nope"]}, "mcp": {"frames": ["nope"]},
        "said": {"cli": f"--frames: unknown table 'nope' (tables: {TABLES})",
                 "rest": f"frames: unknown table 'nope' (tables: {TABLES})",
                 "mcp": f"unknown table 'nope' (tables: {TABLES})"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "table-named-twice": {
        "cli": ["--frames", "run_level,run_level"], "rest": {"frames": ["run_level", "run_level"]},
        "mcp": {"frames": ["run_level", "run_level"]},
        "said": {"cli": "--frames 'run_level,run_level': the table 'run_level' is named twice",
                 "rest": "frames: the table 'run_level' is named twice",
                 "mcp": "the table 'run_level' is named twice"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "empty-table-name": {
        "cli": ["--frames", "run_level,"], "rest": {"frames": ["run_level", ""]},
        "mcp": {"frames": ["run_level", ""]},
        "said": {"cli": "--frames 'run_level,': a table name is empty",
                 "rest": "frames: a table name is empty", "mcp": "a table name is empty"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "no-table": {  # MCP took frames [] as the default tables (was: exported 3 tables)
        "cli": ["--frames", ""], "rest": {"frames": []}, "mcp": {"frames": []},
        "said": {"cli": f"--frames: no table named (tables: {TABLES})",
                 "rest": f"frames: no table named (tables: {TABLES})",
                 "mcp": f"no table named (tables: {TABLES})"},
        "status": {"cli": 64, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "missing-run-id": {
        "cli": ["--run-id", "veyru/1"],
        "rest": {"selection": {"kind": "run_ids", "run_ids": ["veyru/1"]}},
        "mcp": {"run_ids": ["veyru/1"]},
        "said": dict.fromkeys(("cli", "mcp"), "run ids that no longer resolve: veyru/1")
        | {"rest": "run_ids: run ids that no longer resolve: veyru/1"},
        "status": {"cli": 66, "rest": 404, "rest-raw": 404},
        "answered": {"rest-preview": "missing_run_ids: veyru/1"},  # listed, not refused
    },
    # was: read as an unreadable run, exit 0 "0 runs matched"
    "malformed-run-id": malformed_run_id("veyru/1790000000/"),
    # the backslash echoed once (was 'veyru\\1796437285', repr's)
    "backslash-run-id": malformed_run_id("veyru\\1796437285"),
    "unknown-scenario": {
        "cli": ["--scenario", "nosuch"],
        "rest": {"selection": {"kind": "filters", "scenario": ["nosuch"]}},
        "mcp": {"scenario": ["nosuch"]},
        "said": {"cli": "--scenario 'nosuch' has no run under {runs} (scenarios there: veyru)",
                 "rest": "scenario: scenario 'nosuch' has no run in the server's runs "
                         "directory (scenarios there: veyru)",
                 "mcp": "scenario 'nosuch' has no run in the server's runs directory "
                        "(scenarios there: veyru)"},
        "status": {"cli": 65, "rest": 422, "rest-preview": 422, "rest-raw": 422},
    },
    "over-max-runs": {
        "cli": ["--max-runs", "1"], "rest": {}, "mcp": {"max_runs": 1},
        "said": {"cli": f"{OVER} it with --max-runs", "rest": OVER_REST,
                 "mcp": f"{OVER} max_runs"},
        "status": {"cli": 65, "rest": 413, "rest-raw": 413},
        "answered": {"rest-preview": OVER_REST},  # the refusal a download would meet, listed
    },
}  # fmt: skip
"""Each refusal of an export as each surface words it: the CLI's flags and exit code, REST's
field (or limit) before the line and its status (``rest`` the ``/csv`` route, ``rest-preview``
and ``rest-raw`` the others), MCP's tool error; the line the library's, save that REST and MCP
name the server's runs directory, never its path (the CLI's user typed it). ``answered``: a
route that answers 200 instead, with what it lists (the preview's ``refusals`` and
``missing_run_ids``; nothing for a zip)."""
EXPORT_SURFACES = ["cli", "rest", "rest-preview", "rest-raw", "mcp"]
ROUTES = {"rest": "csv", "rest-preview": "preview", "rest-raw": "raw"}
"""The export route each REST surface posts to (the same body each)."""


def _rest_answer(got: Any) -> Answer:
    """A REST export route's answer: its refusal's line, or what a 200 lists as refused."""
    if got.status_code != 200:
        detail = got.json()["detail"]
        named = detail.get("field") or detail["limit"]
        return Answer(True, f"{named}: {detail['message']}", got.status_code)
    if not got.headers["content-type"].startswith("application/json"):
        return Answer(False, "", 200)  # a download
    preview = got.json()
    listed = [f"{r.get('field') or r['limit']}: {r['message']}" for r in preview["refusals"]]
    if preview["missing_run_ids"]:
        listed.append(f"missing_run_ids: {', '.join(preview['missing_run_ids'])}")
    return Answer(False, "; ".join(listed), 200)


def export_refused_through(
    surface: str, runs: str, out: Path, case: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> Answer:
    """``glossogen export``, ``POST .../export/csv`` (``/preview``, ``/raw``; a server whose
    ceiling is 1 run when the case asks the CLI for ``--max-runs 1``) or MCP ``export_runs``,
    asked as ``case`` says."""
    if surface == "cli":
        return _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), *case["cli"])
    if surface in ROUTES:
        limits = {"max_runs": 1} if "--max-runs" in case["cli"] else {}
        body = {"selection": {"kind": "filters"}, **case["rest"]}
        route = f"/api/g/local/runs/export/{ROUTES[surface]}"
        return _rest_answer(TestClient(create_app(runs, **limits)).post(route, json=body))
    return _mcp(runs, "export_runs", out=str(out), **case["mcp"])[0]


@pytest.mark.parametrize("surface", EXPORT_SURFACES)
@pytest.mark.parametrize("case", list(EXPORT_REFUSALS))
def test_an_export_is_refused_with_the_same_line_through_every_surface(
    surface: str, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REST plans the same library request as the CLI and MCP: an unknown table, an id that no
    longer resolves, a scenario no run has and a selection over the run ceiling are one line
    each (issue 32: REST's own wording of the last two is gone), through each REST route
    (``/csv``, ``/preview``, ``/raw``) as through the CLI and MCP, nothing written. The
    preview lists what a download would refuse with (the same line) and the ids that no longer
    resolve. ``/raw`` refuses the tables the body names as ``/csv`` does (one body, one
    verdict), and a table named twice or an empty name is refused by the one export plan."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_100)
    asked = EXPORT_REFUSALS[case]
    answer = export_refused_through(surface, runs, tmp_path / "out", asked, capsys)
    if surface in asked.get("answered", {}):
        expected = Answer(False, asked["answered"][surface], 200)
    else:
        said = asked["said"][surface.partition("-")[0]].format(runs=runs)
        expected = Answer(True, said, asked["status"].get(surface, "tool error"))
    assert answer == expected
    assert not (tmp_path / "out").exists()


HUGE = "100000000000000000000000000000"
"""10**29: past the ``max_runs`` a JSON answer holds exactly."""
MAX_RUNS_BOUND = "must be at most 9007199254740991 (2**53 - 1, the largest whole number a JSON answer holds exactly)"


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize(("value", "detail"), [
    ("0", "0: must be at least 1"), (HUGE, f"{HUGE}: {MAX_RUNS_BOUND}"),
])  # fmt: skip
def test_export_bounds_max_runs_as_analyze_does(
    surface: str, value: str, detail: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --max-runs`` / ``export_runs max_runs`` take analyze's bound, 1..2**53 - 1, in
    its words (was: 10**29 exported; 0 was ``--max-runs must be at least 1, got 0``), nothing
    written."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1)
    out = tmp_path / "out"
    if surface == "cli":
        answer = _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), "--max-runs", value)
        assert answer == Answer(True, f"--max-runs {detail}", 64)
        analyzed = _cli(capsys, "analyze", "--runs-dir", runs, "--measure", "run_id:count",
                        "--max-runs", value)  # fmt: skip
        assert analyzed.line == answer.line
    else:
        answer, _ = _mcp(runs, "export_runs", out=str(out), max_runs=int(value))
        assert answer == Answer(True, f"max_runs {detail}", "tool error")
    assert not out.exists()


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_run_ids_with_a_filter_are_refused_alike_by_the_cli_and_mcp(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --run-id ... --scenario ...`` and ``export_runs(run_ids, scenario)``: one line
    naming both (was "run_ids cannot be combined with filters" over MCP), nothing written."""
    runs = str(tmp_path / "runs")
    folder = play_run(runs, "veyru", rounds=1)
    out = tmp_path / "out"
    if surface == "cli":
        answer = _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), "--run-id",
                      folder.run_id, "--scenario", "veyru", "--contains-agent-id", "x")  # fmt: skip
        line = "--run-id cannot be combined with --scenario, --contains-agent-id"
    else:
        answer, _ = _mcp(runs, "export_runs", out=str(out), run_ids=[folder.run_id],
                         scenario=["veyru"], contains_agent_id="x")  # fmt: skip
        line = "run_ids cannot be combined with scenario, contains_agent_id"
    assert answer == Answer(True, line, 64 if surface == "cli" else "tool error")
    assert not out.exists()


DERIVED = {
    "fork": ("fork-at-round", "fork_run", {}),
    "replace": ("replace-agent", "replace_agent",
                {"replaced_agent_id": "field_observer", "model": "other-script",
                 "provider": "scripted"}),
    "cross-run": ("cross-run-replace-agent", "cross_run_replace_agent",
                  {"replaced_agent_id": "field_observer", "donor_agent_id": "field_observer",
                   "model": "other-script", "provider": "scripted"}),
}  # fmt: skip
"""Each derived-run operation: its CLI command, its MCP tool and the arguments of its seat."""
LIMITS = {
    "max_agent_turns": "--max-agent-turns",
    "run_timeout_seconds": "--run-timeout",
    "spend_cap_usd": "--spend-cap-usd",
    "rounds_after": "--rounds-after",
}
"""The limits a derived run takes besides ``after_round``: the request field, the CLI's flag."""
FLAG_OF = {**LIMITS, "provider": "--provider", "knobs": "--knobs"}
"""The CLI's flag of each request field a launch test sets."""
REFUSED_LIMITS = [
    ("max_agent_turns", "0", 0, "{name} must be at least 1, got 0"),
    ("run_timeout_seconds", "0", 0.0, "{name} must be a number of seconds above 0, got 0"),
    ("spend_cap_usd", "-1", -1.0, "{name} must be a number of USD above 0, got -1"),
    ("rounds_after", "0", 0, "{name} must be at least 1, got 0"),
]


def flags_of(function: Any) -> set[str]:
    """Every flag a CLI command declares (its parameters' ``typer.Option`` names)."""
    import inspect

    declared = [p.default for p in inspect.signature(function).parameters.values()]
    return {d for o in declared for d in getattr(o, "param_decls", None) or ()}


LAUNCHES = [
    ("run", "start_run", ("max_agent_turns", "run_timeout_seconds", "spend_cap_usd")),
    ("resume", "resume_run", ("max_agent_turns", "run_timeout_seconds", "spend_cap_usd")),
    *((command, tool, tuple(LIMITS)) for command, tool, _ in DERIVED.values()),
]
"""Each command that launches a run (``resume``: ``run --resume``), its MCP tool, and the
limits both must take."""


@pytest.mark.parametrize(("command", "tool", "limits"), LAUNCHES, ids=[c for c, *_ in LAUNCHES])
def test_each_launching_tool_takes_every_limit_its_command_takes(
    command: str, tool: str, limits: tuple[str, ...], tmp_path: Path
) -> None:
    """MCP's ``start_run``, ``fork_run``, ``replace_agent`` and ``cross_run_replace_agent``
    take each limit ``run``, ``fork-at-round``, ``replace-agent`` and
    ``cross-run-replace-agent`` take (issue 32), under the request field's name."""
    from glossogen.cli import derived, run

    module = run if command in ("run", "resume") else derived
    flags = flags_of(getattr(module, "run" if command == "resume" else command.replace("-", "_")))

    async def listed() -> dict[str, set[str]]:
        async with Client(build_server(str(tmp_path))) as client:
            tools = (await client.list_tools()).tools
        return {t.name: set(t.input_schema["properties"]) for t in tools}

    arguments = asyncio.run(listed())[tool]
    assert {LIMITS[f] for f in limits} <= flags
    assert {f: f in arguments for f in limits} == dict.fromkeys(limits, True)
    assert ("after_round" in arguments) == (command not in ("run", "resume"))


RUN_LIMITS = REFUSED_LIMITS[:3]
"""The limits ``run`` and ``run --resume`` take: worded as the derived runs' (issue 32: the
value as typed, ``got 0`` for ``--run-timeout 0`` everywhere)."""
FRACTIONAL_TIMEOUT = ("run_timeout_seconds", "-0.5", -0.5,
                      "{name} must be a number of seconds above 0, got -0.5")  # fmt: skip

REFUSED = (
    [(operation, *limit) for operation in ("run", "resume") for limit in RUN_LIMITS]
    + [(operation, *limit) for operation in DERIVED for limit in REFUSED_LIMITS]
    + [(operation, *FRACTIONAL_TIMEOUT) for operation in ("run", "resume", *DERIVED)]
)
"""Each launching operation with each limit it takes, refused."""
UNKNOWN_PROVIDER = (
    "{name}: unknown provider 'nope' (known: anthropic, openai, google-gla, xai, groq, "
    "mistral, deepseek, openrouter, ollama, self-hosted, scripted, local)"
)


def launch_through(
    surface: str,
    operation: str,
    runs: Path,
    field: str,
    value: Any,
    flag_value: str,
    capsys: pytest.CaptureFixture[str],
) -> Answer:
    """``glossogen run`` / ``start_run`` of veyru, ``run --resume`` / ``resume_run`` of the run
    in ``runs``, or the derived operation from it (the CLI's command, the MCP tool), with
    ``field`` set to the value given."""
    if operation == "run":
        if surface == "cli":
            return _cli(capsys, "run", "veyru", "--model", "scripted", "--provider", "scripted",
                        "--config", "knobs_default", "--runs-dir", str(runs), FLAG_OF[field],
                        flag_value)  # fmt: skip
        asked = {"scenario": "veyru", "model": "scripted", "provider": "scripted", field: value}
        return _mcp(str(runs), "start_run", **asked)[0]
    (source,) = (runs / "veyru").iterdir()
    run_id = f"veyru/{source.name}"
    if operation == "resume":
        if surface == "cli":
            return _cli(capsys, "run", "veyru", "--resume", str(source), FLAG_OF[field],
                        flag_value)  # fmt: skip
        return _mcp(str(runs), "resume_run", run_id=run_id, **{field: value})[0]
    command, tool, seat = DERIVED[operation]
    if surface == "cli":
        flags = [f for k, v in seat.items() for f in (f"--{k.replace('_', '-')}", v)]
        donor = ["--donor-run-dir", str(source)] if operation == "cross-run" else []
        return _cli(capsys, command, "veyru", "--source-run-dir", str(source), "--after-round",
                    "1", "--runs-dir", str(runs), *flags, *donor, FLAG_OF[field],
                    flag_value)  # fmt: skip
    donor_id = {"donor_run_id": run_id} if operation == "cross-run" else {}
    asked = {"source_run_id": run_id, "after_round": 1, **seat, **donor_id, field: value}
    return _mcp(str(runs), tool, **asked)[0]


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize(
    ("operation", "field", "flag_value", "value", "line"),
    REFUSED,
    ids=[f"{o}-{f}" for o, f, *_ in REFUSED],
)
def test_a_launch_refuses_a_bad_limit_alike_through_the_cli_and_mcp(
    surface: str,
    operation: str,
    field: str,
    flag_value: str,
    value: float,
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    played_source: Path,
) -> None:
    """``glossogen run`` and ``start_run``, and each derived operation, take the same limits:
    each refused in one line naming it (the CLI's flag, MCP's argument), nothing claimed."""
    runs = tmp_path / "runs"
    if operation != "run":
        with_played_source(runs, played_source)
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, field, value, flag_value, capsys)
    name = LIMITS[field] if surface == "cli" else field
    assert answer == Answer(True, line.format(name=name), 64 if surface == "cli" else "tool error")
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


TURN_CAP_WARNING = (
    "{name} 1 likely ends the run before its 2 rounds: a veyru seat takes about 14 model "
    "requests over them (about 4.5 in a round's main phase and 2.5 in a postmortem, the "
    "scenario's cost profile, as the estimate assumes), so 1 turns cover about 0.2 of them and "
    "the run would end incomplete; {name} 14 covers 2"
)
"""The turn-cap warning of a derived veyru run (1 round copied, 1 played) capped at 1 turn."""


@pytest.mark.parametrize("operation", list(DERIVED))
def test_a_derived_run_warns_of_a_tiny_turn_cap_through_mcp_as_the_cli_does(
    operation: str, prefect_api: str, tmp_path: Path, played_source: Path
) -> None:
    """``fork_run``, ``replace_agent`` and ``cross_run_replace_agent`` with
    ``max_agent_turns 1`` list the launch's shared turn-cap warning in ``warnings`` (was: none;
    the CLI's derived commands print it after ``glossogen: warning:``)."""
    from tests.fixtures.polling import wait_until
    from tests.mcp.conftest import gone, pid_of

    runs = tmp_path / "runs"
    with_played_source(runs, played_source)
    run_id = f"veyru/{played_source.name}"
    _, tool, seat = DERIVED[operation]
    donor_id = {"donor_run_id": run_id} if operation == "cross-run" else {}
    answer, result = _mcp(str(runs), tool, source_run_id=run_id, after_round=1, rounds_after=1,
                          max_agent_turns=1, **seat, **donor_id)  # fmt: skip
    assert (answer.refused, result is not None) == (False, True), answer
    assert result is not None
    pid = pid_of(result)
    if pid is not None:
        wait_until(lambda: gone(pid), "the derived run exits")
    assert result["warnings"] == [TURN_CAP_WARNING.format(name="max_agent_turns")]


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize("operation", ["run", "replace", "cross-run"])
def test_an_unknown_provider_is_named_alike_by_every_launch(
    surface: str,
    operation: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    played_source: Path,
) -> None:
    """``run --provider nope`` and ``replace-agent``/``cross-run-replace-agent --provider
    nope`` (and their tools) refuse it in one line naming ``--provider`` / ``provider`` (was
    ``--knobs: unknown provider`` for the replacements), exit 64, nothing claimed."""
    runs = tmp_path / "runs"
    if operation != "run":
        with_played_source(runs, played_source)
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, "provider", "nope", "nope", capsys)
    name = "--provider" if surface == "cli" else "provider"
    status = 64 if surface == "cli" else "tool error"
    assert answer == Answer(True, UNKNOWN_PROVIDER.format(name=name), status)
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize("operation", list(DERIVED))
def test_a_derived_runs_knobs_are_taken_and_refused_alike_by_the_cli_and_mcp(
    surface: str,
    operation: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    played_source: Path,
) -> None:
    """``--knobs FILE`` and the tools' ``knobs``: a knob of the wrong type in it is one line
    naming the knob, exit 65 / a tool error, nothing claimed."""
    runs = tmp_path / "runs"
    with_played_source(runs, played_source)
    knobs = tmp_path / "knobs.json"
    knobs.write_text('{"round_count": "x"}')
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, "knobs", str(knobs), str(knobs), capsys)
    line = "invalid knob 'round_count' = \"x\": Input should be a valid integer"
    assert answer == Answer(True, line, 65 if surface == "cli" else "tool error")
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


RUN_ARGUMENTS = {
    "--model": "model", "--provider": "provider", "--config": "config",
    "--max-agent-turns": "max_agent_turns", "--run-timeout": "run_timeout_seconds",
    "--spend-cap-usd": "spend_cap_usd", "--group-slug": "group_slug",
    "--judge-cache": "judge_cache",
}  # fmt: skip
"""``glossogen run``'s flags and ``start_run``'s argument for each."""

COMMAND_ARGUMENTS = {
    ("run", "start_run"): RUN_ARGUMENTS,
    ("run --dry-run", "estimate_run"): RUN_ARGUMENTS,
    ("run --resume", "resume_run"): {
        **RUN_ARGUMENTS, "--allow-config-change": "allow_config_change",
    },
    ("run --resume --dry-run", "estimate_run"): {
        **RUN_ARGUMENTS, "--allow-config-change": "allow_config_change", "--resume": "run_id",
    },
    **{
        (command, tool): {
            "--after-round": "after_round", "--rounds-after": "rounds_after",
            "--knobs": "knobs", "--max-agent-turns": "max_agent_turns",
            "--run-timeout": "run_timeout_seconds", "--spend-cap-usd": "spend_cap_usd",
            "--replay": "replay",
            **{f"--{k.replace('_', '-')}": k for k in seat},
            **({"--donor-agent-id": "donor_agent_id", "--donor-run-dir": "donor_run_id"}
               if command.startswith("cross") else {}),
            **({"--channel-visibility": "channel_visibility"}
               if command == "replace-agent" else {}),
        }
        for command, tool, seat in DERIVED.values()
    },
    ("evaluate", "evaluate_run"): {
        "--metrics": "metrics", "--model": "judge_model", "--provider": "judge_provider",
        "--judge-settings": "judge_settings", "--judge-replicas": "judge_replicas",
        "--probe-replicas": "probe_replicas", "--allow-incomplete": "allow_incomplete",
        "--plot": "plot", "--judge-cache": "judge_cache",
    },
    ("evaluate --runs-dir", "evaluate_runs"): {
        "--metrics": "metrics", "--model": "judge_model", "--provider": "judge_provider",
        "--judge-settings": "judge_settings", "--judge-replicas": "judge_replicas",
        "--probe-replicas": "probe_replicas", "--allow-incomplete": "allow_incomplete",
        "--plot": "plot", "--judge-cache": "judge_cache", "--scenario": "scenario",
        "--label": "labels", "--knob": "knob", "--status": "status", "--run-id": "run_ids",
        "--run-id-contains": "run_id_contains", "--contains-agent-id": "contains_agent_id",
        "--spend-cap-usd": "spend_cap_usd",
    },
    ("export", "export_runs"): {
        "--out": "out", "--frames": "frames", "--scenario": "scenario", "--label": "labels",
        "--status": "status", "--run-id-contains": "run_id_contains",
        "--contains-agent-id": "contains_agent_id", "--knob": "knob", "--run-id": "run_ids",
        "--repeat-run-columns/--no-repeat-run-columns": "repeat_run_columns",
        "--include-metric-summaries": "include_metric_summaries", "--max-runs": "max_runs",
        "--raw": "raw", "--include-logs": "include_logs", "--include-atif": "include_atif",
    },
}  # fmt: skip
"""Each operation's CLI command and MCP tool, and each flag of the command with the tool's
argument for it."""

NOT_AN_ARGUMENT = {
    "--runs-dir": "the server's runs folder (`glossogen mcp --runs-dir`), or --resume's folder",
    "--run-dir": "the run folder: the tool's run_id",
    "--source-run-dir": "the source folder: the tool's source_run_id",
    "--wait": "the CLI's own: a tool launches detached and get_run polls",
    "--dry-run": "estimate_run is the dry run (with run_id: a resume's)",
    "--resume": "resume_run is the resume; its run_id names the folder",
    "--allow-config-change": "a resume's only: resume_run takes it",
}
"""A flag of a command that no tool of the same operation takes as an argument, and why."""

NOT_OFFERED: dict[tuple[str, str], dict[str, str]] = {
    ("evaluate", "evaluate_run"): {
        flag: "a cohort's (--runs-dir): evaluate_runs takes it"
        for flag in ("--scenario", "--label", "--knob", "--status", "--run-id",
                     "--run-id-contains", "--contains-agent-id", "--spend-cap-usd")
    },
}  # fmt: skip
"""Flags of a command that one of its tools leaves to another, with why: listed, so the test
below holds every other flag to an argument."""


@pytest.mark.parametrize(("command", "tool"), list(COMMAND_ARGUMENTS), ids=lambda c: str(c))
def test_each_tool_takes_an_argument_for_each_flag_of_its_command(
    command: str, tool: str, tmp_path: Path
) -> None:
    """Issue 32: every flag of the command is a tool argument (``estimate_run`` the dry run's
    limits, ``resume_run`` ``judge_cache``, ``export_runs`` the raw zip), or listed with why
    (:data:`NOT_AN_ARGUMENT`, :data:`NOT_OFFERED`)."""
    import importlib

    name = command.split()[0]
    module = {"run": "run", "evaluate": "evaluate", "export": "export"}.get(name, "derived")
    flags = flags_of(getattr(importlib.import_module(f"glossogen.cli.{module}"),
                             name.replace("-", "_")))  # fmt: skip

    async def listed() -> set[str]:
        async with Client(build_server(str(tmp_path))) as client:
            tools = (await client.list_tools()).tools
        return {a for t in tools if t.name == tool for a in t.input_schema["properties"]}

    pairs = COMMAND_ARGUMENTS[(command, tool)]
    arguments = asyncio.run(listed())
    assert sorted(set(pairs) - flags) == []
    assert sorted(set(pairs.values()) - arguments) == []
    unpaired = flags - set(pairs) - set(NOT_OFFERED.get((command, tool), {}))
    assert sorted(unpaired - set(NOT_AN_ARGUMENT)) == []


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_resuming_an_ended_run_is_refused_alike_by_the_cli_and_mcp(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``glossogen run --resume`` and ``resume_run`` of a run that ended: one line, exit 65 /
    a tool error, nothing claimed or appended."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1)
    log = Path(folder.log_url).read_bytes()
    if surface == "cli":
        answer = _cli(capsys, "run", "veyru", "--resume", folder.url)
    else:
        answer = _mcp(str(runs), "resume_run", run_id=folder.run_id)[0]
    fork = {"cli": "fork-at-round", "mcp": "fork_run (source_run_id, after_round)"}[surface]
    line = (
        f"run {folder.run_id} already ended (simulation_ended); use {fork} to play further "
        "rounds from it"
    )
    assert answer == Answer(True, line, 65 if surface == "cli" else "tool error")
    assert [p.name for p in (runs / "veyru").iterdir()] == [Path(folder.url).name]
    assert Path(folder.log_url).read_bytes() == log


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


@pytest.mark.parametrize(("surface", "status"), [("cli", 77), ("mcp", "tool error")])
def test_a_launch_failing_two_checks_is_refused_for_the_same_one_by_the_cli_and_mcp(
    surface: str,
    status: int | str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No key and a cap the estimate passes: ``glossogen run`` and ``start_run`` run the one
    library launch check in one order, so both name the missing key (was: MCP checked the cap
    first and named it), exit 77 / a tool error, nothing claimed."""
    monkeypatch.chdir(tmp_path)  # no .env to find
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    runs = tmp_path / "runs"
    seat = {"model": "claude-sonnet-4-6", "provider": "anthropic"}
    if surface == "cli":
        answer = _cli(capsys, "run", "veyru", "--model", seat["model"], "--provider",
                      seat["provider"], "--config", "knobs_default", "--runs-dir", str(runs),
                      "--spend-cap-usd", "0.0001")  # fmt: skip
    else:
        answer = _mcp(str(runs), "start_run", scenario="veyru", spend_cap_usd=0.0001, **seat)[0]
    line = (
        "missing credentials: ANTHROPIC_API_KEY (provider anthropic, agent field_observer); "
        "ANTHROPIC_API_KEY (judge provider anthropic)"
    )
    assert answer == Answer(True, line, status)
    assert not list(runs.glob("veyru/*"))


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
@pytest.mark.parametrize("shape", ["absolute", "blank-after"])
def test_a_run_id_not_shaped_scenario_slash_run_is_quoted_as_sent_by_every_surface(
    surface: str, shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run-id parse (``export.is_run_id``): the run's absolute path (was, on REST and
    MCP: ``run ids that no longer resolve: veyru/<run>``, though it resolves) and an id with a
    blank after it (was: taken silently) are refused quoting what was sent, exit 64 / 422 / a
    tool error, nothing written; an evaluation refuses it alike before any flow run."""
    runs = str(tmp_path / "runs")
    folder = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    sent = folder.url if shape == "absolute" else f"{folder.run_id} "
    quoted = repr(sent)  # MCP too: the client sent the path (was cut to the run id)
    names = {"cli": f"--run-id {quoted}", "rest": f"run_ids: run_ids {quoted}",
             "mcp": f"run_ids {quoted}"}  # fmt: skip
    why = f"a path, not a run id: {RUN_ID_SHAPE}" if shape == "absolute" else NOT_A_RUN_ID
    line = f"{names[surface]}: {why}"
    case = {"cli": ["--run-id", sent], "rest": {"selection": {"kind": "run_ids", "run_ids": [sent]}},
            "mcp": {"run_ids": [sent]}}  # fmt: skip
    answer = export_refused_through(surface, runs, tmp_path / "out", case, capsys)
    assert answer == Answer(True, line, {"cli": 64, "rest": 422, "mcp": "tool error"}[surface])
    assert not (tmp_path / "out").exists()
    if surface == "rest":
        return
    evaluated = cohort_through(surface, runs, ["--run-id", sent], {"run_ids": [sent]}, capsys)
    assert evaluated == Answer(
        True, line.removeprefix("rest: "), 64 if surface == "cli" else "tool error"
    )
    assert not (Path(folder.url) / "veyru_report.json").exists()


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
