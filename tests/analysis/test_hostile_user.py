"""What a hostile new user of the analysis found (issue 33), each fixed and asserted as seen.

A text field measured (``--measure status``) is named as typed, with what a text field takes;
a value that is not UTF-8 text is one line naming it wherever it comes in: an integer flag on
the command line, a query parameter of ``GET .../fields``, a string of a JSON body escaping a
lone surrogate (was a 500 where the answer echoed it), a dashboard file; a misspelt parameter
of ``GET .../fields`` is refused (it was ignored: every run answered); and the page shows a
saved dashboard's refused query, or a dashboard it cannot open, as one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.analysis.cohort import Cohort, analyze, build

API = "/api/g/local/runs/analysis"

BAD_BYTE = os.fsdecode(b"r\xffn")
"""A command-line value holding a byte that is not UTF-8, as Python reads it (surrogateescape)."""

TEXT_MEASURE = (
    "'status': status is text, not a number: count it ('status:count') or group by it ({by} status)"
)


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("hostile-user-runs")))


@pytest.fixture
def client(cohort: Cohort) -> Iterator[TestClient]:
    """The REST app over the cohort, started and stopped as a server is."""
    from glossogen.server import create_app

    with TestClient(create_app(cohort.runs_dir)) as started:
        yield started


def test_a_text_field_measured_is_named_as_typed_with_what_a_text_field_takes(
    cohort: Cohort, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``--measure 'status:mean': status is not a number (it holds String)``: the mean
    the user never typed, and nothing of what works."""
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "status") == 64
    bare = capsys.readouterr()
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "status:median") == 64
    typed = capsys.readouterr()
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "noise_replacement_mode:sum") == 64
    knob = capsys.readouterr()
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "status:count", "--csv") == 0
    counted = capsys.readouterr()
    rest = client.post(f"{API}/query", json={"measures": [{"field": "status"}]})
    assert bare == ("", f"glossogen: error: --measure {TEXT_MEASURE.format(by='--by')}\n")
    assert typed == ("", "glossogen: error: --measure 'status:median': status is text, not a "
                         "number: count it ('status:count') or group by it (--by status)\n")  # fmt: skip
    assert knob == ("", (
        "glossogen: error: --measure 'noise_replacement_mode:sum': knob.noise_replacement_mode "
        "is text, not a number: count it ('noise_replacement_mode:count') or group by it (--by "
        "noise_replacement_mode)\n"
    ))  # fmt: skip
    assert counted == ("measure,value,n,missing,runs,low,high,interval\n"
                       "status:count,5,5,0,5,,,\n", "")  # fmt: skip
    assert (rest.status_code, rest.json()) == (422, {"detail": {
        "field": "measures", "message": f"measure {TEXT_MEASURE.format(by='by')}"}})  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ["--limit", BAD_BYTE],
        [f"--limit={BAD_BYTE}"],
        ["--seed", BAD_BYTE],
        ["--resamples", BAD_BYTE],
        ["--max-runs", BAD_BYTE],
    ],  # fmt: skip
    ids=["limit", "limit=", "seed", "resamples", "max-runs"],
)
def test_an_integer_flag_that_is_not_utf8_is_one_line_naming_it(
    cohort: Cohort, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """Was ``Invalid value for '--limit': Input should be a valid string, unable to parse raw
    data as a unicode string: got 'r\\udcffn'``: now as the text flags say it."""
    flag = args[0].split("=")[0]
    assert analyze("--runs-dir", cohort.runs_dir, "--measure", "task_done", *args) == 64
    assert capsys.readouterr() == ("", f"glossogen: error: {flag} 'r\\xffn': not UTF-8 text\n")


def test_a_limit_byte_that_is_not_utf8_on_a_real_command_line(cohort: Cohort) -> None:
    """The bytes as a shell passes them (``--limit $'\\xff'``): one line, 64, no traceback."""
    done = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"glossogen", b"analyze", b"--runs-dir",
         os.fsencode(cohort.runs_dir), b"--measure", b"task_done", b"--limit", b"\xff"],
        capture_output=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (
        64, b"", b"glossogen: error: --limit '\\xff': not UTF-8 text\n"
    )  # fmt: skip


