"""A damaged run and a run's place read alike through the CLI, REST, MCP and the browser (issue 32).

Each surface is driven as a user drives it: ``glossogen`` in this process (its exit code and its
one line), the FastAPI app over HTTP (``TestClient``), the MCP tools through the SDK's client on
the server built in this process. The runs are scripted veyru runs played through the library.

- A run whose ``labels.json`` (or ``config.json``) is not UTF-8 text is read from its log by
  MCP's reading tools, as the run page and REST's events and summary read it: the damage is a
  warning in the page's words, never a refusal, and the labels are read once per call.
- A run the user named (``--run-id``, ``run_ids``) that cannot be read is refused as a named run
  that does not resolve is, on the export and on a cohort's evaluation alike, nothing written.
- No answer names the server's runs directory by its path: ``get_run``'s lineage, ``evaluate_run``'s
  report, the run page's folder and resume hint, the ``evaluate-cohort`` flow run's name.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from glossogen.cli import main
from glossogen.eventlog import read_events
from glossogen.mcp import build_server
from glossogen.server import create_app
from tests.fixtures.played_runs import after_round_1, play_run

LAUNCH = 1_796_446_580
"""The damaged run's launch second (its id is ``veyru/1796446580``)."""
RUN_ID = f"veyru/{LAUNCH}"

DAMAGE = {
    "labels.json": (b'{"a":"\xff"}', f"{RUN_ID}/labels.json is not UTF-8 text (byte 0xff at offset 6)"),
    "config.json": (
        b'{"round_count": 1, "x": "\xfe"}',
        f"{RUN_ID}/config.json is not UTF-8 text (byte 0xfe at offset 25)",
    ),
}  # fmt: skip
"""A file of the run folder, the bytes it is damaged with, and the line every surface says."""

OPENED: list[str] = []
"""The files opened while :func:`opens` watches (one audit hook for the session: CPython keeps
every hook added)."""
_WATCHING = [False]


def _audit(
    event: str, args: tuple[Any, ...], watching: list[bool] = _WATCHING, opened: list[str] = OPENED
) -> None:
    # The lists are bound as defaults: the hook outlives the module, whose globals are None by
    # the time the interpreter's last opens at exit reach it (each worker printed "Exception
    # ignored in audit hook" then).
    if watching[0] and event == "open" and isinstance(args[0], str):
        opened.append(args[0])


sys.addaudithook(_audit)


@contextmanager
def opens() -> Iterator[list[str]]:
    """The paths this process opens inside the block (the interpreter's ``open`` audit event)."""
    OPENED.clear()
    _WATCHING[0] = True
    try:
        yield OPENED
    finally:
        _WATCHING[0] = False


def _damaged(runs: Path, name: str) -> str:
    """Play a one-round run into ``runs`` and damage its ``name``; return the line naming it."""
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    data, line = DAMAGE[name]
    (Path(folder.url) / name).write_bytes(data)
    return line


async def _calls(runs: Path, *calls: tuple[str, dict[str, Any]]) -> list[tuple[Any, int]]:
    """Each tool's structured result (or its error line) and how often it opened labels.json."""
    got: list[tuple[Any, int]] = []
    async with Client(build_server(str(runs))) as client:
        for tool, arguments in calls:
            with opens() as opened:
                result = await client.call_tool(tool, arguments)
            labels = sum(1 for p in opened if p.endswith(f"{RUN_ID}/labels.json"))
            text = result.content[0].text if result.content else ""
            got.append((text if result.is_error else result.structured_content, labels))
    return got


@pytest.mark.parametrize("name", list(DAMAGE))
def test_mcp_reads_a_damaged_run_from_its_log_and_names_the_damage_as_the_run_page_does(
    name: str, tmp_path: Path
) -> None:
    """``get_run``, ``read_run_events`` (every page of a paged read) and ``get_agent_transcript``
    refused a run whose labels.json is not UTF-8 where the run page, REST's events and summary
    answered it from its log (issue 32): now each answers from the log, with the page's damage
    line in ``warnings``, labels.json opened once per call (was: on every call and page, and
    once more by get_run)."""
    runs = tmp_path / "runs"
    line = _damaged(runs, name)
    client = TestClient(create_app(str(runs)))
    page = client.get(f"/runs/{RUN_ID}")
    assert page.status_code == 200
    found = re.findall(r'<p class="note damage">([^<]*)</p>', page.text)
    assert [html.unescape(f) for f in found] == [line]
    summary = client.get(f"/api/g/local/runs/{RUN_ID}/summary").json()
    got = asyncio.run(_calls(
        runs, ("get_run", {"run_id": RUN_ID}),
        ("read_run_events", {"run_id": RUN_ID, "page_size": 2}),
        ("read_run_events", {"run_id": RUN_ID, "page_size": 2, "cursor": "2"}),
        ("get_agent_transcript", {"run_id": RUN_ID, "agent_id": "field_observer"}),
    ))  # fmt: skip
    (detail, a), (first, b), (second, c), (transcript, d) = got
    assert [a, b, c, d] == [1, 1, 1, 1]
    assert (detail["status"], detail["rounds_played"], detail["warnings"]) == (
        summary["status"], 1, [line])  # fmt: skip
    kept = {} if name == "labels.json" else json.loads((runs / RUN_ID / "labels.json").read_text())
    assert detail["labels"] == kept
    events = read_events(str(runs / RUN_ID / "veyru.jsonl")).events
    assert [r["fields"]["event_id"] for r in first["events"] + second["events"]] == [
        e.event_id for e in events[:4]
    ]
    assert (first["warnings"], second["warnings"], first["next_cursor"]) == ([line], [line], "2")
    assert (transcript["agent_id"], transcript["warnings"]) == ("field_observer", [line])
    assert [r["round_number"] for r in transcript["rounds"]] == [1]


