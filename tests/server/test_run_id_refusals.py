"""Issue 32, a fresh user's run ids over HTTP: every run route (the page, events, summary, Stop)
judges the id as sent with the library's resolver and refuses it in the CLI's and MCP's words.

Was: a trailing ``/`` (``veyru/1796446580/``) or a path (``/tmp/x/veyru/1796446580``,
``veyru/1796446580/labels.json``) answered a bare ``{"detail": "Not Found"}`` (the page
redirected first), where the export and MCP say ``not a run id`` / ``a path, not a run id``;
the page, events and summary said ``no run veyru/1: it has no event log`` where Stop and MCP
say ``run ids that no longer resolve: veyru/1``, and Stop's 404 had no ``field``; a run of
another group was ``no run ... in group 'lab'`` where the export's routes count its id as one
that no longer resolves. The analysis routes built their selection by hand; now they answer
through ``analysis.answer``/``fields`` with the group, as the CLI and MCP do without one.

Each surface is driven as its user drives it (``tests/surfaces/drive.py``'s helpers): the
CLI in this process, the FastAPI app over HTTP, the MCP tools through the SDK's client.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from glossogen.analysis import Query, answer
from glossogen.server import create_app
from tests.fixtures.played_runs import claim_unbegun, play_run
from tests.surfaces.drive import Answer, _cli, _mcp

LAUNCH = 1_796_446_580
"""The played run's launch second: its id is ``veyru/1796446580``."""
RUN = f"veyru/{LAUNCH}"
API = "/api/g/local/runs"
SHAPE = "<scenario>/<run_dir_name>, relative to the runs directory"

RUN_IDS = {
    "trailing-slash": (f"{RUN}/", f"{{name}} '{RUN}/': not a run id ({SHAPE})", 64),
    "absolute-path": (f"/tmp/x/{RUN}", f"{{name}} '/tmp/x/{RUN}': a path, not a run id: {SHAPE}",
                      64),
    "file-of-a-run": (f"{RUN}/labels.json", f"{{name}} '{RUN}/labels.json': not a run id "
                      f"({SHAPE})", 64),
    "no-such-run": ("veyru/1", "run ids that no longer resolve: veyru/1", 66),
    "no-timestamp": ("veyru/abc", "run ids that no longer resolve: veyru/abc", 66),
}  # fmt: skip
"""A run id as a user sends it, the library's line for it (``{name}``: the surface's name of
the field, for a malformed id) and the CLI's exit code for that fault (64 usage, 66 no run)."""

SURFACES = ["cli-export", "mcp-get_run", "mcp-read_run_events", "mcp-stop_run",
            "rest-page", "rest-events", "rest-summary", "rest-stop"]  # fmt: skip
"""Every place a user names one run by its id (the CLI's export takes ``--run-id``)."""


def sent_through(surface: str, runs: Path, run_id: str, capsys: Any) -> Answer:
    """Send ``run_id`` through ``surface``; a REST refusal's JSON must be exactly
    ``{"detail": {"field": "run_id", "message": ...}}`` (the page: its error line)."""
    kind, _, what = surface.partition("-")
    if kind == "cli":
        out = str(runs.parent / "out")
        return _cli(capsys, "export", "--runs-dir", str(runs), "--out", out, "--run-id", run_id)
    if kind == "mcp":
        return _mcp(str(runs), what, run_id=run_id)[0]
    client = TestClient(create_app(str(runs)))
    if what == "page":
        got = client.get(f"/runs/{run_id}")
        assert got.headers["content-type"].startswith("text/html")
        found = got.text.split('<p class="error" id="page-error">', 1)[1].split("</p>", 1)[0]
        return Answer(True, html.unescape(found), got.status_code)
    path = f"{API}/{run_id}/{what}"
    got = client.post(path) if what == "stop" else client.get(path)
    detail = got.json()["detail"]
    assert set(detail) == {"field", "message"}, detail
    return Answer(True, f"{detail['field']}: {detail['message']}", got.status_code)


def expected(surface: str, line: str, code: int) -> Answer:
    """How ``surface`` words the library's ``line``: the CLI's flag and exit code, MCP's
    argument and tool error, REST's field ``run_id`` and 404 (the page shows the line)."""
    if surface.startswith("cli"):
        return Answer(True, line.format(name="--run-id"), code)
    said = line.format(name="run_id")
    if surface.startswith("mcp"):
        return Answer(True, said, "tool error")
    if surface == "rest-page":
        return Answer(True, said, 404)
    return Answer(True, f"run_id: {said}", 404)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("case", list(RUN_IDS))
