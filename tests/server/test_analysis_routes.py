"""The analysis endpoints over real HTTP (``glossogen serve``): the same numbers as
``glossogen analyze --json`` for the same query, and each refusal in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.analysis import cohort as made
from tests.analysis.cohort import Cohort
from tests.server.serving import serving_here

API = "/api/g/local/runs/analysis"
QUERY: dict[str, Any] = {
    "grain": "round", "by": ["round_budget_chars"],
    "measures": [{"field": "round_success", "agg": "rate"}, {"field": "mean_chars_per_round"}],
    "compare": {"key": "round_budget_chars", "a": "300", "b": "600"},
    "seed": 7, "resamples": 10,
}  # fmt: skip


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return made.build(Path(tmp_path_factory.mktemp("analysis-rest-runs")))


def test_the_same_answer_as_the_cli_and_one_line_refusals(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = made.analyze_json(capsys, "--runs-dir", cohort.runs_dir, *made.SURFACE_FLAGS)
    fields_cli = made.analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--grain", "round",
                          "--knob", "round_budget_chars=300", "--list-fields")  # fmt: skip
    with serving_here(cohort.runs_dir) as base:
        got = httpx.post(f"{base}{API}/query", json=QUERY, timeout=None)
        assert got.status_code == 200, got.text
        params = {"grain": "round", "knob": "round_budget_chars=300"}
        listed = httpx.get(f"{base}{API}/fields", params=params, timeout=None)
        assert listed.status_code == 200, listed.text

        def refused(body: dict[str, Any], status: int = 422) -> dict[str, Any]:
            answer = httpx.post(f"{base}{API}/query", json=body, timeout=None)
            assert answer.status_code == status, answer.text
            return answer.json()["detail"]

        refusals = [
            refused({"measures": [{"field": "round_success", "agg": "avg"}]}),
            refused({"measures": [{"field": "nope"}]}),
            refused({"measures": [{"field": "task_done"}], "sort": "nope"}),
            refused(
                {
                    "measures": [{"field": "task_done"}],
                    "selection": {"kind": "filters", "knob": ["x"]},
                }
            ),  # fmt: skip
            refused({"measures": [{"field": "task_done"}], "max_runs": 2}, 413),
            refused({"measures": [{"field": "task_done"}], "by": [""]}),  # as --by ''
            refused({"measures": [{"field": "task_done"}], "by": ["a", "b", "c"]}),  # --by a,b,c
        ]
        bad_grain = httpx.get(f"{base}{API}/fields", params={"grain": "turn"}, timeout=None)
        # A run re-evaluated after a query is read again (the run cache's stamp changed).
        report = Path(cohort.runs_dir, cohort.ids["r5"], "veyru_report.json")
        written = json.loads(report.read_text())
        del written["metrics"]["mean_chars_per_round"]
        report.write_text(json.dumps(written))
        again = httpx.post(f"{base}{API}/query", json=QUERY, timeout=None).json()
        other_group = httpx.post(f"{base}/api/g/lab/runs/analysis/query", json=QUERY, timeout=None)
    assert got.json() == cli
    assert listed.json() == fields_cli
    assert made.cells(got.json()) == made.SURFACE_CELLS
    assert made.cells(again) == [*made.SURFACE_CELLS[:5], (None, "mean_chars_per_round:mean",
                                                            None, 0, 2)]  # fmt: skip
    assert (listed.json()["runs"], listed.json()["rows"]) == (2, 4)
    assert refusals == [
        {"field": "measures", "message": "measure 'round_success:avg': unknown aggregate 'avg' "
         "(one of mean, median, sum, count, min, max, stddev, sem, rate)"},  # as MCP, the CLI
        {"field": "measures", "message": "measure 'nope': no such field at the run grain of "
         "this selection (list the grain's fields)"},
        {"field": "sort", "message": "sort 'nope' is neither a measure (task_done:mean) nor a key"},
        {"field": "knob", "message": "knob 'x': no operator; write <knob><op><value> "
         "with op one of != >= <= = > <"},
        {"limit": "max_runs", "message": "the selection holds 5 runs, over the 2-run limit; "
         "narrow the selection or raise max_runs"},
        {"field": "by", "message": "key '': a key is empty"},  # as the engine words it
        {"field": "by", "message": "key 'a,b,c': at most two keys"},  # was pydantic's words
    ]  # fmt: skip
    assert bad_grain.status_code == 422
    assert bad_grain.json()["detail"] == {
        "field": "grain",
        "message": "grain 'turn' is not one of run, round, agent, message, call, observation",
    }  # as --grain words it: the value and the grains
    assert (other_group.status_code, other_group.json()) == (  # no run records the group
        404, {"detail": {"message": "no group 'lab': no run records it"}}
    )  # fmt: skip


def test_a_dashboard_is_saved_and_opened_on_s3(s3_bucket: str) -> None:
    import s3fs
    from fastapi.testclient import TestClient

    from glossogen.analysis._dashboard import dump_dashboard, parse_dashboard
    from glossogen.server import create_app

    board = {"title": "Budget study", "queries": {"q": QUERY},
             "charts": [{"name": "c", "query": "q", "chart": "line"}]}  # fmt: skip
    client = TestClient(create_app(f"{s3_bucket}/runs"))
    before = client.get(f"{API}/dashboards")
    saved = client.put(f"{API}/dashboards/study", json=board)
    listed = client.get(f"{API}/dashboards")
    opened = client.get(f"{API}/dashboards/study")
    missing = client.get(f"{API}/dashboards/absent")
    key = f"{s3_bucket.removeprefix('s3://')}/runs/.glossogen/dashboards/study.yaml"
    stored = s3fs.S3FileSystem().cat_file(key).decode()
    assert (before.status_code, before.json()) == (200, {"names": []})
    assert (saved.status_code, saved.json()) == (200, {
        "name": "study", "path": ".glossogen/dashboards/study.yaml",  # not the bucket's URL
    })  # fmt: skip
    assert listed.json() == {"names": ["study"]}
    assert opened.status_code == 200
    assert stored == dump_dashboard(parse_dashboard(json.dumps(board), "board.json"))
    assert opened.json() == parse_dashboard(stored, "study.yaml").model_dump(mode="json")
    assert missing.status_code == 404


def test_a_damaged_run_is_named_in_the_notes(tmp_path: Path) -> None:
    cohort = made.build(tmp_path / "made")
    runs_dir = tmp_path / "runs"
    damaged, kept = cohort.ids["r1"], cohort.ids["r2"]
    for run_id in (damaged, kept):
        shutil.copytree(Path(cohort.runs_dir, run_id), runs_dir / run_id)
    (runs_dir / damaged / "veyru_report.json").write_text("[]")
    with serving_here(str(runs_dir)) as base:
        got = httpx.post(
            f"{base}{API}/query", json={"measures": [{"field": "total_chars", "agg": "count"}]},
            timeout=None,
        )  # fmt: skip
        listed = httpx.get(f"{base}{API}/fields", timeout=None)
        seed = httpx.post(f"{base}{API}/query", json={"measures": [{"field": "x"}], "seed": -1},
                          timeout=None)  # fmt: skip
    assert got.status_code == 200, got.text
    assert got.json()["run_ids"] == [kept]
    assert got.json()["notes"] == [
        f"skipped {damaged}: {damaged}/veyru_report.json is not a JSON object (it holds a list)"
    ]
    assert listed.json()["notes"] == got.json()["notes"]
    assert seed.status_code == 422
    assert seed.json()["detail"] == {
        "field": "seed",
        "message": "seed -1: must be at least 0",
    }


def test_render_refuses_a_result_out_of_shape_and_draws_blank_and_empty_heatmaps(
    tmp_path: Path,
) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    cohort = made.build(tmp_path / "runs")
    client = TestClient(create_app(cohort.runs_dir))
    query = {"grain": "round", "by": ["round_budget_chars", "channel_noise_level"],
             "measures": [{"field": "round_success", "agg": "rate"}], "resamples": 10}  # fmt: skip
    result = client.post(f"{API}/query", json=query).json()
    assert (None, "0.1") in [
        (g["keys"]["round_budget_chars"], g["keys"]["channel_noise_level"])
        for g in result["groups"]
    ]
    drawn = client.post(f"{API}/render", json={"result": result, "chart": "heatmap"})
    assert drawn.status_code == 200, drawn.text
    assert drawn.json()["svg"].startswith("<?xml")
    empty = client.post(
        f"{API}/query",
        json={**query, "filters": [{"field": "round_number", "op": ">", "value": "9"}]},
    ).json()
    assert empty["groups"] == []
    drawn_empty = client.post(f"{API}/render", json={"result": empty, "chart": "heatmap"})
    assert drawn_empty.status_code == 200, drawn_empty.text
    bent = {**result, "query": {**result["query"], "by": ["round_budget_chars"]}}
    refused = client.post(f"{API}/render", json={"result": bent, "chart": "bar"})
    assert refused.status_code == 422
    assert refused.json()["detail"] == {"field": "result", "message": (
        "groups.0 is keyed by ['round_budget_chars', 'channel_noise_level'], "
        "the query by ['round_budget_chars']"
    )}  # fmt: skip


def test_saving_a_dashboard_into_a_runs_dir_that_is_a_file_is_503(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    runs = tmp_path / "runs"
    runs.write_text("")
    client = TestClient(create_app(str(runs)))
    board = {"title": "t", "queries": {"q": QUERY},
             "charts": [{"name": "c", "query": "q", "chart": "line"}]}  # fmt: skip
    saved = client.put(f"{API}/dashboards/study", json=board)
    assert saved.status_code == 503
    assert saved.json()["detail"] == {  # the server's folder, not its path
        "message": "the server's runs directory is a file, not a folder"
    }


DASH = {"queries": {"q": {"measures": [{"field": "task_done"}]}},
        "charts": [{"name": "c", "query": "q"}]}  # fmt: skip
IN_THE_WAY = "dashboards cannot be kept: a file stands where the folder .glossogen/dashboards goes"


def test_dashboards_in_the_way_are_409_with_one_line(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.mkdir()
    (a / ".glossogen").write_text("not a folder")
    (c / ".glossogen").mkdir(parents=True)
    (c / ".glossogen" / "dashboards").write_text("not a folder")
    with TestClient(create_app(str(c))) as client:  # the folder itself a file
        assert [client.get(f"{API}/dashboards").status_code,
                client.get(f"{API}/dashboards/x").status_code,
                client.put(f"{API}/dashboards/x", json=DASH).status_code] == [409] * 3  # fmt: skip
        assert client.get(f"{API}/dashboards").json() == {"detail": {"message": IN_THE_WAY}}
    (b / ".glossogen" / "dashboards" / "dirdash.yaml").mkdir(parents=True)
    with TestClient(create_app(str(a))) as client:
        opened = client.get(f"{API}/dashboards/x")
        saved = client.put(f"{API}/dashboards/new", json=DASH)
        listed = client.get(f"{API}/dashboards")
    assert (opened.status_code, opened.json()) == (409, {"detail": {"message": IN_THE_WAY}})
    assert (saved.status_code, saved.json()) == (409, {"detail": {"message": IN_THE_WAY}})
    # h45fix33b: the list answered 200 {"names": []} (README: 409, as an open and a save).
    assert (listed.status_code, listed.json()) == (409, {"detail": {"message": IN_THE_WAY}})
    assert (a / ".glossogen").read_text() == "not a folder"
    with TestClient(create_app(str(b))) as client:
        saved = client.put(f"{API}/dashboards/dirdash", json=DASH)
        listed = client.get(f"{API}/dashboards")
        opened = client.get(f"{API}/dashboards/dirdash")
    assert (saved.status_code, saved.json()) == (409, {"detail": {"message": (
        "dashboard 'dirdash': .glossogen/dashboards/dirdash.yaml is a folder, not a file"
    )}})  # fmt: skip
    assert (listed.status_code, listed.json()) == (200, {"names": []})  # names only files
    # h45fix33b: an open answered 404 (README: 409, as a save).
    assert (opened.status_code, opened.json()) == (409, {"detail": {"message": (
        "dashboard 'dirdash': .glossogen/dashboards/dirdash.yaml is a folder, not a file"
    )}})  # fmt: skip
    assert [p.name for p in (b / ".glossogen" / "dashboards").iterdir()] == ["dirdash.yaml"]


def test_the_dashboard_routes_never_name_the_servers_runs_dir(tmp_path: Path) -> None:
    """h45fix33b: a saved dashboard's path, a missing one's 404, a bad file's 422 named the
    server's runs dir by its path (``/abs/runs/.glossogen/dashboards/board.yaml``)."""
    runs = tmp_path / "runs"
    kept = runs / ".glossogen" / "dashboards"
    kept.mkdir(parents=True)
    (kept / "broken.yaml").write_text("title: [x\nqueries: {}\n")
    (kept / "bin.yaml").write_bytes(b"\xff\xfe")
    with serving_here(str(runs)) as base:
        saved = httpx.put(f"{base}{API}/dashboards/board", json=DASH, timeout=None)
        missing = httpx.get(f"{base}{API}/dashboards/nosuch", timeout=None)
        broken = httpx.get(f"{base}{API}/dashboards/broken", timeout=None)
        binary = httpx.get(f"{base}{API}/dashboards/bin", timeout=None)
    assert (saved.status_code, saved.json()) == (
        200, {"name": "board", "path": ".glossogen/dashboards/board.yaml"})  # fmt: skip
    assert (kept / "board.yaml").is_file()
    assert (missing.status_code, missing.json()) == (404, {"detail": {
        "message": "no dashboard 'nosuch' in .glossogen/dashboards"}})  # fmt: skip
    assert (broken.status_code, broken.json()) == (422, {"detail": {"field": "dashboard",
        "message": ".glossogen/dashboards/broken.yaml: line 2, column 8: expected ',' or ']', "
                   "but got ':'"}})  # fmt: skip
    assert (binary.status_code, binary.json()) == (422, {"detail": {"field": "dashboard",
        "message": ".glossogen/dashboards/bin.yaml: not UTF-8 text"}})  # fmt: skip