NAMED_LINE = (
    f"runs that cannot be read: {RUN_ID}: {RUN_ID}/labels.json is not UTF-8 text (byte 0xff at "
    "offset 6)"
)
MISSING = "veyru/1790000000"
MISSING_LINE = f"run ids that no longer resolve: {MISSING}"


def _named(surface: str, runs: Path, run_id: str, out: Path, capsys: Any) -> tuple[Any, Any]:
    """The status and the one line (REST: the ``detail``) of ``surface`` asked for ``run_id``."""
    if surface.startswith("cli-"):
        argv = {"cli-export": ["export", "--out", str(out)],
                "cli-evaluate": ["evaluate", "--metrics", "round_success"],
                "cli-analyze": ["analyze", "--measure", "total_chars:count"]}[surface]  # fmt: skip
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--runs-dir", str(runs), "--run-id", run_id])
        said, err = capsys.readouterr()
        assert said == ""
        return int(exited.value.code or 0), err.removeprefix("glossogen: error: ").rstrip("\n")
    if surface.startswith("rest-"):
        body: dict[str, Any] = {"selection": {"kind": "run_ids", "run_ids": [run_id]}}
        route = f"export/{surface.removeprefix('rest-')}"
        if surface == "rest-analysis":
            body["measures"], route = [{"field": "total_chars", "agg": "count"}], "analysis/query"
        got = TestClient(create_app(str(runs))).post(f"/api/g/local/runs/{route}", json=body)
        return got.status_code, got.json()["detail"]
    tool, arguments = {"mcp-export": ("export_runs", {"out": str(out)}),
                       "mcp-evaluate": ("evaluate_runs", {"metrics": ["round_success"]}),
                       "mcp-analyze": ("analyze_runs", {"measures": ["total_chars:count"]}),
                       }[surface]  # fmt: skip

    async def called() -> Any:
        async with Client(build_server(str(runs))) as client:
            picked = (
                {"selection": {"kind": "run_ids", "run_ids": [run_id]}}
                if tool == "analyze_runs"
                else {"run_ids": [run_id]}
            )  # its query's shape
            return await client.call_tool(tool, {**arguments, **picked})

    result = asyncio.run(called())
    assert result.is_error
    return "tool error", result.content[0].text.removeprefix(f"Error executing tool {tool}: ")


NAMED_SURFACES = ["cli-export", "rest-csv", "rest-raw", "mcp-export", "cli-evaluate",
                  "mcp-evaluate", "cli-analyze", "rest-analysis", "mcp-analyze"]  # fmt: skip
REST_DETAIL = {
    "unreadable": {"field": "run_ids", "message": NAMED_LINE,
                   "unreadable_runs": {RUN_ID: DAMAGE["labels.json"][1]}},
    "missing": {"field": "run_ids", "message": MISSING_LINE, "missing_run_ids": [MISSING]},
}  # fmt: skip
"""REST's 404 for each: the field, the line, and the runs it names."""
STATUS = {"cli": 66, "rest": 404, "mcp": "tool error"}