def test_fields_refuses_a_parameter_not_utf8_as_the_cli_refuses_the_flag(
    cohort: Cohort, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """``?label=%FF`` was read as U+FFFD and answered 200 (no run has it)."""
    assert analyze("--runs-dir", cohort.runs_dir, "--list-fields", "--label", BAD_BYTE) == 64
    cli = capsys.readouterr()
    got = [client.get(f"{API}/fields?{q}") for q in
           ("label=%FF", "scenario=veyru&label=a%FFb", "knob=seed%3D%FF", "grain=%FF")]  # fmt: skip
    assert cli == ("", "glossogen: error: --label 'r\\xffn': not UTF-8 text\n")
    assert [(g.status_code, g.json()["detail"]) for g in got] == [
        (422, {"field": "label", "message": "label '\\udcff': not UTF-8 text"}),
        (422, {"field": "label", "message": "label 'a\\udcffb': not UTF-8 text"}),
        (422, {"field": "knob", "message": "knob 'seed=\\udcff': not UTF-8 text"}),
        (422, {"field": "grain", "message": "grain '\\udcff': not UTF-8 text"}),
    ]


def test_fields_refuses_a_parameter_it_does_not_take(client: TestClient) -> None:
    """A misspelt filter (``scenaro``, ``labels``) was ignored: the answer was every run's."""
    got = [client.get(f"{API}/fields?{q}") for q in ("scenaro=veyru", "grain=run&labels=x",
                                                      "%FF=1")]  # fmt: skip
    taken = ("grain, metric, max_runs, scenario, label, knob, run_id, status, run_id_contains, "
             "contains_agent_id")  # fmt: skip
    assert [(g.status_code, g.json()["detail"]) for g in got] == [
        (422, {"field": "scenaro", "message": f"'scenaro': not a parameter of this route (it "
                                              f"takes {taken})"}),
        (422, {"field": "labels", "message": f"'labels': not a parameter of this route (it "
                                             f"takes {taken})"}),
        (422, {"field": "query", "message": f"'\\udcff': not a parameter of this route (it "
                                            f"takes {taken})"}),
    ]  # fmt: skip
    ok = client.get(f"{API}/fields?grain=round&scenario=veyru&label=x&status=completed"
                    "&run_id_contains=1&contains_agent_id=a&max_runs=9")  # fmt: skip
    assert (ok.status_code, ok.json()["runs"]) == (200, 0)


def send(client: TestClient, method: str, url: str, body: bytes) -> tuple[int, Any]:
    """``body`` as sent (JSON's escapes kept): the status and the JSON answered."""
    got = client.request(method, url, content=body, headers={"content-type": "application/json"})
    return got.status_code, got.json()


def test_a_json_string_escaping_a_lone_surrogate_is_refused_not_a_500(
    cohort: Cohort, client: TestClient
) -> None:
    """Unchecked text fields took ``"\\udcff"``: the answer echoing it failed to encode (500),
    and a dashboard saved with it could no longer be opened (500 on every open)."""
    measures = '"measures": [{"field": "task_done"}]'
    result = client.post(f"{API}/query", json={"by": ["status"], "measures": [
        {"field": "task_done"}], "resamples": 10}).json()  # fmt: skip
    result["groups"][0]["keys"]["status"] = "\udcff"
    render = json.dumps({"result": result, "chart": "bar"}).encode()
    got = [
        send(client, "POST", f"{API}/query",
             f'{{{measures}, "selection": {{"labels": ["\\udcff"]}}}}'.encode()),
        send(client, "POST", f"{API}/query", f'{{{measures}, "filters": [{{"field": "seed", '
                                             f'"op": "=", "value": "\\udcff"}}]}}'.encode()),
        send(client, "POST", f"{API}/query", f'{{{measures}, "compare": {{"key": "seed", '
                                             f'"a": "1", "b": "\\udcff"}}}}'.encode()),
        send(client, "POST", "/api/g/local/runs/export/preview",
             b'{"selection": {"scenario": ["\\udcff"]}}'),
        send(client, "POST", f"{API}/render", render),
        send(client, "PUT", f"{API}/dashboards/x",
             f'{{"title": "\\udcff", "queries": {{"q": {{{measures}}}}}, '
             '"charts": [{"name": "c", "query": "q"}]}'.encode()),
    ]  # fmt: skip
    assert got == [
        (422, {"detail": {"field": "labels", "message": "labels '\\udcff': not UTF-8 text"}}),
        (422, {"detail": {"field": "filters",
                          "message": "filter 'seed=\\udcff': not UTF-8 text"}}),
        (422, {"detail": {"field": "compare",
                          "message": "compare 'seed=1,\\udcff': not UTF-8 text"}}),
        (422, {"detail": {"field": "scenario", "message": "scenario '\\udcff': not UTF-8 text"}}),
        (422, {"detail": {"field": "result.groups.0.keys.status",
                          "message": "result.groups.0.keys.status '\\udcff': not UTF-8 text"}}),
        (422, {"detail": {"field": "body", "message": "title '\\udcff': not UTF-8 text"}}),
    ]  # fmt: skip
    assert not Path(cohort.runs_dir, ".glossogen", "dashboards", "x.yaml").exists()


def test_a_dashboard_file_escaping_a_lone_surrogate_is_one_line(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.yaml"
    board.write_text('title: t\nqueries: {q: {measures: [{field: task_done}]}}\n'
                     'charts: [{name: c, query: q, title: "\\uDCFF"}]\n')  # fmt: skip
    out = tmp_path / "out"
    assert (
        analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(board), "--out", str(out)) == 64
    )
    assert capsys.readouterr() == (
        "",
        f"glossogen: error: --dashboard {board}: charts.0.title '\\xff': not UTF-8 text\n",
    )
    assert not out.exists()


def test_the_page_shows_a_saved_dashboards_refusals_as_one_line(
    cohort: Cohort, tmp_path: Path, browser: Any
) -> None:
    """A saved dashboard whose query the engine refuses, one the page cannot open (a title
    escaping a lone surrogate, written by hand: was a 500 whose body is no JSON, and the page
    stayed as it was), and a server gone: each is the page's one error line."""
    import shutil

    from tests.server.serving import serving_here

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, ignore=shutil.ignore_patterns(".glossogen"))
    kept = runs / ".glossogen" / "dashboards"
    kept.mkdir(parents=True)
    (kept / "study.yaml").write_text(
        "title: Study\nqueries:\n  text: {measures: [{field: status}]}\n"
        "  fine: {measures: [{field: task_done, agg: rate}]}\n"
        "charts:\n- {name: bad, query: text}\n- {name: good, query: fine}\n"
    )
    (kept / "odd.yaml").write_text(
        'title: "\\uDCFF"\nqueries: {q: {measures: [{field: task_done}]}}\n'
        "charts: [{name: c, query: q}]\n"
    )
    errors: list[str] = []
    with serving_here(str(runs)) as base:
        page = browser.new_page(viewport={"width": 1100, "height": 1300})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/analysis")
        page.wait_for_selector("#analysis[data-ready=true]")
        page.select_option("#dashboard-names", "study")
        page.click("#open-dashboard")
        page.click("button.dashboard-chart[data-chart=bad]")
        page.wait_for_selector("#analysis-error:not([hidden])")
        refused = page.inner_text("#analysis-error")
        page.click("button.dashboard-chart[data-chart=good]")
        page.wait_for_selector("#analysis[data-answered='1']")
        cleared = page.locator("#analysis-error").is_hidden()
        page.select_option("#dashboard-names", "odd")
        page.click("#open-dashboard")
        page.wait_for_selector("#analysis-error:not([hidden])")
        unopened = page.inner_text("#analysis-error")
    page.click("#run-query")  # the server has stopped
    page.wait_for_selector("#analysis-error:has-text('reached')")
    gone = page.inner_text("#analysis-error")
    # The page's form always holds an aggregate (its select shows mean): it asks status:mean.
    assert refused == (
        "measures: measure 'status:mean': status is text, not a number: count it "
        "('status:count') or group by it (by status)"
    )
    assert cleared
    assert unopened == (  # its file within the runs dir: no server path shown
        "dashboard: .glossogen/dashboards/odd.yaml: title '\\udcff': not UTF-8 text"
    )
    assert gone == "the server could not be reached"
    assert errors == []


