"""Every bad value of a request is named, in one refusal, in the request's order, alike on
every surface (issue 32; h50names).

The CLI prints each refused value on its own line (its flag) and exits with the first one's
code; REST answers the first as ``field``/``message`` and every one under ``errors``; MCP
joins each line with ``; ``. The values no run need be read for come first: while one of them
is refused, no run is read (a knob value the runs' recorded type cannot read, or a named run
that cannot be read, is judged only once they all pass).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from glossogen.cli import main
from glossogen.mcp import build_server
from glossogen.server import create_app
from tests.fixtures.played_runs import play_run

TABLES = "run_level, round_level, agent_level, message_level, round_context, call_level"
NO_OPERATOR = "no operator; write <knob><op><value> with op one of != >= <= = > <"
STATUS_WORDS = (
    "'bogus' is no run's status (one of completed, incomplete, error, interrupted, running, "
    "stopped, queued, or scenario_complete)"
)
ABC = "knob 'round_count', operator '>=', value 'abc': the run records a number"
XYZ = "knob 'round_count', operator '<', value 'xyz': the run records a number"


def _runs(tmp_path: Path) -> str:
    """Two one-round veyru runs under ``tmp_path/runs``."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_100)
    return runs


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """``glossogen ...``: the exit code and each error line (without ``glossogen: error: ``)."""
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capsys.readouterr()
    lines = [line.removeprefix("glossogen: error: ") for line in err.splitlines()]
    return int(exited.value.code or 0), [
        line for line in lines if not line.startswith("glossogen: note")
    ]


def _mcp(runs_dir: str, tool: str, **arguments: Any) -> str:
    """The tool's error text (without the SDK's ``Error executing tool <tool>: ``)."""

    async def called() -> Any:
        async with Client(build_server(runs_dir)) as client:
            return await client.call_tool(tool, arguments)

    result = asyncio.run(called())
    assert result.is_error, result.structured_content
    return result.content[0].text.removeprefix(f"Error executing tool {tool}: ")