@pytest.mark.parametrize("surface", NAMED_SURFACES)
def test_a_named_run_that_cannot_be_read_is_refused_as_a_missing_named_run_is(
    surface: str, prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --run-id`` of a run whose labels.json is not UTF-8 exited 0 (``exported 0 runs``
    and a skip note), REST's downloads answered empty tables, MCP ``export_runs`` runs 0, and
    ``evaluate --runs-dir --run-id`` exit 1, ``analyze --run-id`` exit 0 with a skip note (REST's
    query 200, MCP ``analyze_runs`` an answer), while ``evaluate --run-dir`` of it exits 66: a run
    the user named that cannot be read is refused now as a named run that does not resolve is
    (exit 66, REST 404, a tool error), its reason in the line, nothing written, before any flow
    run."""
    runs = tmp_path / "runs"
    _damaged(runs, "labels.json")
    out = tmp_path / "out"
    status, line = _named(surface, runs, RUN_ID, out, capsys)
    missing_status, missing_line = _named(surface, runs, MISSING, out, capsys)
    assert status == missing_status == STATUS[surface.split("-")[0]]
    if surface.startswith("rest-"):
        assert (line, missing_line) == (REST_DETAIL["unreadable"], REST_DETAIL["missing"])
    else:
        assert (line, missing_line) == (NAMED_LINE, MISSING_LINE)
    assert not out.exists()
    assert not (runs / RUN_ID / "veyru_report.json").exists()


EMPTY_LINE = f"runs that cannot be read: {RUN_ID}: {RUN_ID}/veyru.jsonl is not a run log (empty)"


@pytest.mark.parametrize("surface", ["cli-export", "cli-evaluate", "cli-analyze", "mcp-evaluate"])
def test_a_named_run_whose_log_is_empty_is_named_unreadable_by_every_selection(
    surface: str, prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u49a: ``evaluate --runs-dir --run-id`` and MCP ``evaluate_runs`` said ``run ids that no
    longer resolve`` of a run whose log is empty, where the export and the analysis say it
    cannot be read (its log is there, not a run log): one line now, exit 66, nothing written."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    (Path(folder.url) / "veyru.jsonl").write_bytes(b"")
    out = tmp_path / "out"
    status, line = _named(surface, runs, RUN_ID, out, capsys)
    assert (status, line) == (STATUS[surface.split("-")[0]], EMPTY_LINE)
    assert not out.exists()
    assert not (runs / RUN_ID / "veyru_report.json").exists()


def test_the_preview_lists_a_named_unreadable_run_as_it_lists_a_missing_one(
    tmp_path: Path,
) -> None:
    """The preview lists what a download would refuse for a named run (``missing_run_ids``,
    ``unreadable_runs``), never among ``refusals``: both alike."""
    runs = tmp_path / "runs"
    _damaged(runs, "labels.json")
    body = {"selection": {"kind": "run_ids", "run_ids": [RUN_ID, MISSING]}}
    got = TestClient(create_app(str(runs))).post("/api/g/local/runs/export/preview", json=body)
    assert got.status_code == 200
    preview = got.json()
    assert (preview["run_count"], preview["missing_run_ids"], preview["refusals"]) == (
        0, [MISSING], [])  # fmt: skip
    assert preview["unreadable_runs"] == {RUN_ID: DAMAGE["labels.json"][1]}


def test_evaluate_run_names_its_report_within_the_runs_dir(tmp_path: Path) -> None:
    """``evaluate_run``'s ``report`` was the report's path on the server: now within the runs
    directory, as every other answer names a run's file."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    ((result, _),) = asyncio.run(
        _calls(runs, ("evaluate_run", {"run_id": folder.run_id, "metrics": ["round_success"]}))
    )
    assert result["report"] == f"{RUN_ID}/veyru_report.json"
    assert (runs / RUN_ID / "veyru_report.json").exists()
    assert str(runs) not in json.dumps(result)


def test_the_run_page_names_the_folder_and_the_resume_by_the_run_id(tmp_path: Path) -> None:
    """The page's folder line and a resumable run's hint named the server's path
    (``glossogen run veyru --resume /srv/.../veyru/<ts>``): now ``<runs-dir>/veyru/<ts>``, as
    the page's Stop words it."""
    runs = tmp_path / "runs"
    run_id = asyncio.run(after_round_1(str(runs)))  # stopped after round 1: resumable
    page = TestClient(create_app(str(runs))).get(f"/runs/{run_id}").text
    assert f"<dt>folder</dt><dd><code>&lt;runs-dir&gt;/{run_id}</code></dd>" in page
    hint = re.findall(r'<span class="hint" id="resumable">([^<]*)</span>', page)
    assert [html.unescape(h) for h in hint] == [
        f"resumable: glossogen run veyru --resume <runs-dir>/{run_id}"
    ]
    assert str(runs) not in page


def test_the_cohort_flow_run_is_named_by_the_runs_folder_not_its_path(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``evaluate-cohort`` flow run was named ``evaluate-cohort-<the absolute runs dir>``:
    now by the runs folder's own name."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    runs = tmp_path / "cohort-runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=LAUNCH)
    with pytest.raises(SystemExit) as exited:
        main(["evaluate", "--runs-dir", str(runs), "--metrics", "round_success"])
    assert exited.value.code == 0, capsys.readouterr()
    cohort_flows = FlowFilter(name=FlowFilterName(any_=["evaluate-cohort"]))
    with get_client(sync_client=True) as client:
        flow_runs = client.read_flow_runs(flow_filter=cohort_flows)
    names = [r.name for r in flow_runs if (r.parameters.get("request") or {}).get("runs_dir")
             == str(runs)]  # fmt: skip
    assert names == ["evaluate-cohort-cohort-runs"]