def test_a_runs_dir_gone_after_serving_is_503_and_no_dashboard_is_saved(tmp_path: Path) -> None:
    """h45fix33b: the runs dir moved away while served, a save answered 200 and made it anew
    (``runs/.glossogen/dashboards/z.yaml``) and the list answered ``{"names": []}``."""
    runs = tmp_path / "runs"
    runs.mkdir()
    gone = {"detail": {"message": "the server's runs directory does not exist"}}
    with serving_here(str(runs)) as base:
        runs.rename(tmp_path / "runs2")
        saved = httpx.put(f"{base}{API}/dashboards/z", json=DASH, timeout=None)
        listed = httpx.get(f"{base}{API}/dashboards", timeout=None)
        opened = httpx.get(f"{base}{API}/dashboards/z", timeout=None)
    assert (saved.status_code, saved.json()) == (503, gone)
    assert (listed.status_code, listed.json()) == (503, gone)
    assert (opened.status_code, opened.json()) == (503, gone)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs2"]
    assert list((tmp_path / "runs2").iterdir()) == []


def test_a_dashboard_name_that_is_not_utf8_is_named_as_sent(tmp_path: Path) -> None:
    r"""h45fix33b: ``PUT .../dashboards/%FF`` was refused as ``'\ufffd': a dashboard's name ...``
    (the byte read as U+FFFD); every other text that is not UTF-8 is ``'\udcff'``."""
    with serving_here(str(tmp_path)) as base:
        saved = httpx.put(f"{base}{API}/dashboards/%FF", json=DASH, timeout=None)
        opened = httpx.get(f"{base}{API}/dashboards/a%FFb", timeout=None)
    assert (saved.status_code, saved.json()) == (422, {"detail": {
        "field": "dashboard", "message": "'\\udcff': not UTF-8 text"}})  # fmt: skip
    assert (opened.status_code, opened.json()) == (422, {"detail": {
        "field": "dashboard", "message": "'a\\udcffb': not UTF-8 text"}})  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_the_fields_list_money_as_the_decimals_it_is_held_as(cohort: Cohort) -> None:
    """h45fix33b: ``total_cost_usd`` and ``judge_cost_usd`` were listed as ``Float64``."""
    with serving_here(cohort.runs_dir) as base:
        got = httpx.get(f"{base}{API}/fields", timeout=None)
    money = {f["name"]: f["dtype"] for f in got.json()["fields"] if f["name"].endswith("_usd")}
    assert money == {"total_cost_usd": "Decimal(precision=38, scale=18)",
                     "judge_cost_usd": "Decimal(precision=38, scale=18)"}  # fmt: skip


