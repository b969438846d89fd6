"""The run browser in a real headless Chromium (Debian's, driven by Playwright) against
``glossogen serve``'s app on 127.0.0.1 (served in the test's process), over runs played for
real: scripted veyru runs, and live prisoners_dilemma runs whose two seats are models on the
stub server, answering a round only once the test opens that round's gate (so nothing races
the clock).

Screenshots go to the folder the test prints (``GLOSSOGEN_SCREENSHOTS`` or a temporary one).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from glossogen.eventlog import read_events
from glossogen.pricing import price_call
from glossogen.scenario import load_scenario
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.fixtures.parts import require_part
from tests.fixtures.played_runs import play_run
from tests.fixtures.polling import wait_until
from tests.server.conftest import TIMEOUT_MS, launched_chromium, played_apart
from tests.server.serving import XSS_IMG, XSS_SCRIPT, serving_here

require_part("playwright.sync_api", "the dev group's playwright: uv sync")

BRIEFING = re.compile(r"Round (\d+) of \d+ begins")
USAGE = {"input_tokens": 100_000, "output_tokens": 1_000}
"""What each answer of the gate uses: gpt-4.1-mini prices it at a sum the page shows."""


class RoundGate:
    """Answers both seats of a prisoners_dilemma run, round N only once :meth:`open` reached N.

    A seat's first request of a round (the one its briefing prompts) is held until the round's
    gate is open, then answered with a message on ``table`` (``texts`` in turn) and
    ``lock_in(cooperate)``; every other request is answered ``done`` (the turn ends). The hold
    lasts until the test opens the round, however long the page takes on a loaded machine (a
    bounded hold answered the next round before the test let it); each test opens every round
    in its ``finally``, so a test that fails never leaves a run hanging. Every answer reports
    :data:`USAGE`.
    """

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.sent = 0
        self.opened = 0
        self.cond = threading.Condition()

    def open(self, through_round: int) -> None:
        """Let every request of rounds up to ``through_round`` be answered."""
        with self.cond:
            self.opened = through_round
            self.cond.notify_all()

    def __call__(self, req: RecordedRequest) -> StubReply:
        last = req.messages[-1] if req.messages else {}
        found = BRIEFING.search(json.dumps(last))
        if last.get("role") != "user" or found is None:
            return StubReply(text="done", **USAGE)
        with self.cond:
            self.cond.wait_for(lambda: self.opened >= int(found.group(1)))
            text = self.texts[self.sent % len(self.texts)]
            self.sent += 1
        return StubReply(
            tool_calls=[
                ("send_message", {"channel_id": "table", "text": text}),
                ("lock_in", {"move": "cooperate"}),
            ],
            **USAGE,
        )


@contextmanager
def live_run(runs: Path, stub: StubModelServer, rounds: int) -> Iterator[tuple[str, Path]]:
    """Start ``glossogen run prisoners_dilemma`` on the stub's models; yield its id and folder."""
    env = {**os.environ, "OPENAI_BASE_URL": stub.openai_base_url, "OPENAI_API_KEY": "sk-test",
           "PYTHONUNBUFFERED": "1"}  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "run", "prisoners_dilemma", "--model", "gpt-4.1-mini",
         "--provider", "openai", "--runs-dir", str(runs), "--config", "knobs_default",
         f"round_count={rounds}", "postmortem_enabled=false"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        run_id = ""
        for line in child.stdout:
            if line.startswith("new_run_id="):
                run_id = line.strip().split("=", 1)[1]
                break
        assert run_id, f"the run printed no new_run_id (exit {child.wait()})"
        threading.Thread(target=child.stdout.read, daemon=True).start()
        folder = runs / run_id
        log = folder / "prisoners_dilemma.jsonl"
        wait_until(
            lambda: log.exists() and b"simulation_started" in log.read_bytes(),
            "the run begins its log",
        )
        yield run_id, folder
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for the file's tests (about 0.9 CPU-s a launch): none runs ``asyncio.run``
    while it is up (their fixtures play runs through ``played_apart``)."""
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def played(tmp_path: Path) -> dict[str, Any]:
    """A runs folder with two scripted veyru runs (1 round; 3 rounds labelled ``arm=b``),
    played apart from Playwright's event loop.

    Both are claimed at fixed launch seconds in the past (2023), so a run a test launches now is
    the newest in the list whatever second it starts in (a run of another scenario claimed in
    the same second as ``long`` would sort after it: a tie goes by run id, descending)."""
    runs = tmp_path / "runs"
    short = played_apart(lambda: play_run(str(runs), rounds=1, now_unix=1_700_000_101))
    long = played_apart(lambda: play_run(str(runs), rounds=3, overrides=("labels.arm=b",),
                                         now_unix=1_700_000_202))  # fmt: skip
    return {"runs": runs, "short": short, "long": long}


def _read_stream(url: str, headers: dict[str, str], until: str | None = None) -> list[str]:
    """The event ids of the run's stream, to its end or (then cut) through event ``until``."""
    import httpx

    ids: list[str] = []
    with httpx.stream("GET", url, headers=headers, timeout=None) as got:
        assert got.status_code == 200
        event_id = ""
        for line in got.iter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("event: "):
                ids.append(event_id)
                if line[7:] == until:
                    break  # leaving the block closes the connection mid-run
    return ids


