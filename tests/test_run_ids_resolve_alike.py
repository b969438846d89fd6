"""Issue 32, a fresh user's bad run ids: one resolver (``storage.resolve_run_id``) for every
surface, so a bad run id is worded and coded alike by the CLI, REST and MCP.

- ``veyru/abc`` (well-shaped, no timestamp) names no run, as ``veyru/1790000001`` where no run
  is: ``run ids that no longer resolve: veyru/abc`` on stop, the export and the evaluation
  (was: the export's note ``skipped veyru/abc: 'veyru/abc' is not a run id
  (<scenario>/<unix_ts>)`` and exit 0, an evaluation that started a Prefect server first, the
  REST preview's ``unreadable_runs``);
- a byte that is not UTF-8 in a run id is malformed on every surface (was ``run ids that no
  longer resolve: veyru/\\udcff`` from ``stop``, ``veyru/\\ufffd`` from REST);
- ``evaluate --run-dir`` not UTF-8 text is refused as ``--runs-dir`` is (was scored, exit 0);
- a one-part id on the run page, its events and summary is the library's line, as Stop's
  (was a bare ``{"detail": "Not Found"}``);
- an id naming no run is the resolver's line on the page, events, summary and Stop, 404
  naming ``run_id`` (was ``no run veyru/abc: it has no event log``; Stop's had no ``field``).

Each surface is driven as its user drives it (``tests/surfaces/drive.py``): the
CLI's entry in this process, the FastAPI app over HTTP, the MCP tools through the SDK's client.
"""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import Answer, _cli, _mcp

LAUNCH = 1_790_000_000
SHAPE = "not a run id (<scenario>/<run_dir_name>, relative to the runs directory)"
API = "/api/g/local/runs"

NO_RUN_SURFACES = [
    "cli-stop", "rest-stop", "mcp-stop_run",
    "cli-export", "rest-csv", "rest-preview", "rest-raw", "mcp-export_runs",
    "cli-evaluate", "mcp-evaluate_runs",
    "mcp-get_run", "mcp-read_run_events", "mcp-fork_run",
    "rest-page", "rest-events", "rest-summary",
]  # fmt: skip
"""Every place a user names a run by its id."""


def _rest(got: Any) -> Answer:
    """A REST answer: its refusal's field (if any) and line, or what a preview lists."""
    if got.headers["content-type"].startswith("text/html"):
        found = got.text.split('<p class="error" id="page-error">', 1)[-1].split("</p>", 1)[0]
        return Answer(got.status_code != 200, html.unescape(found), got.status_code)
    if not got.headers["content-type"].startswith("application/json"):
        return Answer(False, "", got.status_code)  # a download
    body = got.json()
    if got.status_code != 200:
        detail = body["detail"]
        named = f"{detail['field']}: " if "field" in detail else ""
        return Answer(True, f"{named}{detail['message']}", got.status_code)
    listed = [f"missing_run_ids: {', '.join(body['missing_run_ids'])}"]
    return Answer(False, f"{listed[0]}; unreadable_runs: {sorted(body['unreadable_runs'])}", 200)


def named_through(
    surface: str, runs: Path, run_id: str, capsys: pytest.CaptureFixture[str]
) -> Answer:
    """Name the run ``run_id`` under ``runs`` through ``surface`` (the CLI's run folder is
    relative to the runs directory, the working directory)."""
    kind, _, what = surface.partition("-")
    out = str(runs.parent / "out")
    if kind == "cli":
        flags = {"stop": ["stop", run_id],
                 "export": ["export", "--runs-dir", str(runs), "--out", out, "--run-id", run_id],
                 "evaluate": ["evaluate", "--runs-dir", str(runs), "--run-id", run_id]}  # fmt: skip
        return _cli(capsys, *flags[what])
    if kind == "mcp":
        arguments: dict[str, Any] = {
            "stop_run": {"run_id": run_id}, "get_run": {"run_id": run_id},
            "read_run_events": {"run_id": run_id},
            "fork_run": {"source_run_id": run_id, "after_round": 1},
            "export_runs": {"out": out, "run_ids": [run_id]},
            "evaluate_runs": {"metrics": ["round_success"], "run_ids": [run_id]},
        }[what]  # fmt: skip
        return _mcp(str(runs), what, **arguments)[0]
    client = TestClient(create_app(str(runs)))
    if what == "stop":
        return _rest(client.post(f"{API}/{run_id}/stop"))
    if what in ("csv", "preview", "raw"):
        body = {"selection": {"kind": "run_ids", "run_ids": [run_id]}}
        return _rest(client.post(f"{API}/export/{what}", json=body))
    path = {"page": f"/runs/{run_id}", "events": f"{API}/{run_id}/events",
            "summary": f"{API}/{run_id}/summary"}[what]  # fmt: skip
    return _rest(client.get(path))


def no_run(surface: str, run_id: str) -> Answer:
    """How ``surface`` answers an id under which no run is stored."""
    line = f"run ids that no longer resolve: {run_id}"
    if surface.startswith("cli"):
        return Answer(True, line, 66)
    if surface.startswith("mcp"):
        return Answer(True, line, "tool error")
    if surface == "rest-preview":
        return Answer(False, f"missing_run_ids: {run_id}; unreadable_runs: []", 200)
    if surface in ("rest-csv", "rest-raw"):
        return Answer(True, f"run_ids: {line}", 404)
    if surface == "rest-page":  # the page shows the line
        return Answer(True, line, 404)
    return Answer(True, f"run_id: {line}", 404)  # events, summary, stop: field run_id


