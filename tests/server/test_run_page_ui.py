"""Issue 30 (4-7) in a real headless Chromium against ``glossogen serve``'s app: a finished
run page is a few screens per round (one round at a time, the case as a table, the report's
charts), a two-team round says which team won; a live run whose writer is killed reads
``stopped`` and stops reconnecting; live durations count from what the server said, never
ahead of it. The live runs are played runs whose ending was cut and whose folder a real
process holds the writer lock of (the lock dies with it, as a killed writer's does).

Screenshots go to the folder the test prints (``GLOSSOGEN_SCREENSHOTS`` or a temporary one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from glossogen.eventlog import RunView
from tests.fixtures.parts import require_part
from tests.fixtures.played_runs import play_run
from tests.server.conftest import TIMEOUT_MS, launched_chromium, played_apart
from tests.server.serving import serving_here

require_part("playwright.sync_api", "the dev group's playwright: uv sync")

VIEWPORT = {"width": 1400, "height": 900}


def _format(seconds: float) -> str:
    """The duration as the pages write it (``clock.js`` and the ``seconds`` filter alike)."""
    s = int(seconds + 0.5)
    h, m, sec = s // 3600, (s % 3600) // 60, s % 60
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"


def _score(run: Any, name: str) -> str:
    """A report's score as the list writes it (three significant digits, whole above 1000)."""
    score = json.loads((Path(run.url) / f"{run.scenario}_report.json").read_text())["metrics"][
        name
    ]["score"]
    return f"{score:,.0f}" if abs(score) >= 1000 else f"{score:.3g}"


def _cut_ending(run_url: str, scenario: str) -> None:
    """Drop the log's ``simulation_ended``: the run is unfinished (running while held)."""
    log = Path(run_url) / f"{scenario}.jsonl"
    lines = [
        line
        for line in log.read_text().splitlines()
        if json.loads(line)["event_type"] != "simulation_ended"
    ]
    log.write_text("\n".join(lines) + "\n")