def _seat_cells(page: Any) -> dict[str, tuple[str, str, str]]:
    """Each seat row's requests, tokens and spend cells as the page shows them now."""
    cells = page.eval_on_selector_all(
        "tr[data-seat]",
        "rows => rows.map(r => [r.dataset.seat, r.querySelector('.requests').textContent,"
        " r.querySelector('.tokens').textContent, r.querySelector('.spend').textContent])",
    )
    return {seat: (requests, tokens, spend) for seat, requests, tokens, spend in cells}


def _paid_so_far(log: Path) -> tuple[str, dict[str, tuple[str, str, str]]]:
    """What the page must show of the log's answered calls (each :data:`USAGE`, priced alike):
    the header's cost line and each seat's requests, tokens and spend."""
    unit = price_call("openai", "gpt-4.1-mini", **USAGE)
    assert unit is not None
    answered: dict[str, int] = {"player_a": 0, "player_b": 0}
    for line in log.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line still being written: the next look reads it whole
        kind = event["event_type"]
        if kind == "llm_response_received" or (
            kind == "model_request_abandoned" and event["answered"]
        ):
            answered[event["agent_id"]] += 1
    tokens = USAGE["input_tokens"], USAGE["output_tokens"]
    seats = {
        seat: (str(n), f"{n * tokens[0]} / {n * tokens[1]}", f"${n * unit:.4f}")
        for seat, n in answered.items()
    }
    return f"${sum(answered.values()) * unit:.4f} (judge $0.0000)", seats


def _row_ids(page: Any) -> list[str]:
    return page.eval_on_selector_all("tr.run", "rows => rows.map(r => r.dataset.runId)")


def test_the_list_filters_and_exports_a_zip_whose_run_level_is_the_clis(
    played: dict[str, Any], browser: Any, tmp_path: Path, shots: Path
) -> None:
    runs, short, long = played["runs"], played["short"], played["long"]
    with serving_here(str(runs)) as base:
        page = browser.new_page(accept_downloads=True)
        page.goto(base + "/")
        assert _row_ids(page) == [long.run_id, short.run_id]
        assert page.inner_text("#showing") == "showing 2 of 2"
        page.screenshot(path=str(shots / "runs-list.png"), full_page=True)
        page.fill('input[name="knob"] >> nth=-1', "round_count>=2")
        page.click("#apply")
        page.wait_for_url(re.compile(r"knob="))
        assert _row_ids(page) == [long.run_id]
        page.goto(base + "/?label=arm%3Db")
        assert _row_ids(page) == [long.run_id]
        page.goto(base + "/?knob=round_count%3E%3Dmany")
        assert page.inner_text("#filter-error") == (
            "glossogen: error: --knob 'round_count>=many': knob 'round_count', operator '>=', "
            "value 'many': the run records a number"
        )

        page.goto(base + "/")
        page.check("#select-all")  # both rows; then one of them is deleted before the preview
        shutil.rmtree(short.url)
        page.click("#open-export")
        assert page.inner_text("#ticked-count") == "2"
        page.click("#do-preview")
        page.wait_for_selector("#preview p >> nth=1")
        assert page.inner_text("#preview p >> nth=0") == (
            f"dropped, no longer resolve: {short.run_id}"
        )
        assert page.inner_text("#preview p >> nth=1") == "1 runs · scenarios veyru"
        tables = page.eval_on_selector_all(  # a row per table, its columns folded
            "#preview table.preview-tables tbody tr",
            "rs => rs.map(r => [r.dataset.table, r.querySelector('details').open])",
        )
        assert tables == [["run_level", False], ["round_level", False], ["agent_level", False]]
        with page.expect_download() as download:
            page.click("#download-csv")
        zipped = tmp_path / "tables.zip"
        download.value.save_as(zipped)
        page.screenshot(path=str(shots / "export-dialog.png"), full_page=True)
    out = tmp_path / "cli"
    with pytest.raises(SystemExit) as exported:  # the CLI's entry in-process: its tables count
        main(["export", "--runs-dir", str(runs), "--out", str(out), "--run-id", long.run_id])
    assert exported.value.code == 0
    with zipfile.ZipFile(zipped) as zf:
        assert sorted(zf.namelist()) == [
            "agent_level.csv", "columns.csv", "round_level.csv", "run_level.csv"
        ]  # fmt: skip
        from_page = zf.read("run_level.csv").decode()
    assert from_page == (out / "run_level.csv").read_text()
    assert [r["run_id"] for r in csv.DictReader(io.StringIO(from_page))] == [long.run_id]