@pytest.mark.parametrize("surface", NO_RUN_SURFACES)
def test_an_id_with_no_timestamp_names_no_run_as_an_id_of_no_run_does_on_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``veyru/abc`` is answered as ``veyru/1790000001`` (no run there) is, on each surface,
    before anything is started: the evaluation refuses it before any flow run or temporary
    Prefect server (its one stderr line is the refusal), nothing is written."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    monkeypatch.chdir(runs)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)  # a cohort would start its own server
    for run_id in ("veyru/1790000001", "veyru/abc"):
        assert named_through(surface, runs, run_id, capsys) == no_run(surface, run_id)
    assert sorted(os.listdir(tmp_path)) == ["runs"]
    assert sorted(os.listdir(runs / "veyru")) == [str(LAUNCH)]
    assert not (runs / "veyru" / str(LAUNCH) / "veyru_report.json").exists()


NOT_TEXT = {
    "cli-stop": Answer(True, "RUN_DIR 'veyru/\\xff': not UTF-8 text", 64),
    "cli-export": Answer(True, "--run-id 'veyru/\\xff': not UTF-8 text", 64),
    "cli-evaluate": Answer(True, "--run-id 'veyru/\\xff': not UTF-8 text", 64),
    "rest-stop": Answer(True, "run_id: run_id 'veyru/\\udcff': not UTF-8 text", 404),
    "rest-page": Answer(True, "run_id 'veyru/\\udcff': not UTF-8 text", 404),
    "rest-events": Answer(True, "run_id: run_id 'veyru/\\udcff': not UTF-8 text", 404),
    "rest-summary": Answer(True, "run_id: run_id 'veyru/\\udcff': not UTF-8 text", 404),
    "mcp-stop_run": Answer(True, "run_id 'veyru/\\udcff': not UTF-8 text", "tool error"),
    "mcp-get_run": Answer(True, "run_id 'veyru/\\udcff': not UTF-8 text", "tool error"),
    "mcp-read_run_events": Answer(True, "run_id 'veyru/\\udcff': not UTF-8 text", "tool error"),
    "mcp-fork_run": Answer(True, "source_run_id 'veyru/\\udcff': not UTF-8 text", "tool error"),
    "mcp-export_runs": Answer(True, "run_ids 'veyru/\\udcff': not UTF-8 text", "tool error"),
    "mcp-evaluate_runs": Answer(True, "run_ids 'veyru/\\udcff': not UTF-8 text", "tool error"),
}
"""A run id holding byte 0xff, on each surface: malformed (the CLI's 64, REST's 404 naming
``run_id``, MCP's tool error), in ``path_not_text``'s words; the CLI shows the byte typed
(``\\xff``), REST and MCP the text's escape (``\\udcff``), as every other text not UTF-8."""


@pytest.mark.parametrize("surface", list(NOT_TEXT))
def test_a_run_id_not_utf8_text_is_malformed_on_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Was ``run ids that no longer resolve: veyru/\\udcff`` (stop, 66), ``no run veyru/\\ufffd``
    (REST, 404 with no field): now one rule, nothing stopped or written."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    monkeypatch.chdir(runs)
    sent = "veyru/%FF" if surface.startswith("rest") else "veyru/\udcff"
    assert named_through(surface, runs, sent, capsys) == NOT_TEXT[surface]
    assert sorted(os.listdir(tmp_path)) == ["runs"]
    assert sorted(os.listdir(runs / "veyru")) == [str(LAUNCH)]


def test_evaluate_run_dir_not_utf8_text_is_refused_as_runs_dir_is_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluate --run-dir $'.../r\\xff/veyru/<ts>'`` scored the run (exit 0, its report
    written, the byte printed raw); ``--runs-dir`` such a path is refused: now both, 64."""
    played = play_run(str(tmp_path / "runs"), "veyru", rounds=1, now_unix=LAUNCH)
    folder = tmp_path / "r\udcff" / "veyru" / str(LAUNCH)
    shutil.copytree(played.url, folder)
    before = sorted(os.listdir(folder))
    answer = _cli(capsys, "evaluate", "veyru", "--run-dir", str(folder))
    typed = repr(str(folder)).replace("\\udcff", "\\xff")  # the CLI shows the byte typed
    assert answer == Answer(True, f"--run-dir {typed}: not UTF-8 text", 64)
    assert sorted(os.listdir(folder)) == before
    runs_dir = str(tmp_path / "r\udcff")
    typed = repr(runs_dir).replace("\\udcff", "\\xff")
    answer = _cli(capsys, "evaluate", "--runs-dir", runs_dir)
    assert answer == Answer(True, f"--runs-dir {typed}: not UTF-8 text", 64)


ONE_PART = {"veyru%5C123": "veyru\\123", "abc": "abc"}
"""A run id of one part as sent in a URL, and as the refusal quotes it."""
ROUTES = {"page": "/runs/{sent}", "events": f"{API}/{{sent}}/events",
          "summary": f"{API}/{{sent}}/summary", "stop": f"{API}/{{sent}}/stop"}  # fmt: skip


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("sent", list(ONE_PART))
def test_a_one_part_run_id_is_the_librarys_line_on_the_page_events_summary_and_stop(
    route: str, sent: str, tmp_path: Path
) -> None:
    """The page, events and summary answered a bare ``{"detail": "Not Found"}`` where Stop
    answered the library's line: now each route, the run id named and ``field`` ``run_id``."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    client = TestClient(create_app(str(runs)))
    path = ROUTES[route].format(sent=sent)
    got = client.post(path) if route == "stop" else client.get(path)
    line = f"run_id '{ONE_PART[sent]}': {SHAPE}"
    assert got.status_code == 404
    if route == "page":
        assert got.headers["content-type"].startswith("text/html")
        assert f'<p class="error" id="page-error">{line}</p>' in html.unescape(got.text)
    else:
        assert got.json() == {"detail": {"field": "run_id", "message": line}}