def test_a_bad_run_id_is_the_librarys_line_on_every_run_route_as_on_the_cli_and_mcp(
    case: str, surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trailing ``/``, a path, a file of a run, an id naming no run: one line per fault on
    every surface, the run left as it was (nothing stopped, nothing written)."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    before = sorted(p.name for p in (runs / RUN).iterdir())
    sent, line, code = RUN_IDS[case]
    assert sent_through(surface, runs, sent, capsys) == expected(surface, line, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    assert sorted(p.name for p in (runs / RUN).iterdir()) == before


@pytest.mark.parametrize("route", ["page", "events", "summary", "stop"])
def test_a_trailing_slash_is_refused_not_redirected(route: str, tmp_path: Path) -> None:
    """The page answered a 307 to the id without its ``/`` (then served the run), the API routes
    a bare ``Not Found``: now the refusal itself, at once."""
    play_run(str(tmp_path), "veyru", rounds=1, now_unix=LAUNCH)
    client = TestClient(create_app(str(tmp_path)), follow_redirects=False)
    path = f"/runs/{RUN}/" if route == "page" else f"{API}/{RUN}//{route}"
    got = client.post(path) if route == "stop" else client.get(path)
    line = f"run_id '{RUN}/': not a run id ({SHAPE})"
    assert got.status_code == 404
    if route == "page":
        assert f'<p class="error" id="page-error">{line}</p>' in html.unescape(got.text)
    else:
        assert got.json() == {"detail": {"field": "run_id", "message": line}}


@pytest.mark.parametrize("route", ["page", "events", "summary", "mcp"])
def test_a_claim_whose_log_has_not_begun_is_one_line_on_rest_and_mcp(
    route: str, tmp_path: Path
) -> None:
    """A queued run (claimed, no log yet) was ``no run <id>: it has no event log`` over REST:
    now MCP's line (its reading tools), 404 naming ``run_id``."""
    folder = claim_unbegun(str(tmp_path), now_unix=LAUNCH)
    line = f"run '{folder.run_id}' has no event log in the server's runs directory"
    if route == "mcp":
        got = _mcp(str(tmp_path), "read_run_events", run_id=folder.run_id)[0]
        assert got == Answer(True, line, "tool error")
        return
    client = TestClient(create_app(str(tmp_path)))
    if route == "page":
        page = client.get(f"/runs/{folder.run_id}")
        assert page.status_code == 404
        assert f'<p class="error" id="page-error">{line}</p>' in html.unescape(page.text)
        return
    got = client.get(f"{API}/{folder.run_id}/{route}")
    assert (got.status_code, got.json()) == (404, {"detail": {"field": "run_id", "message": line}})


@pytest.mark.parametrize("route", ["events", "summary", "stop", "export"])
def test_a_run_of_another_group_no_longer_resolves_in_this_one_as_the_export_says(
    route: str, tmp_path: Path
) -> None:
    """Was ``no run veyru/1796446580 in group 'lab'`` (no ``field``) where the group's export
    route says the id no longer resolves: now that line on every group route."""
    play_run(str(tmp_path), "veyru", rounds=1, now_unix=LAUNCH)  # group local
    play_run(str(tmp_path), "veyru", rounds=1, group_slug="lab", now_unix=LAUNCH + 1)
    client = TestClient(create_app(str(tmp_path)))
    line = f"run ids that no longer resolve: {RUN}"
    if route == "export":
        got = client.post("/api/g/lab/runs/export/csv",
                          json={"selection": {"kind": "run_ids", "run_ids": [RUN]}})  # fmt: skip
        assert (got.status_code, got.json()) == (404, {"detail": {
            "field": "run_ids", "message": line, "missing_run_ids": [RUN]}})  # fmt: skip
        return
    path = f"/api/g/lab/runs/{RUN}/{route}"
    got = client.post(path) if route == "stop" else client.get(path)
    assert (got.status_code, got.json()) == (404, {"detail": {"field": "run_id", "message": line}})
    served = client.get(f"/api/g/local/runs/{RUN}/summary")  # its own group's route serves it
    assert (served.status_code, served.json()["status"]) == (200, "completed")


_LOG_OPENS: list[str] = []
_WATCHED: set[str] = set()
_HOOKED: list[bool] = []
"""Whether the audit hook is in (it cannot be taken out: one per process, idle unless watching)."""


def _count_log_opens(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook: each ``open`` of a watched file (the interpreter's own event, not ours)."""
    if event == "open" and args and str(args[0]) in _WATCHED:
        _LOG_OPENS.append(str(args[0]))


def test_the_group_of_a_listed_run_comes_from_the_run_index_not_its_log(tmp_path: Path) -> None:
    """Each live route read the log's head for its group on every request; once the run list
    holds the run, its summary opens the log once (its ``RunView``), not three times (before
    the list read it: its head to refuse a log that is no run's, ``export.log_refused``, its
    head for its group, its view)."""
    if not _HOOKED:
        sys.addaudithook(_count_log_opens)
        _HOOKED.append(True)
    folder = play_run(str(tmp_path), "veyru", rounds=1, group_slug="lab", now_unix=LAUNCH)
    log = str(Path(folder.url) / "veyru.jsonl")
    client = TestClient(create_app(str(tmp_path)))
    opened = []
    _WATCHED.add(log)
    try:
        for listed in (False, True):
            if listed:
                assert client.get("/").status_code == 200  # the list reads the run once
            _LOG_OPENS.clear()
            got = client.get(f"/api/g/lab/runs/{folder.run_id}/summary")
            assert (got.status_code, got.json()["status"]) == (200, "completed")
            opened.append(len(_LOG_OPENS))
    finally:
        _WATCHED.discard(log)
    assert opened == [3, 1]
    index = client.app.state.run_cache  # type: ignore[attr-defined]  # TestClient types app as ASGIApp; it is our FastAPI app
    assert index.known_group(str(tmp_path), folder.run_id) == "lab"
    assert index.known_group(str(tmp_path), "veyru/1") is None


QUERY = {"measures": [{"field": "run_id", "agg": "count"}], "by": ["round_count"]}


@pytest.mark.parametrize("surface", ["cli", "rest", "mcp"])
def test_an_analysis_of_one_groups_run_is_the_same_answer_on_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REST's group route builds the query the CLI and MCP build and answers it through the
    same library entry: the same JSON, byte for byte; another group's run named there is
    refused as the export's route refuses it (404, ``missing_run_ids``)."""
    runs = str(tmp_path)
    play_run(runs, "veyru", rounds=1, now_unix=LAUNCH)
    lab = play_run(runs, "veyru", rounds=2, group_slug="lab", now_unix=LAUNCH + 1).run_id
    if surface == "cli":
        with pytest.raises(SystemExit) as exited:
            from glossogen.cli import main

            main(["analyze", "--runs-dir", runs, "--measure", "run_id:count", "--by",
                  "round_count", "--run-id", lab, "--json"])  # fmt: skip
        assert exited.value.code == 0
        got = json.loads(capsys.readouterr().out)
    elif surface == "mcp":
        said, got = _mcp(runs, "analyze_runs", measures=["run_id:count"], by=["round_count"],
                           selection={"kind": "run_ids", "run_ids": [lab]})  # fmt: skip
        assert said == Answer(False, "", "ok")
    else:
        client = TestClient(create_app(runs))
        body = {**QUERY, "selection": {"kind": "run_ids", "run_ids": [lab]}}
        answered = client.post("/api/g/lab/runs/analysis/query", json=body)
        assert answered.status_code == 200
        got = answered.json()
        every = client.post("/api/g/lab/runs/analysis/query", json=QUERY).json()
        assert (every["runs"], every["run_ids"]) == (1, [lab])  # the group's runs alone
        refused = client.post("/api/g/local/runs/analysis/query", json=body)
        fields = client.get("/api/g/local/runs/analysis/fields", params={"run_id": lab})
        exported = client.post(
            "/api/g/local/runs/export/csv", json={"selection": body["selection"]}
        )
        line = f"run ids that no longer resolve: {lab}"
        gone = {"detail": {"field": "run_ids", "message": line, "missing_run_ids": [lab]}}
        assert [(r.status_code, r.json()) for r in (refused, fields, exported)] == [(404, gone)] * 3
    assert got is not None
    assert (got["runs"], got["run_ids"]) == (1, [lab])
    assert [(g["keys"], [(c["value"], c["n"]) for c in g["cells"]]) for g in got["groups"]] == [
        ({"round_count": "2"}, [(1.0, 1)])
    ]
    assert got["notes"] == []
    asked = Query.model_validate({**QUERY, "selection": {"kind": "run_ids", "run_ids": [lab]}})
    assert got == answer(runs, asked).model_dump(mode="json")  # the one entry's answer, whole
