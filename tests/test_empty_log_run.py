"""Issue 32, a fresh user's run folder whose event log is empty (0 bytes): one reading of it on
every surface, decided by the library's own state (``storage.RunFolder.unbegun``).

Was: ``queued`` on the browser list and MCP ``get_run``; left out of MCP ``list_runs`` with
``unreadable_runs``; ``... is not a run log`` on the run page; an empty event stream and status
``stopped`` from REST; ``has no event log`` from MCP ``read_run_events``,
``get_agent_transcript`` and ``evaluate_run``; ``has not begun its log ... left as it is`` from
``glossogen stop``; ``<absolute path> is empty: not a run log`` from ``evaluate --run-dir``.

Now an empty log no process holds (its player killed right after opening it, a file truncated)
is no run's log: every listing skips it with the export's one note and every read that names
the run refuses it in that note's line, ``veyru/<ts>/veyru.jsonl is not a run log (empty)``,
each surface in its own status (the CLI's 66, REST's 404, MCP's tool error). An empty log a
live process holds (its writer opened it and is about to write its first event) has not begun:
that run reads ``queued`` everywhere, exactly as a claim with no log does.

Each surface is driven as its user drives it: ``glossogen`` in this process, the browser list
served over HTTP by the command's own app, the page and REST routes over HTTP (``TestClient``),
the MCP tools through the SDK's client (``tests/surfaces/drive.py``'s helpers).
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from glossogen.cli import main
from glossogen.server import create_app
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import claim_unbegun, play_run
from tests.server.serving import serving_here
from tests.surfaces.drive import Answer, _cli, _mcp
from tests.test_run_ids_resolve_alike import _rest

PLAYED = 1_790_000_000
"""The timestamp of the healthy run beside the damaged one."""
EMPTIED = 1_790_000_100
RUN_ID = f"veyru/{EMPTIED}"
LINE = f"{RUN_ID}/veyru.jsonl is not a run log (empty)"
"""The export's note's reason for the run: every surface's line for it."""
API = "/api/g/local/runs"
HOW = ["killed-after-claim", "truncated"]
"""How the log came to be empty: a claim whose player opened its log and was killed before its
first event; a played run whose log was truncated."""


@pytest.fixture(scope="module")
def played_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scripted 1-round veyru run, copied into each test's runs folder."""
    played = play_run(str(tmp_path_factory.mktemp("played")), "veyru", rounds=1, now_unix=PLAYED)
    return Path(played.url)


def _runs_with_an_empty_log(tmp_path: Path, source: Path, how: str) -> tuple[Path, RunFolder]:
    """A runs folder holding the played run and, at :data:`RUN_ID`, a folder whose log is empty."""
    runs = tmp_path / "runs"
    shutil.copytree(source, runs / "veyru" / str(PLAYED))
    if how == "killed-after-claim":
        folder = claim_unbegun(str(runs), now_unix=EMPTIED)
    else:
        shutil.copytree(source, runs / RUN_ID)
        folder = RunFolder.at(str(runs / RUN_ID))
    (Path(folder.url) / "veyru.jsonl").write_bytes(b"")
    return runs, folder


def _files(runs: Path) -> list[str]:
    return sorted(str(p.relative_to(runs)) for p in runs.rglob("*"))


NAMED: dict[str, Answer] = {
    "cli-stop": Answer(True, LINE, 66),
    "cli-evaluate": Answer(True, LINE, 66),
    "cli-evaluate-run-id": Answer(True, f"runs that cannot be read: {RUN_ID}: {LINE}", 66),
    "rest-page": Answer(True, LINE, 404),
    "rest-events": Answer(True, f"run_id: {LINE}", 404),
    "rest-summary": Answer(True, f"run_id: {LINE}", 404),
    "rest-stop": Answer(True, f"run_id: {LINE}", 404),
    "mcp-get_run": Answer(True, LINE, "tool error"),
    "mcp-read_run_events": Answer(True, LINE, "tool error"),
    "mcp-get_agent_transcript": Answer(True, LINE, "tool error"),
    "mcp-evaluate_run": Answer(True, LINE, "tool error"),
    "mcp-stop_run": Answer(True, LINE, "tool error"),
}
"""Every read that names the run, and its answer: refused in the note's line, the file within
the runs directory (``evaluate --run-dir`` and ``stop`` are given the folder's absolute path);
REST's JSON names the field, ``run_id``, as its every run route's 404 does."""


