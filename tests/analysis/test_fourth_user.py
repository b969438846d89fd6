"""What a fourth fresh user of the analysis found (issue 33), each asserted as a user sees it.

The same query through ``glossogen analyze``, REST (``POST .../analysis/query``) and MCP
(``analyze_runs``) gives the same answer; the terminal and a CSV show it as the tests say.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.export.test_cli import _export as export  # glossogen export in this process
from tests.mcp.conftest import call, in_process_session, refusal

API = "/api/g/local/runs/analysis"


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("fourth-user-runs")))


@pytest.fixture(scope="module")
def labelled(cohort: Cohort, tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    """r1 labelled ``arm`` = the text ``(blank)``, r2 ``arm`` = ``x`` and the flag ``pilot``;
    r3, r4 and r5 carry no label (the blank group)."""
    root = tmp_path_factory.mktemp("fourth-user-labelled") / "runs"
    shutil.copytree(cohort.runs_dir, root, ignore=shutil.ignore_patterns(".glossogen"))
    for short, labels in (("r1", {"arm": "(blank)"}), ("r2", {"arm": "x", "pilot": True})):
        (root / cohort.ids[short] / "labels.json").write_text(json.dumps(labels))
    return Cohort(str(root), cohort.ids)


def mcp(runs: str, cwd: Path, **arguments: Any) -> Any:
    async def flow() -> Any:
        async with in_process_session(Path(runs), cwd) as session:
            return await call(session, "analyze_runs", **arguments)

    return asyncio.run(flow())


def csv_lines(capsys: pytest.CaptureFixture[str], runs: str, *flags: str) -> list[str]:
    assert analyze("--runs-dir", runs, *flags, "--csv") == 0
    return capsys.readouterr().out.splitlines()


def test_a_label_that_reads_blank_is_not_the_blank_group_on_any_surface(
    labelled: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = labelled.runs_dir
    flags = ["--by", "label.arm", "--measure", "task_done:count"]
    cli = analyze_json(capsys, "--runs-dir", runs, *flags)
    assert [(g["keys"]["label.arm"], g["cells"][0]["value"]) for g in cli["groups"]] == [
        ("(blank)", 1.0), ("x", 1.0), (None, 3.0)]  # fmt: skip
    assert csv_lines(capsys, runs, *flags) == [
        "label.arm,measure,value,n,missing,runs,low,high,interval",
        '"""(blank)""",task_done:count,1,1,0,1,,,',
        "x,task_done:count,1,1,0,1,,,",
        "(blank),task_done:count,3,3,0,3,,,",
    ]
    assert analyze("--runs-dir", runs, *flags) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in table[2:]] == ['"(blank)"', "x", "(blank)"]
    client = TestClient(create_app(runs))
    query = {"by": ["label.arm"], "measures": [{"field": "task_done", "agg": "count"}]}
    assert client.post(f"{API}/query", json=query).json() == cli
    drawn = client.post(f"{API}/render", json={"result": cli, "chart": "table"}).json()
    assert [line.split(",")[0] for line in drawn["csv"].splitlines()[1:]] == [
        '"""(blank)"""', "x", "(blank)"]  # fmt: skip
    assert mcp(runs, tmp_path, by=["label.arm"], measures=["task_done:count"]) == cli


def test_filter_and_compare_both_read_blank_text_as_the_label_and_an_empty_arm_as_blank(
    labelled: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = labelled.runs_dir
    measure = ["--measure", "mean_chars_per_round"]
    picked = analyze_json(capsys, "--runs-dir", runs, *measure, "--filter", "label.arm=(blank)")
    assert (picked["runs_after_filters"], picked["groups"][0]["cells"][0]["value"]) == (1, 10.0)
    # The text arm is r1 alone (10), as the filter; the empty arm is r3, r4, r5 (30, none, 50).
    literal = analyze_json(capsys, "--runs-dir", runs, *measure, "--compare",
                           "label.arm=(blank),x", "--resamples", "10")  # fmt: skip
    (first,) = literal["comparisons"]
    assert (first["a"], first["b"], first["a_value"], first["b_value"], first["n_a"]) == (
        "(blank)", "x", 10.0, 20.0, 1)  # fmt: skip
    blank = analyze_json(capsys, "--runs-dir", runs, *measure, "--compare", "label.arm=,x",
                         "--resamples", "10")  # fmt: skip
    (second,) = blank["comparisons"]
    assert (second["a"], second["b"], second["a_value"], second["b_value"], second["n_a"]) == (
        None, "x", 40.0, 20.0, 2)  # fmt: skip
    compared = {arm: csv_lines(capsys, runs, *measure, "--compare", f"label.arm={arm},x",
                               "--resamples", "10")[4] for arm in ("", "(blank)")}  # fmt: skip
    assert {arm: line.split(",")[:4] for arm, line in compared.items()} == {
        "": ["mean_chars_per_round:mean", "label.arm", "(blank)", "x"],
        "(blank)": ["mean_chars_per_round:mean", "label.arm", '"""(blank)"""', "x"],
    }
    client = TestClient(create_app(runs))
    body = {"measures": [{"field": "mean_chars_per_round"}], "resamples": 10,
            "compare": {"key": "label.arm", "a": None, "b": "x"}}  # fmt: skip
    assert client.post(f"{API}/query", json=body).json() == blank
    assert mcp(runs, tmp_path, measures=["mean_chars_per_round"], resamples=10,
               compare="label.arm=,x") == blank  # fmt: skip
    assert analyze("--runs-dir", runs, *measure, "--compare", "label.arm=,nope") == 64
    assert capsys.readouterr().err == (
        "glossogen: error: --compare 'label.arm=,nope': no row has label.arm 'nope' (it holds "
        "(blank), x; an empty arm names the rows without it)\n"
    )


def test_a_label_flag_is_the_exported_True_and_a_filter_true_or_True_selects_it(
    labelled: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The contract (exporting-runs.md): a bare tag's ``label_flag.`` cell is ``True``; a
    text field compares case-insensitively, so ``=true`` and ``=True`` both pick r2 alone."""
    runs = labelled.runs_dir
    flags = ["--by", "label_flag.pilot", "--measure", "task_done:count"]
    cli = analyze_json(capsys, "--runs-dir", runs, *flags)
    assert [g["keys"]["label_flag.pilot"] for g in cli["groups"]] == ["True", None]
    assert csv_lines(capsys, runs, *flags)[1:] == [
        "True,task_done:count,1,1,0,1,,,", "(blank),task_done:count,4,4,0,4,,,"]  # fmt: skip
    client = TestClient(create_app(runs))
    assert client.post(f"{API}/query", json={
        "by": ["label_flag.pilot"], "measures": [{"field": "task_done", "agg": "count"}],
    }).json() == cli  # fmt: skip
    assert mcp(runs, tmp_path, by=["label_flag.pilot"], measures=["task_done:count"]) == cli
    # r2 alone carries the flag: one run, its mean_chars_per_round 20.
    measure = ["--measure", "mean_chars_per_round"]
    picked = {value: analyze_json(capsys, "--runs-dir", runs, *measure, "--filter",
                                  f"label_flag.pilot={value}")
              for value in ("true", "True", "TRUE")}  # fmt: skip
    assert {value: (got["runs_after_filters"], got["groups"][0]["cells"][0]["value"])
            for value, got in picked.items()} == {  # fmt: skip
        "true": (1, 20.0), "True": (1, 20.0), "TRUE": (1, 20.0)}  # fmt: skip
    body = {"measures": [{"field": "mean_chars_per_round"}],
            "filters": [{"field": "label_flag.pilot", "op": "=", "value": True}]}  # fmt: skip
    assert client.post(f"{API}/query", json=body).json() == picked["true"]
    assert mcp(runs, tmp_path, measures=["mean_chars_per_round"],
               filters=["label_flag.pilot=true"]) == picked["true"]  # fmt: skip
    # The arm ``true`` is the flagged runs (r2: 20); the empty arm r1, r3, r5 (10, 30, 50; r4
    # has no value), as the frame holds them: the arm is named ``True``.
    compared = analyze_json(capsys, "--runs-dir", runs, *measure, "--compare",
                            "label_flag.pilot=,true", "--resamples", "10")  # fmt: skip
    (arms,) = compared["comparisons"]
    assert (arms["a"], arms["b"], arms["a_value"], arms["b_value"], arms["n_a"], arms["n_b"]) == (
        None, "True", 30.0, 20.0, 3, 1)  # fmt: skip