def test_fields_refuse_a_metric_no_report_holds(cohort: Cohort) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    with TestClient(create_app(cohort.runs_dir)) as client:
        got = client.get(f"{API}/fields", params={"grain": "observation", "metric": "nope"})
    assert (got.status_code, got.json()) == (422, {"detail": {"field": "metric", "message": (
        "metric 'nope': no report of this selection has this metric (they have "
        "mean_chars_per_round, round_success, task_done, team_split)"
    )}})  # fmt: skip


def test_a_long_dashboard_name_is_cut_in_its_refusal(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    long = "n" * 300
    with TestClient(create_app(str(tmp_path))) as client:
        got = client.put(f"{API}/dashboards/{long}", json=DASH)
    assert (got.status_code, got.json()) == (422, {"detail": {"field": "dashboard", "message": (
        f"{'n' * 80!r}...: a dashboard's name is letters, digits, _ . - (64 at most)"
    )}})  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_a_body_that_is_not_utf8_is_422_in_the_one_shape(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    with TestClient(create_app(str(tmp_path))) as client:
        got = client.post(f"{API}/query", content=b'{"measures": ["\xff"]}',
                          headers={"content-type": "application/json"})  # fmt: skip
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "body", "message": "the body is not UTF-8 JSON"}})  # fmt: skip
    with TestClient(create_app(str(tmp_path))) as client:  # not JSON: the same line (README)
        got = client.post(f"{API}/query", content=b'{"measures": [',
                          headers={"content-type": "application/json"})  # fmt: skip
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "body", "message": "the body is not UTF-8 JSON"}})  # fmt: skip