def test_a_live_run_streams_into_its_page_escaped_and_ends_without_a_reload(
    played: dict[str, Any],
    browser: Any,
    shots: Path,
    prefect_api: str,
    model_stub: StubModelServer,
) -> None:
    runs, finished = played["runs"], played["long"]
    payload = f"{XSS_SCRIPT} and {XSS_IMG}"
    gate = RoundGate([payload])
    model_stub.responder = gate
    with serving_here(str(runs)) as base:
        page = browser.new_page()
        page.goto(f"{base}/runs/{finished.run_id}")
        page.screenshot(path=str(shots / "run-finished-veyru.png"), full_page=True)
        page.click('#round-picker .pick[data-round="1"]')  # one round at a time
        visible = page.eval_on_selector_all(
            "article.round",
            "as => as.filter(a => a.offsetParent !== null).map(a => a.dataset.round)",
        )
        assert visible == ["1"]
        try:
            with live_run(runs, model_stub, rounds=2) as (run_id, folder):
                listing = browser.new_page()
                listing.goto(base + "/")
                assert _row_ids(listing)[0] == run_id
                assert listing.inner_text(f'tr[data-run-id="{run_id}"] .status') == "running"
                page.goto(f"{base}/runs/{run_id}")
                assert page.inner_text("#status") == "running"
                assert page.locator(".column[data-channel=table] .msg").count() == 0
                nothing_yet = {"player_a": ("0", "0 / 0", "$0.0000"),
                               "player_b": ("0", "0 / 0", "$0.0000")}  # fmt: skip
                assert (page.inner_text("#cost"), _seat_cells(page)) == (
                    "$0.0000 (judge $0.0000)",
                    nothing_yet,  # every first request is held
                )
                gate.open(1)  # round 1 is answered; round 2 waits
                page.wait_for_selector(
                    'article.round[data-round="1"] li.verdict', state="attached", timeout=TIMEOUT_MS
                )
                # The header's cost and each seat's requests, tokens and spend follow the log
                # as it streams, without a reload, before the run ends.
                log = folder / "prisoners_dilemma.jsonl"
                wait_until(
                    lambda: (page.inner_text("#cost"), _seat_cells(page)) == _paid_so_far(log),
                    "the page's cost and seat table to show what the log paid",
                )
                cost, seats = _paid_so_far(log)
                # A bound: which seat's send is refused (and retried), and how far round 1 has
                # got when the page catches up, follow real-time thread order.
                assert int(seats["player_a"][0]) >= 1 and int(seats["player_b"][0]) >= 1
                assert cost != "$0.0000 (judge $0.0000)"
                assert "simulation_ended" not in log.read_text()
                texts = page.eval_on_selector_all(
                    ".column[data-channel=table] .msg .text", "els => els.map(e => e.textContent)"
                )
                # The second seat's send was refused (the other had written since it read).
                assert texts == [payload]
                assert page.evaluate("window.__xss") is None  # shown as text, never run
                assert page.locator("article.round img").count() == 0
                # Live rows name the seat's model, and the round says what ended it.
                assert page.eval_on_selector_all(
                    ".column[data-channel=table] .msg .model", "els => els.map(e => e.textContent)"
                ) == ["openai:gpt-4.1-mini"]
                # The verdict above may have been drawn by the summary's re-read, before the
                # stream brought round 1's last events: wait for the stream to reach its result
                # (only the stream's round_result_recorded sets the round's badge); round_ended
                # came before it in the log, so the page shows what ended the round by then.
                wait_until(
                    lambda: page.inner_text('article.round[data-round="1"] h3 .badge') != "playing",
                    "the stream to bring round 1's result to the page",
                )
                ended_by = [
                    json.loads(line)["trigger"]
                    for line in log.read_text().splitlines()
                    if '"round_ended"' in line and json.loads(line)["round_number"] == 1
                ]
                assert page.inner_text('article.round[data-round="1"] .ended-by') == ended_by[0]
                assert page.inner_text("#status") == "running"  # before simulation_ended
                assert page.inner_text("#rounds-played") == "1 played, 1 won of 2"
                assert "simulation_ended" not in (folder / "prisoners_dilemma.jsonl").read_text()
                page.screenshot(path=str(shots / "run-live.png"), full_page=True)
                # The stream is cut mid-run (after round 1's verdict) and reconnected after the
                # run ended, with Last-Event-ID: every event arrives once, in log order.
                events_url = f"{base}/api/g/local/runs/{run_id}/events"
                before = _read_stream(events_url, {}, until="round_result_recorded")
                gate.open(2)
                page.wait_for_function(
                    "document.getElementById('status').textContent === 'completed'",
                    timeout=TIMEOUT_MS,
                )
                load_scenario("prisoners_dilemma")  # its own events are typed here too
                logged = read_events(str(folder / "prisoners_dilemma.jsonl")).events
                sent = [e.event_id for e in logged if e.event_type == "message_sent"]
                shown = page.eval_on_selector_all(
                    ".column[data-channel=table] .msg", "els => els.map(e => e.dataset.eventId)"
                )
                assert shown == sent and len(sent) == 2  # every message once, in log order
                assert page.locator("article.round li.verdict").count() == 2
                assert page.inner_text("#rounds-played") == "2 played, 2 won of 2"
                after = _read_stream(events_url, {"Last-Event-ID": before[-1]})
                assert before + after == [e.event_id for e in logged]
                listing.wait_for_function(
                    f"document.querySelector('tr[data-run-id=\"{run_id}\"] .status')"
                    ".textContent.trim() === 'completed'",
                    timeout=TIMEOUT_MS,
                )
        finally:
            gate.open(10**6)