def named_through(
    surface: str, runs: Path, folder: RunFolder, capsys: pytest.CaptureFixture[str]
) -> Answer:
    """Name the run in ``folder`` through ``surface``, as its user names it."""
    kind, _, what = surface.partition("-")
    if kind == "cli":
        argv = {"stop": ["stop", folder.url],
                "evaluate": ["evaluate", "veyru", "--run-dir", folder.url,
                             "--metrics", "round_success"],
                "evaluate-run-id": ["evaluate", "--runs-dir", str(runs), "--run-id",
                                    folder.run_id, "--metrics", "round_success"]}[what]  # fmt: skip
        return _cli(capsys, *argv)
    if kind == "mcp":
        arguments: dict[str, Any] = {"run_id": folder.run_id}
        if what == "get_agent_transcript":
            arguments["agent_id"] = "field_observer"
        if what == "evaluate_run":
            arguments["metrics"] = ["round_success"]
        return _mcp(str(runs), what, **arguments)[0]
    client = TestClient(create_app(str(runs)))
    if what == "stop":
        return _rest(client.post(f"{API}/{folder.run_id}/stop"))
    path = {"page": f"/runs/{folder.run_id}", "events": f"{API}/{folder.run_id}/events",
            "summary": f"{API}/{folder.run_id}/summary"}[what]  # fmt: skip
    return _rest(client.get(path))


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("surface", list(NAMED))
def test_a_run_whose_log_is_empty_is_refused_in_one_line_by_every_read_that_names_it(
    surface: str, how: str, played_source: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The page said ``... is not a run log``, REST's events an empty stream and its summary
    ``stopped``, MCP ``queued`` (``get_run``) or ``has no event log``, ``glossogen stop`` ``has
    not begun its log ... left as it is`` (65), ``evaluate --run-dir`` the log's absolute path:
    now one line, nothing stopped, removed or written."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)  # nothing may start a server for it
    runs, folder = _runs_with_an_empty_log(tmp_path, played_source, how)
    before = _files(runs)
    assert named_through(surface, runs, folder, capsys) == NAMED[surface]
    assert _files(runs) == before


def _rows(page: str) -> list[str]:
    return re.findall(r'data-run-id="([^"]+)"', page)


def _listed(surface: str, runs: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, Any]:
    """The runs ``surface`` lists and the runs it names skipped, each with why."""
    if surface == "cli-analyze":
        with pytest.raises(SystemExit) as exited:
            main(["analyze", "--runs-dir", str(runs), "--by", "status", "--measure",
                  "rounds_played", "--json"])  # fmt: skip
        out, err = capsys.readouterr()
        assert exited.value.code in (0, None), err
        answer = json.loads(out)
        return answer["runs"], [n for n in answer["notes"] if n.startswith("skipped ")]
    if surface == "browser-list":
        with serving_here(str(runs)) as base:
            page = httpx.get(base + "/", timeout=None).text
        skipped = re.findall(r'<p class="footer unreadable">([^<]*)</p>', page)
        return _rows(page), [html.unescape(s) for s in skipped]
    _, result = _mcp(str(runs), "list_runs")
    assert result is not None
    return [r["run_id"] for r in result["runs"]], result["unreadable_runs"]


LISTED: dict[str, tuple[Any, Any]] = {
    "cli-analyze": (1, [f"skipped {RUN_ID}: {LINE}"]),
    "browser-list": ([f"veyru/{PLAYED}"], [f"skipped {RUN_ID}: {LINE}"]),
    "mcp-list_runs": ([f"veyru/{PLAYED}"], {RUN_ID: LINE}),
}
"""Every listing of the runs folder: the played run listed (``analyze`` counts it), the emptied
one skipped with the export's note."""


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("surface", list(LISTED))
def test_a_run_whose_log_is_empty_is_skipped_with_one_note_by_every_listing(
    surface: str, how: str, played_source: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The browser listed it ``queued`` while MCP's ``list_runs`` and the CLI skipped it: now
    every listing skips it, in the same words."""
    runs, _ = _runs_with_an_empty_log(tmp_path, played_source, how)
    assert _listed(surface, runs, capsys) == LISTED[surface]


UNBEGUN: dict[str, Callable[[str], Answer]] = {
    "cli-evaluate": lambda url: Answer(True, f"no event log veyru.jsonl in {url}", 66),
    "rest-page": lambda _: Answer(
        True, f"run '{RUN_ID}' has no event log in the server's runs directory", 404
    ),
    "mcp-get_run": lambda _: Answer(False, "", "ok"),
    "mcp-read_run_events": lambda _: Answer(
        True, f"run '{RUN_ID}' has no event log in the server's runs directory", "tool error"
    ),
    "mcp-evaluate_run": lambda _: Answer(
        True, f"run '{RUN_ID}' has no event log in the server's runs directory", "tool error"
    ),
}
"""A run whose player has not begun its log, and each surface's answer naming it: the same with
no log at all and with an empty one its live writer holds."""


@contextlib.contextmanager
def _held_claim(tmp_path: Path, log: str) -> Iterator[tuple[Path, RunFolder]]:
    """A claim at :data:`RUN_ID` whose live writer holds its folder (this process takes the
    lock), its log not there (``none``) or created and still empty."""
    runs = tmp_path / "runs"
    folder = claim_unbegun(str(runs), now_unix=EMPTIED)
    writer = folder.lock()
    try:
        if log != "none":
            (Path(folder.url) / "veyru.jsonl").write_bytes(b"")
        yield runs, folder
    finally:
        writer.release()


@pytest.mark.parametrize("log", ["none", "empty-held-by-its-writer"])
@pytest.mark.parametrize("surface", list(UNBEGUN))
def test_a_run_whose_live_writer_has_not_begun_its_log_reads_as_a_claim_with_no_log(
    surface: str, log: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """An empty log a live process holds is a log not begun yet (its writer opened it and is
    about to write its first event), not a damaged one: it reads as a claim with no log on every
    surface (``storage.RunFolder.unbegun``)."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with _held_claim(tmp_path, log) as (runs, folder):
        assert named_through(surface, runs, folder, capsys) == UNBEGUN[surface](folder.url)


@pytest.mark.parametrize("log", ["none", "empty-held-by-its-writer"])
def test_such_a_run_is_listed_queued_by_the_browser_and_get_run(tmp_path: Path, log: str) -> None:
    """Its status is ``queued`` on the run list and from ``get_run``; no listing skips it."""
    with _held_claim(tmp_path, log) as (runs, _):
        with serving_here(str(runs)) as base:
            page = httpx.get(base + "/", timeout=None).text
        assert _rows(page) == [RUN_ID]
        row = page.split(f'data-run-id="{RUN_ID}"', 1)[1].split("</tr>", 1)[0]
        assert '<span class="badge status-queued">queued</span>' in row
        assert 'class="footer unreadable"' not in page
        _, got = _mcp(str(runs), "get_run", run_id=RUN_ID)
        assert got is not None
        assert (got["status"], got["rounds_played"], got["warnings"]) == ("queued", 0, [])
        _, listed = _mcp(str(runs), "list_runs")
        assert listed is not None
        assert (listed["runs"], listed["unreadable_runs"]) == ([], {})


@pytest.mark.parametrize("name", ["abc", "veyru/1790000001"])
def test_stop_names_a_folder_that_holds_no_run_as_it_was_typed(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``glossogen stop /tmp/runs/abc`` named ``runs/abc`` (the folder's last two parts, which
    the user never typed): now the folder as typed, as ``evaluate --run-dir``, ``verify`` and
    ``run --resume`` name it (``/tmp/runs/abc``); nothing created."""
    runs = tmp_path / "runs"
    typed = str(runs / name)
    assert _cli(capsys, "stop", typed) == Answer(
        True, f"run ids that no longer resolve: {typed}", 66
    )
    assert not runs.exists()


GARBAGE = f"{RUN_ID}/veyru.jsonl is not a run log (no simulation_started event)"
"""The listings' note for a log whose lines hold no ``simulation_started``."""


@pytest.mark.parametrize("surface", list(NAMED))
def test_a_run_whose_log_is_garbage_is_refused_in_the_listings_words_by_every_read(
    surface: str, played_source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """u50a: a log of two lines that are no events was ``no run X: its log is not a run log``
    (no ``field``) on REST's events, summary and Stop, an answer on MCP's ``get_run``
    (``stopped``, 0 rounds) and ``read_run_events`` (no event), and ``has no live writer`` on
    ``stop``, while the page and every listing said the note's words: now every read that names
    it refuses it in those words (``export.log_refused``), nothing stopped or written."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    runs, folder = _runs_with_an_empty_log(tmp_path, played_source, "truncated")
    (Path(folder.url) / "veyru.jsonl").write_bytes(b'not an event\n{"also": "not one"}\n')
    before = _files(runs)
    expected = NAMED[surface]
    line = expected.line.replace(LINE, GARBAGE)
    assert named_through(surface, runs, folder, capsys) == Answer(True, line, expected.status)
    assert _files(runs) == before