def test_the_pages_refuse_a_filter_not_utf8_in_their_address(client: TestClient) -> None:
    """``/analysis?label=%FF`` carried U+FFFD over as the cohort (and its fields query), and
    ``/?label=%FF`` listed no run: each now shows the export's line for the flag, 422."""
    import re

    got = [client.get(u) for u in ("/?label=%FF", "/analysis?label=%FF",
                                   "/?scenario=veyru&knob=seed%3D%FF")]  # fmt: skip
    shown = [(g.status_code, re.findall(r'<p class="error"[^>]*>([^<]*)</p>', g.text),
              'id="analysis"' in g.text) for g in got]  # fmt: skip
    assert shown == [
        (422, ["glossogen: error: --label &#39;\\udcff&#39;: not UTF-8 text"], False),
        (422, ["glossogen: error: --label &#39;\\udcff&#39;: not UTF-8 text"], False),
        (422, ["glossogen: error: --knob &#39;seed=\\udcff&#39;: not UTF-8 text"], False),
    ]


def test_a_bad_selection_key_is_placed_alike_by_rest_and_mcp(
    cohort: Cohort, client: TestClient, tmp_path: Path
) -> None:
    """MCP named pydantic's tag of the selection's kind (``selection.filters.bogus``), which
    no request holds; REST already said ``selection.bogus``. An empty run id is the library's
    own check (``export.check_run_ids``): its line, placed by its field ``run_ids`` as every
    REST cohort route places it (export's preview, csv, raw; the query's ``labels``) and as
    MCP's ``export_runs`` and ``evaluate_runs`` say it (was, over MCP:
    ``selection.run_ids: run_ids needs a run id ...``)."""
    import asyncio

    from tests.mcp.conftest import in_process_session, refusal

    selections: list[dict[str, Any]] = [{"bogus": 1}, {"kind": "run_ids", "run_ids": [""]}]

    async def asked() -> list[str]:
        async with in_process_session(Path(cohort.runs_dir), tmp_path) as session:
            return [await refusal(session, "analyze_runs", measures=["task_done"], selection=s)
                    for s in selections]  # fmt: skip

    by_mcp = asyncio.run(asked())
    by_rest = [client.post(f"{API}/query", json={"measures": [{"field": "task_done"}],
                                                  "selection": s}).json()["detail"]
               for s in selections]  # fmt: skip
    assert by_mcp == [
        "selection.bogus 1: Extra inputs are not permitted",  # the value echoed, as REST's
        "run_ids needs a run id (<scenario>/<run_dir_name>)",  # as export_runs says it
    ]
    assert by_rest[0] == {"field": "selection.bogus", "message": by_mcp[0]}
    assert by_rest[1] == {"field": "run_ids", "message": by_mcp[1]}