@contextmanager
def writer(runs_dir: str, run_id: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding the run's writer lock (as a player does) until it is killed."""
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from glossogen.storage import RunStore; "
         "held = RunStore(sys.argv[1]).open_run(sys.argv[2]).lock(); "
         "print('locked', flush=True); sys.stdin.read()", runs_dir, run_id],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == "locked\n"
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def _visible_rounds(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "article.round", "as => as.filter(a => a.offsetParent !== null).map(a => a.dataset.round)"
    )


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for the file's tests (about 0.9 CPU-s a launch): none runs ``asyncio.run``
    while it is up (their fixtures play runs through ``played_apart``)."""
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def finished(tmp_path: Path) -> dict[str, Any]:
    """A 3-round prisoners_dilemma and a 2-round two-team spot_the_difference, evaluated
    (played apart from Playwright's event loop)."""
    runs = tmp_path / "runs"
    return played_apart(lambda: _finished(runs))


def _finished(runs: Path) -> dict[str, Any]:
    pd = play_run(str(runs), scenario="prisoners_dilemma", rounds=3, now_unix=1_700_000_301)
    std = play_run(str(runs), scenario="spot_the_difference", rounds=2, now_unix=1_700_000_401)
    for run in (pd, std):  # the CLI's entry in-process: its report is the point, not a process
        with pytest.raises(SystemExit) as done:
            main(["evaluate", run.scenario, "--run-dir", run.url,
                  "--metrics", "round_success,mean_chars_per_round"])  # fmt: skip
        assert done.value.code == 0
    # A sweep's labels, as a sweep trial carries them: the widest cells the list shows.
    (Path(pd.url) / "labels.json").write_text(
        '{"sweep": "veyru_grid", "cell": "cf33d9c92", "trial": "2", "epoch": "1", "part": "main"}'
    )
    return {"runs": runs, "pd": pd, "std": std}


@pytest.fixture
def unfinished(tmp_path: Path) -> dict[str, Any]:
    """A veyru run whose ``simulation_ended`` was cut (running while a writer holds it)."""
    runs = tmp_path / "runs"
    run = played_apart(lambda: play_run(str(runs), rounds=2, now_unix=1_700_000_101))
    _cut_ending(run.url, "veyru")
    return {"runs": runs, "run": run}


def test_a_finished_run_page_is_a_few_screens_per_round(
    finished: dict[str, Any], browser: Any, shots: Path
) -> None:
    runs, pd, std = finished["runs"], finished["pd"], finished["std"]
    with serving_here(str(runs)) as base:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{base}/runs/{pd.run_id}")
        page.screenshot(path=str(shots / "run-prisoners-dilemma.png"), full_page=True)
        size = page.evaluate(
            "[document.documentElement.scrollHeight, document.documentElement.scrollWidth]"
        )
        assert size[0] <= 2 * VIEWPORT["height"] and size[1] == VIEWPORT["width"]
        assert _visible_rounds(page) == ["3"]
        page.click('#round-picker .pick[data-round="1"]')
        assert _visible_rounds(page) == ["1"]
        assert page.url.endswith("?round=1#rounds")
        assert page.inner_text('article.round[data-round="1"] h3 .badge') == "lost"
        charts = page.eval_on_selector_all(
            ".charts img", "is => is.map(i => [i.alt, i.naturalWidth, i.naturalHeight])"
        )
        assert charts == [
            ["Characters per round (primary channels)", 640, 320],
            ["Success per round", 640, 320],
        ]
        tools = page.locator('article.round[data-round="1"] details.tools')
        tools.locator("> summary").click()
        row = tools.locator("tr.tool").first
        assert row.locator(".result details").get_attribute("open") is None  # folded
        assert row.bounding_box()["height"] < 40  # one line a call

        page.goto(f"{base}/runs/{std.run_id}?round=1")
        page.screenshot(path=str(shots / "run-spot-the-difference.png"), full_page=True)
        size = page.evaluate(
            "[document.documentElement.scrollHeight, document.documentElement.scrollWidth]"
        )
        assert size[0] <= 3 * VIEWPORT["height"] and size[1] == VIEWPORT["width"]
        page.click('article.round[data-round="1"] details.case > summary')  # the answer key
        page.screenshot(path=str(shots / "run-spot-the-difference-case.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") == VIEWPORT["width"]
        one = page.locator('article.round[data-round="1"]')
        assert one.locator(".winner").inner_text() == "team b won the round"
        assert one.locator("li.verdict").evaluate_all(
            "ls => ls.map(l => [l.dataset.team, l.querySelector('.outcome').textContent])"
        ) == [["a", "eligible"], ["b", "won"]]
        assert one.locator(".case-table").evaluate("t => t.scrollWidth <= t.clientWidth")

        listing = browser.new_page(viewport=VIEWPORT)
        listing.goto(base + "/")
        listing.screenshot(path=str(shots / "runs-list-evaluated.png"), full_page=True)
        cells = listing.eval_on_selector_all(
            "tr.run",
            "rs => rs.map(r => [r.dataset.runId, r.querySelector('.rounds').textContent,"
            " r.querySelector('.evaluation').textContent.replace(/\\s+/g, ' ').trim()])",
        )
        assert cells == [
            [std.run_id, "round 2 / 2 · 2 won", "evaluated round_success 1 mean_chars_per_round "
             + _score(std, "mean_chars_per_round")],
            [pd.run_id, "round 3 / 3 · 2 won", "evaluated round_success 0.667 "
             "mean_chars_per_round " + _score(pd, "mean_chars_per_round")],
        ]  # fmt: skip
        glyph = listing.locator("button.copy").first
        assert glyph.locator("svg").count() == 1 and glyph.inner_text() == ""
        # At 1280 px the table fits: long ids and metric names wrap, no score is pushed past
        # the window's right edge (a fresh user read round_success 0.6667 as "round_success 0").
        listing.set_viewport_size({"width": 1280, "height": 900})
        assert listing.evaluate("document.documentElement.scrollWidth") == 1280
        assert listing.eval_on_selector_all(
            "td.evaluation", "cs => cs.every(c => c.getBoundingClientRect().right <= 1280)"
        )


def test_live_durations_never_run_ahead_and_a_killed_writer_reads_stopped(
    unfinished: dict[str, Any], browser: Any, shots: Path
) -> None:
    runs, run = unfinished["runs"], unfinished["run"]
    with serving_here(str(runs)) as base, writer(str(runs), run.run_id) as held:
        listing = browser.new_page(viewport=VIEWPORT)
        listing.clock.install()
        listing.goto(base + "/")
        cell = f'tr[data-run-id="{run.run_id}"] td.duration'
        assert listing.inner_text(f'tr[data-run-id="{run.run_id}"] .status') == "running"
        # A minute on the page's clock (the lid closed and opened: each due timer fires once, at
        # its end): the rows are refreshed from the server then; once the fresh rows are in, the
        # duration is what the server said, not a minute more. Not run_for: its minute of timers
        # takes real time, a loaded machine's refresh could land inside it, and the fresh rows
        # then rightly counted the fake seconds left in that minute (ci: 26s said, 27s shown).
        listing.evaluate("window.__rows = document.getElementById('rows')")
        listing.clock.fast_forward(60_000)
        listing.wait_for_function(
            "document.getElementById('rows') !== window.__rows", timeout=TIMEOUT_MS
        )
        listing.clock.run_for(1_000)
        said = float(listing.get_attribute(cell, "data-live-seconds") or "nan")
        assert listing.inner_text(cell) == _format(said)

        page = browser.new_page(viewport=VIEWPORT)
        # The page's clock stands still from before the page loads: an installed clock flows
        # with real time, so the seconds a loaded machine spent between the page's first tick
        # and run_for were counted too (h50split: 1s more shown than header + 5 under -n 2).
        begin = datetime(2026, 1, 1, tzinfo=UTC)
        page.clock.install(time=begin)
        page.clock.pause_at(begin + timedelta(minutes=10))  # bound: a fake clock's, not a wait
        streams: list[str] = []
        page.on("request", lambda r: streams.append(r.url) if "/events" in r.url else None)
        page.goto(f"{base}/runs/{run.run_id}")
        assert page.inner_text("#status") == "running"
        played = RunView.load(f"{run.url}/veyru.jsonl").duration_seconds
        header = float(page.get_attribute("#duration", "data-live-seconds") or "nan")
        assert page.inner_text("#duration") == _format(header)  # the server's, as it came
        page.clock.run_for(5_000)  # the header's duration counts on
        assert page.inner_text("#duration") == _format(header + 5)
        page.clock.resume()  # the clock flows again: the page's reconnects are its timers
        held.kill()  # the writer dies: its lock goes with it, no simulation_ended is written
        held.wait()
        page.wait_for_function(
            "document.getElementById('status').textContent === 'stopped'", timeout=TIMEOUT_MS
        )
        assert page.locator("#stop").count() == 0
        assert page.locator("#resumable").count() == 1
        assert page.get_attribute("#duration", "data-live-seconds") is None  # no more counting
        page.wait_for_function(  # the seconds it played, as the view sums them
            f"document.getElementById('duration').textContent === {_format(played)!r}",
            timeout=TIMEOUT_MS,
        )
        page.screenshot(path=str(shots / "run-writer-killed.png"), full_page=True)
        opened = len(streams)
        page.clock.run_for(10_000)
        page.wait_for_timeout(3_000)  # the stream is closed: nothing reconnects
        assert len(streams) == opened


@pytest.fixture
def ranked(tmp_path: Path) -> dict[str, Any]:
    """A played 2-round two-team spot_the_difference run."""
    runs = tmp_path / "runs"
    run = played_apart(lambda: play_run(str(runs), scenario="spot_the_difference", rounds=2,
                                        now_unix=1_700_000_401))  # fmt: skip
    return {"runs": runs, "run": run}


def test_a_ranked_round_streaming_in_says_which_team_won_as_the_finished_page_does(
    ranked: dict[str, Any], browser: Any, shots: Path
) -> None:
    """The ranked run's log stops after round 2 began, held by a writer; the rest of round 2
    is then appended. Both teams' verdicts are successes; the scenario's ranking names team a
    the winner, so the live page says ``a won``, ``b eligible`` (MCP's ``get_run`` and the
    finished page's words), not ``won`` twice."""
    runs, run = ranked["runs"], ranked["run"]
    log = Path(run.url) / "spot_the_difference.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    cut = next(
        i
        for i, line in enumerate(lines)
        if json.loads(line)["event_type"] == "round_started"
        and json.loads(line)["round_number"] == 2
    )
    log.write_text("".join(lines[: cut + 1]))
    with serving_here(str(runs)) as base, writer(str(runs), run.run_id):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{base}/runs/{run.run_id}")
        assert page.inner_text("#status") == "running"
        with log.open("a") as f:  # the rest of round 2, as its player writes it
            f.write("".join(lines[cut + 1 :]))
        teams = (
            "[...document.querySelectorAll('article.round[data-round=\"2\"] li.verdict')]"
            ".map(l => l.dataset.team + ' ' + l.querySelector('.outcome').textContent)"
        )
        page.wait_for_function(
            f"JSON.stringify({teams}) === JSON.stringify(['a won', 'b eligible'])",
            timeout=TIMEOUT_MS,
        )
        page.screenshot(path=str(shots / "run-live-ranked-round.png"), full_page=True)
        live = page.locator('article.round[data-round="2"] li.verdict').evaluate_all(
            "ls => ls.map(l => [l.className, l.textContent])"
        )
        assert live == [
            ["verdict won", "team a: won — all 4 differences found, 553 characters"],
            ["verdict eligible", "team b: eligible — all 4 differences found, 782 characters"],
        ]
        winner = 'article.round[data-round="2"] h3 .winner'
        assert page.inner_text(winner) == "team a won the round"
        finished = browser.new_page(viewport=VIEWPORT)
        finished.goto(f"{base}/runs/{run.run_id}?round=2")
        assert finished.inner_text(winner) == "team a won the round"
        assert (
            finished.locator('article.round[data-round="2"] li.verdict').evaluate_all(
                "ls => ls.map(l => [l.className, l.textContent])"
            )
            == live
        )