def test_a_group_no_run_records_is_404(cohort: Cohort) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    gone = {"detail": {"message": "no group 'nosuch': no run records it"}}
    with TestClient(create_app(cohort.runs_dir)) as client:
        query = client.post("/api/g/nosuch/runs/analysis/query",
                            json={"measures": [{"field": "task_done"}]})  # fmt: skip
        fields = client.get("/api/g/nosuch/runs/analysis/fields")
        none = client.post(f"{API}/query", json={"measures": [{"field": "task_done"}],
                           "selection": {"kind": "filters", "run_id_contains": "zz"}})  # fmt: skip
    assert (query.status_code, query.json()) == (404, gone)
    assert (fields.status_code, fields.json()) == (404, gone)
    assert (none.status_code, none.json()["runs"]) == (200, 0)  # the group exists: no run matched


def test_a_dashboard_whose_chart_would_write_the_run_list_is_not_saved(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    board = {**DASH, "charts": [{"name": "runs", "query": "q"}]}
    with TestClient(create_app(str(tmp_path))) as client:
        got = client.put(f"{API}/dashboards/study", json=board)
    assert (got.status_code, got.json()) == (422, {"detail": {"field": "body", "message": (
        "charts.0.name 'runs': its file runs.csv is also one of the report's own "
        "files; rename the chart"
    )}})  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_a_run_id_that_no_longer_resolves_is_404_as_the_export_refuses_it(cohort: Cohort) -> None:
    """The cohort is the export's selection: an unknown id is refused, not silently dropped."""
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    known = cohort.ids["r1"]
    refused = {"detail": {"field": "run_ids", "missing_run_ids": ["veyru/9999999999"],
                          "message": "run ids that no longer resolve: veyru/9999999999"}}  # fmt: skip
    with TestClient(create_app(cohort.runs_dir)) as client:
        query = client.post(f"{API}/query", json={"measures": [{"field": "total_chars"}],
                            "selection": {"kind": "run_ids",
                                          "run_ids": [known, "veyru/9999999999"]}})  # fmt: skip
        fields = client.get(f"{API}/fields", params={"run_id": [known, "veyru/9999999999"]})
        exported = client.post("/api/g/local/runs/export/csv",
                               json={"selection": {"kind": "run_ids",
                                                   "run_ids": [known, "veyru/9999999999"]}})  # fmt: skip
    assert (query.status_code, query.json()) == (404, refused)
    assert (fields.status_code, fields.json()) == (404, refused)
    assert exported.status_code == 404  # the export's routes refuse it with the same status


@pytest.mark.parametrize(
    ("flags", "body", "groups"),
    [  # no run selected: no group at all (README: an empty table with a note), both surfaces
        (["--run-id-contains", "zz"], {"selection": {"kind": "filters", "run_id_contains": "zz"}},
         []),
        # runs selected, every row filtered out: the one group of every row, its cell n 0
        (["--filter", "total_chars>999999"],
         {"filters": [{"field": "total_chars", "op": ">", "value": "999999"}]},
         [{"keys": {}, "cells": [{"measure": "total_chars:mean", "value": None, "n": 0,
                                  "missing": 0, "runs": 0,
                                  "interval": {"low": None, "high": None, "method": "none"}}]}]),
    ],
)  # fmt: skip
def test_an_empty_answer_is_the_same_on_the_cli_and_rest(
    cohort: Cohort, capsys: pytest.CaptureFixture[str], flags: list[str], body: dict[str, Any],
    groups: list[dict[str, Any]],
) -> None:  # fmt: skip
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    cli = made.analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--measure", "total_chars",
                            *flags)  # fmt: skip
    with TestClient(create_app(cohort.runs_dir)) as client:
        got = client.post(f"{API}/query", json={"measures": [{"field": "total_chars"}], **body})
    assert got.status_code == 200
    assert cli["groups"] == got.json()["groups"] == groups
    assert cli["notes"] == got.json()["notes"]


def test_an_unknown_grain_in_a_query_body_is_named_as_the_cli_names_it(cohort: Cohort) -> None:
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    client = TestClient(create_app(cohort.runs_dir))
    grains = "is not one of run, round, agent, message, call, observation"
    measures = [{"field": "task_done"}]
    answers = [client.post(f"{API}/query", json={"grain": grain, "measures": measures})
               for grain in ("week", 5, None)]  # fmt: skip
    assert [(a.status_code, a.json()["detail"]) for a in answers] == [
        (422, {"field": "grain", "message": f"grain 'week' {grains}"}),
        (422, {"field": "grain", "message": f"grain 5 {grains}"}),
        (422, {"field": "grain", "message": f"grain null {grains}"}),
    ]