def test_the_stop_button_ends_a_live_run_interrupted(
    played: dict[str, Any],
    browser: Any,
    shots: Path,
    prefect_api: str,
    model_stub: StubModelServer,
) -> None:
    runs = played["runs"]
    gate = RoundGate(["hello"])
    model_stub.responder = gate
    with serving_here(str(runs)) as base:
        page = browser.new_page()
        try:
            with live_run(runs, model_stub, rounds=3) as (run_id, folder):
                page.goto(f"{base}/runs/{run_id}")
                gate.open(1)
                page.wait_for_selector(
                    'article.round[data-round="1"] li.verdict', state="attached", timeout=TIMEOUT_MS
                )
                page.click("#stop")
                page.wait_for_function(
                    "document.getElementById('status').textContent === 'interrupted'",
                    timeout=TIMEOUT_MS,
                )
                assert page.locator("#stop").count() == 0
                assert page.inner_text("#stop-result").startswith(f"stopping {run_id} (pid ")
                page.screenshot(path=str(shots / "run-stopped.png"), full_page=True)
                gate.open(10**6)
        finally:
            gate.open(10**6)
    ended = [json.loads(line) for line in (folder / "prisoners_dilemma.jsonl").open()][-1]
    assert (ended["event_type"], ended["status"]) == ("simulation_ended", "interrupted")