EMPTY = [
    (["--filter", "scenario_name="], "--filter 'scenario_name=': empty value"),
    (["--filter", "round_budget_chars="], "--filter 'round_budget_chars=': empty value"),
    (["--label", ""], "--label '': empty value"),
    (["--label", "=x"], "--label '=x': empty label name"),
    (["--label", "sweep="], "--label 'sweep=': empty value"),
    (["--contains-agent-id", ""], "--contains-agent-id '': empty value"),
    (["--run-id-contains", ""], "--run-id-contains '': empty value"),
    (["--scenario", ""], "--scenario '': empty value"),
    (["--run-id", ""], "--run-id needs a run id (<scenario>/<run_dir_name>)"),
    (["--status", ""], "--status '': empty value"),
    (["--knob", ""], "--knob '': no operator; write <knob><op><value> with op one of != >= "
                     "<= = > <"),
]  # fmt: skip
"""Each empty value and the one line the CLI refuses it with (exit 64)."""


def test_an_empty_value_is_refused_on_every_surface_and_by_export(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = cohort.runs_dir
    for flags, line in EMPTY:
        assert analyze("--runs-dir", runs, "--measure", "task_done", *flags) == 64, flags
        assert capsys.readouterr() == ("", f"glossogen: error: {line}\n")
        if flags[0] != "--filter":  # the selection: export's own, refused alike
            out = tmp_path / "out"
            assert export("--runs-dir", runs, "--out", str(out), *flags) == 64, flags
            assert capsys.readouterr().err == f"glossogen: error: {line}\n"
            assert not out.exists()
    client = TestClient(create_app(runs))
    measures = [{"field": "task_done"}]
    bodies = [
        {"filters": [{"field": "scenario_name", "op": "=", "value": ""}]},
        {"selection": {"labels": ["sweep="]}},
        {"selection": {"labels": ["=x"]}},
        {"selection": {"run_id_contains": ""}},
        {"selection": {"contains_agent_id": " "}},
    ]
    assert [
        client.post(f"{API}/query", json={**b, "measures": measures}).json()["detail"]
        for b in bodies
    ] == [  # fmt: skip
        {"field": "filters", "message": "filter 'scenario_name=': empty value"},
        {"field": "labels", "message": "labels 'sweep=': empty value"},
        {"field": "labels", "message": "labels '=x': empty label name"},
        {"field": "run_id_contains", "message": "run_id_contains '': empty value"},
        {"field": "contains_agent_id", "message": "contains_agent_id ' ': empty value"},
    ]
    listed = client.get(f"{API}/fields?label=")
    assert (listed.status_code, listed.json()["detail"]) == (
        422, {"field": "label", "message": "label '': empty value"})  # fmt: skip

    async def refused() -> list[str]:
        async with in_process_session(Path(runs), tmp_path) as session:
            return [await refusal(session, "analyze_runs", measures=["task_done"],
                                  filters=["scenario_name="]),
                    await refusal(session, "analyze_runs", measures=["task_done"],
                                  selection={"labels": [""]})]  # fmt: skip

    # A selection is read by the SDK's argument model, which words its tool error itself.
    assert asyncio.run(refused()) == [
        "filter 'scenario_name=': empty value",
        "labels '': empty value",  # its line, as REST's message (was 'selection.filters: ...')
    ]


def test_fields_refuses_a_scenario_not_utf8_at_the_round_grain(cohort: Cohort) -> None:
    got = TestClient(create_app(cohort.runs_dir)).get(f"{API}/fields?grain=round&scenario=%FF")
    assert (got.status_code, got.json()["detail"]) == (
        422, {"field": "scenario", "message": "scenario '\\udcff': not UTF-8 text"})  # fmt: skip


def test_render_refuses_a_cell_no_answer_can_hold(cohort: Cohort) -> None:
    client = TestClient(create_app(cohort.runs_dir))
    query = {"grain": "round", "by": ["round_budget_chars"], "resamples": 10,
             "measures": [{"field": "round_success", "agg": "rate"},
                          {"field": "mean_chars_per_round"}]}  # fmt: skip
    answered = client.post(f"{API}/query", json=query).json()
    at = "result.groups.0.cells"
    edits: list[tuple[int, dict[str, Any], str, str]] = [
        (1, {"n": -5}, f"{at}.1.n", "Input should be greater than or equal to 0"),
        (1, {"missing": -1}, f"{at}.1.missing", "Input should be greater than or equal to 0"),
        (1, {"runs": 2.5}, f"{at}.1.runs", "Input should be a valid integer"),
        (1, {"n": "4"}, f"{at}.1.n", "Input should be a valid integer"),
        (1, {"runs": 9}, f"{at}.1", "runs 9 is above n 4 (its rows' runs)"),
        (1, {"n": 0, "runs": 0}, f"{at}.1", "value 15 with n 0 (a value needs a row)"),
        (0, {"value": 1.5}, f"{at}.0", "value 1.5 of a rate is outside [0, 1]"),
        (1, {"value": -1e308, "interval": {"low": -1e308, "high": 1e308, "method": "bootstrap"}},
         f"{at}.1", "value -1e+308: its interval's end 1e+308 is beyond a float's reach from "
                    "it (no bar can be drawn)"),
    ]  # fmt: skip
    got = []
    for index, edit, _, _ in edits:
        result = json.loads(json.dumps(answered))
        result["groups"][0]["cells"][index].update(edit)
        drawn = client.post(f"{API}/render", json={"result": result, "chart": "bar"})
        got.append((drawn.status_code, drawn.json()["detail"]))
    assert got == [(422, {"field": f, "message": m}) for _, _, f, m in edits]
    assert (
        client.post(f"{API}/render", json={"result": answered, "chart": "bar"}).status_code == 200
    )


def test_a_dashboard_whose_chart_names_differ_by_case_alone_is_refused_over_rest(
    cohort: Cohort,
) -> None:
    client = TestClient(create_app(cohort.runs_dir))
    body = {"queries": {"q": {"measures": [{"field": "task_done"}]}},
            "charts": [{"name": "a", "query": "q"}, {"name": "A", "query": "q"}]}  # fmt: skip
    got = client.put(f"{API}/dashboards/cased", json=body)
    assert (got.status_code, got.json()["detail"]["message"]) == (422, (
        "charts.1.name 'A': its file A.csv is also written by chart 'a' (as a.csv, case aside); "
        "rename the chart"))  # fmt: skip
    assert not Path(cohort.runs_dir, ".glossogen", "dashboards", "cased.yaml").exists()


def create_app(runs: str) -> Any:
    from glossogen.server import create_app as made

    return made(runs)