def _rest(runs_dir: str, route: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``POST /api/g/local/<route>``: the status and the ``detail``."""
    got = TestClient(create_app(runs_dir)).post(f"/api/g/local/{route}", json=body)
    return got.status_code, got.json()["detail"]


UNKNOWN = f"unknown table 'bogus' (tables: {TABLES})"
NOSUCH = "{runs} (scenarios there: veyru)"
SCENARIO = (
    "--scenario 'nosuch' has no run under " + NOSUCH,
    "scenario",
    "scenario 'nosuch' has no run in the server's runs directory (scenarios there: veyru)",
)
STATUS = (f"--status {STATUS_WORDS}", "status", f"status {STATUS_WORDS}")
KNOB_NOPE = (f"--knob 'nope': {NO_OPERATOR}", "knob", f"knob 'nope': {NO_OPERATOR}")

EXPORT_CASES: dict[str, tuple[list[str], dict[str, Any], int, list[tuple[str, str, str]]]] = {
    "unknown-and-repeated-table": (
        ["--frames", "bogus,run_level,run_level"], {"frames": ["bogus", "run_level", "run_level"]},
        64, [(f"--frames: {UNKNOWN}", "frames", UNKNOWN),
             ("--frames 'bogus,run_level,run_level': the table 'run_level' is named twice",
              "frames", "the table 'run_level' is named twice")]),
    "two-bad-knob-conditions": (
        ["--knob", "nope", "--knob", ">3"], {"selection": {"knob": ["nope", ">3"]}},
        64, [KNOB_NOPE, ("--knob '>3': no knob name before >", "knob",
                         "knob '>3': no knob name before >")]),
    "two-knob-values-the-runs-cannot-read": (
        ["--knob", "round_count>=abc", "--knob", "round_count<xyz"],
        {"selection": {"knob": ["round_count>=abc", "round_count<xyz"]}},
        65, [(f"--knob 'round_count>=abc': {ABC}", "knob", f"knob 'round_count>=abc': {ABC}"),
             (f"--knob 'round_count<xyz': {XYZ}", "knob", f"knob 'round_count<xyz': {XYZ}")]),
    # the CLI's first line was --knob, REST's frames
    "a-knob-condition-before-the-tables": (
        ["--knob", "nope", "--frames", "bogus"],
        {"selection": {"knob": ["nope"]}, "frames": ["bogus"]},
        64, [KNOB_NOPE, (f"--frames: {UNKNOWN}", "frames", UNKNOWN)]),
    # the knob's value needs the runs read: not judged while a value before it is refused
    "scenario-status-and-knob-value": (
        ["--scenario", "nosuch", "--status", "bogus", "--knob", "round_count>=abc"],
        {"selection": {"scenario": ["nosuch"], "status": "bogus", "knob": ["round_count>=abc"]}},
        65, [SCENARIO, STATUS]),
    # the named run that no longer resolves is not looked for while a table is refused
    "a-table-refused-before-any-run-is-read": (
        ["--run-id", "veyru/1", "--frames", "bogus"],
        {"selection": {"kind": "run_ids", "run_ids": ["veyru/1"]}, "frames": ["bogus"]},
        64, [(f"--frames: {UNKNOWN}", "frames", UNKNOWN)]),
}  # fmt: skip
"""Each export request refused on more than one value: the CLI's flags, REST's body (MCP's
arguments: its fields, the selection's flat), the CLI's exit code, and each value refused as
``(the CLI's line, REST's field, REST's message)``; MCP's line is REST's messages ``; ``-joined
(REST answers 422)."""


def _mcp_export_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """REST's body as MCP ``export_runs`` takes it (the selection's fields flat)."""
    selection = {k: v for k, v in body.get("selection", {}).items() if k != "kind"}
    return {**{k: v for k, v in body.items() if k != "selection"}, **selection}


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
@pytest.mark.parametrize("case", list(EXPORT_CASES))
def test_an_export_names_every_bad_value_in_the_requests_order_on_every_surface(
    surface: str, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the first alone (the repeat, not the unknown table; the first knob condition;
    the status, not the scenario), the CLI's first line its ``--knob``, REST's its ``frames``;
    and a refused table still had the named runs read."""
    runs = _runs(tmp_path)
    out = tmp_path / "out"
    flags, body, code, refused = EXPORT_CASES[case]
    if surface == "cli":
        said = [line.format(runs=runs) for line, _, _ in refused]
        assert _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), *flags) == (code, said)
    elif surface == "rest":
        selection = {"kind": "filters", **body.get("selection", {})}
        status, detail = _rest(runs, "runs/export/csv", {**body, "selection": selection})
        each = [{"field": f, "message": m} for _, f, m in refused]
        first = {**each[0], "errors": each} if len(each) > 1 else each[0]
        assert (status, detail) == (422, first)
    else:
        arguments = _mcp_export_arguments(body)
        line = _mcp(runs, "export_runs", out=str(out), **arguments)
        assert line == "; ".join(m for _, _, m in refused)
    assert not out.exists()


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
def test_named_runs_missing_and_unreadable_are_both_named_once_the_values_pass(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once every value passes, the runs are read: an id that no longer resolves and one naming
    a run that cannot be read are both named (was: the missing one alone)."""
    runs = _runs(tmp_path)
    (Path(runs) / "veyru" / "1790000100" / "labels.json").write_bytes(b'{"x": "\xff"}')
    ids = ["veyru/1", "veyru/1790000100"]
    missing = "run ids that no longer resolve: veyru/1"
    out = tmp_path / "out"
    if surface == "cli":
        code, lines = _cli(capsys, "export", "--runs-dir", runs, "--out", str(out),
                           *(f for r in ids for f in ("--run-id", r)))  # fmt: skip
        assert (code, lines[0]) == (66, missing)
        assert lines[1].startswith(
            "runs that cannot be read: veyru/1790000100: veyru/1790000100/labels.json is not "
            "UTF-8 text"
        )
        assert len(lines) == 2
    elif surface == "rest":
        status, detail = _rest(runs, "runs/export/csv",
                               {"selection": {"kind": "run_ids", "run_ids": ids}})  # fmt: skip
        assert (status, detail["field"], detail["message"]) == (404, "run_ids", missing)
        assert [e["field"] for e in detail["errors"]] == ["run_ids", "run_ids"]
        assert list(detail["errors"][1]["unreadable_runs"]) == ["veyru/1790000100"]
    else:
        line = _mcp(runs, "export_runs", out=str(out), run_ids=ids)
        assert line.startswith(
            f"{missing}; runs that cannot be read: veyru/1790000100: "
            "veyru/1790000100/labels.json is not UTF-8 text"
        )
    assert not out.exists()


ANALYSIS_SAID = {
    "cli": (65, ["--scenario 'nosuch' has no run under {runs} (scenarios there: veyru)",
                 f"--status {STATUS_WORDS}"]),
    "rest": (422, [{"field": "scenario", "message": "scenario 'nosuch' has no run in the "
                    "server's runs directory (scenarios there: veyru)"},
                   {"field": "status", "message": f"status {STATUS_WORDS}"}]),
    "mcp": "scenario 'nosuch' has no run in the server's runs directory (scenarios there: veyru)"
           f"; status {STATUS_WORDS}",
}  # fmt: skip


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
def test_an_analysis_names_every_bad_value_of_its_selection(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scenario nosuch`` with ``status bogus`` (and a knob condition its runs would judge):
    both values named, in the selection's order (was: the scenario alone)."""
    runs = _runs(tmp_path)
    selection = {"scenario": ["nosuch"], "status": "bogus", "knob": ["round_count>=abc"]}
    if surface == "cli":
        code, lines = ANALYSIS_SAID["cli"]
        got = _cli(capsys, "analyze", "--runs-dir", runs, "--measure", "run_id:count",
                   "--scenario", "nosuch", "--status", "bogus", "--knob", "round_count>=abc")  # fmt: skip
        assert got == (code, [line.format(runs=runs) for line in lines])
    elif surface == "rest":
        status, each = ANALYSIS_SAID["rest"]
        body = {"selection": {"kind": "filters", **selection},
                "measures": [{"field": "run_id", "agg": "count"}]}  # fmt: skip
        assert _rest(runs, "runs/analysis/query", body) == (status, {**each[0], "errors": each})
    else:
        line = _mcp(runs, "analyze_runs", measures=["run_id:count"],
                    selection={"kind": "filters", **selection})  # fmt: skip
        assert line == ANALYSIS_SAID["mcp"]


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_a_cohort_evaluation_names_every_bad_value_of_its_selection(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``glossogen evaluate --runs-dir`` and MCP ``evaluate_runs``: as the export and the
    analysis, before any flow run (was: the scenario alone)."""
    runs = _runs(tmp_path)
    if surface == "cli":
        got = _cli(capsys, "evaluate", "--runs-dir", runs, "--scenario", "nosuch", "--status",
                   "bogus", "--knob", "round_count>=abc", "--knob", "nope")  # fmt: skip
        assert got == (65, [
            f"--scenario 'nosuch' has no run under {runs} (scenarios there: veyru)",
            f"--status {STATUS_WORDS}",
            f"--knob 'nope': {NO_OPERATOR}",
        ])  # fmt: skip
    else:
        line = _mcp(runs, "evaluate_runs", scenario=["nosuch"], status="bogus",
                    knob=["round_count>=abc", "nope"])  # fmt: skip
        assert line == (
            "scenario 'nosuch' has no run in the server's runs directory (scenarios there: "
            f"veyru); status {STATUS_WORDS}; knob 'nope': {NO_OPERATOR}"
        )
    assert sorted(p.name for p in (Path(runs) / "veyru").iterdir()) == ["1790000000", "1790000100"]
    assert not list(Path(runs).glob("veyru/*/*_report.json"))


@pytest.mark.parametrize("surface", ["rest", "mcp-export", "mcp-analysis"])
def test_a_list_item_is_named_by_its_argument_never_its_index(surface: str, tmp_path: Path) -> None:
    """A run id that is no string: named ``run_ids`` (``selection.run_ids`` where the tool's
    argument is the selection) with the value sent, as the CLI names ``--run-id`` (was
    pydantic's ``run_ids.0`` / ``selection.run_ids.0``)."""
    runs = _runs(tmp_path)
    why = "Input should be a valid string"
    if surface == "rest":
        body = {"selection": {"kind": "run_ids", "run_ids": ["veyru/1790000000", 5]}}
        assert _rest(runs, "runs/export/csv", body) == (
            422,
            {"field": "selection.run_ids", "message": f"5: {why}"},
        )
    elif surface == "mcp-export":
        line = _mcp(runs, "export_runs", out=str(tmp_path / "out"), run_ids=["veyru/1790000000", 5])
        assert line == f"run_ids 5: {why}"
    else:
        line = _mcp(runs, "analyze_runs", measures=["run_id:count"],
                    selection={"kind": "run_ids", "run_ids": ["veyru/1790000000", 5]})  # fmt: skip
        assert line == f"selection.run_ids 5: {why}"


def test_the_cli_refuses_a_source_run_dir_not_utf8_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r"""``--source-run-dir`` (and ``--donor-run-dir``) as every other path flag: one line, 64,
    the byte as typed (was: read on, with no such refusal)."""
    runs = tmp_path / "runs"
    bad = str(tmp_path / "r") + "\udcff"
    shown = str(tmp_path / "r") + "\\xff"
    fork = ["fork-at-round", "veyru", "--source-run-dir", bad, "--after-round", "1",
            "--runs-dir", str(runs)]  # fmt: skip
    assert _cli(capsys, *fork) == (64, [f"--source-run-dir '{shown}': not UTF-8 text"])
    cross = ["cross-run-replace-agent", "veyru", "--source-run-dir", str(tmp_path),
             "--after-round", "1", "--replaced-agent-id", "a", "--donor-run-dir", bad,
             "--donor-agent-id", "b", "--model", "m", "--provider", "openai",
             "--runs-dir", str(runs)]  # fmt: skip
    assert _cli(capsys, *cross) == (64, [f"--donor-run-dir '{shown}': not UTF-8 text"])
    assert not runs.exists()


def test_the_library_refuses_a_derived_runs_source_not_utf8(tmp_path: Path) -> None:
    """The derive's own check (the request value's), before the source is read."""
    from glossogen.derive import DeriveError, ForkRequest, prepare_fork

    request = ForkRequest("veyru", str(tmp_path / "r") + "\udcff", 1, str(tmp_path / "runs"))
    with pytest.raises(DeriveError) as refused:
        prepare_fork(request)
    assert (str(refused.value), refused.value.exit_code) == (
        f"source_run_dir {str(tmp_path / 'r') + chr(0xDCFF)!r}: not UTF-8 text",
        64,
    )
    assert not (tmp_path / "runs").exists()


def test_a_single_runs_evaluate_flow_run_is_named_by_its_run_id(
    prefect_api: str, tmp_path: Path
) -> None:
    """The ``evaluate`` flow run was named ``evaluate-<the run folder's absolute path>``: now by
    the run's id, as the other flows name theirs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    from flows.evaluate import evaluate
    from glossogen.evaluation import EvaluationRequest

    folder = play_run(str(tmp_path / "runs"), "veyru", rounds=1, now_unix=1_790_000_300)
    asyncio.run(evaluate(run_dir=folder.url, request=EvaluationRequest(metrics=["round_success"])))
    flows = FlowFilter(name=FlowFilterName(any_=["evaluate"]))
    with get_client(sync_client=True) as client:
        flow_runs = client.read_flow_runs(flow_filter=flows)
    names = [r.name for r in flow_runs if r.parameters.get("run_dir") == folder.url]
    assert names == ["evaluate-veyru/1790000300"]
    assert json.dumps(names).find(str(tmp_path)) == -1


SUMMARIES = [
    ({"scored": 1, "skipped": 1, "refused": 1}, "evaluated 2 of 3 runs under runs: 1 scored, 1 "
     "skipped (report up to date); 1 not evaluated (veyru/3) · evaluation cost $0.000000"),
    ({"scored": 1}, "evaluated 1 of 1 run under runs: 1 scored, 0 skipped (report up to date); "
     "0 not evaluated · evaluation cost $0.000000"),
    ({"failed": 7}, "evaluated 0 of 7 runs under runs: 0 scored, 0 skipped (report up to date); "
     "7 not evaluated (veyru/1, veyru/2, veyru/3, veyru/4, veyru/5 ...) · evaluation cost "
     "$0.000000"),
]  # fmt: skip


@pytest.mark.parametrize(("states", "line"), SUMMARIES)
def test_a_cohorts_summary_is_one_sentence_of_counts(states: dict[str, int], line: str) -> None:
    """Was ``evaluated 3 runs ...: 1 scored, 1 skipped (...), 1 not evaluated``: the runs
    evaluated of those selected, and the ones not evaluated by id."""
    from flows.evaluate import CohortEvaluation
    from glossogen.evaluation._cohort import RunOutcome
    from glossogen.launch import cohort_summary

    kinds = [state for state, n in states.items() for _ in range(n)]
    outcomes = [RunOutcome(run_id=f"veyru/{i}", state=s) for i, s in enumerate(kinds, start=1)]
    done = CohortEvaluation(selected=len(outcomes), outcomes=outcomes)
    assert cohort_summary(done, "runs") == line


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
def test_an_analysis_names_a_knob_condition_with_no_operator_beside_the_other_values(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u50a: ``glossogen analyze ... --knob nope`` named the knob alone (exit 64) where REST's
    and MCP's analysis named the scenario, the status and the knob: now the CLI names all
    three too, in the selection's order, exiting with the first's code."""
    runs = _runs(tmp_path)
    scenario = "'nosuch' has no run {where} (scenarios there: veyru)"
    if surface == "cli":
        got = _cli(capsys, "analyze", "--runs-dir", runs, "--measure", "run_id:count",
                   "--scenario", "nosuch", "--status", "bogus", "--knob", "nope")  # fmt: skip
        assert got == (65, [
            "--scenario " + scenario.format(where=f"under {runs}"),
            f"--status {STATUS_WORDS}",
            f"--knob 'nope': {NO_OPERATOR}",
        ])  # fmt: skip
        return
    served = "scenario " + scenario.format(where="in the server's runs directory")
    selection = {"kind": "filters", "scenario": ["nosuch"], "status": "bogus", "knob": ["nope"]}
    if surface == "rest":
        body = {"selection": selection, "measures": [{"field": "run_id", "agg": "count"}]}
        each = [{"field": "scenario", "message": served},
                {"field": "status", "message": f"status {STATUS_WORDS}"},
                {"field": "knob", "message": f"knob 'nope': {NO_OPERATOR}"}]  # fmt: skip
        assert _rest(runs, "runs/analysis/query", body) == (422, {**each[0], "errors": each})
    else:
        line = _mcp(runs, "analyze_runs", measures=["run_id:count"], selection=selection)
        assert line == f"{served}; status {STATUS_WORDS}; knob 'nope': {NO_OPERATOR}"
