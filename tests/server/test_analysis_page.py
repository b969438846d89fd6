"""The analysis page in a real headless Chromium against ``glossogen serve``'s app (served in the test's process), over the
small cohort of ``tests/analysis/cohort.py``: the list's filters carry over, the page's table
holds the numbers ``glossogen analyze --json`` prints for the same query (as REST and MCP do),
its CSV and chart downloads are ``--csv``'s rows and a valid SVG, a dashboard saved from the page
is a file under the runs dir that ``analyze --dashboard`` renders, and opening it answers the
same again; a comparison, a row filter, a seed and resamples set in the page's own inputs post
the query the flags make and show the same cells and comparisons. Every request the page makes
goes to the server (no CDN)."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from glossogen.analysis._dashboard import load_dashboard
from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.fixtures.parts import require_part
from tests.server.conftest import TIMEOUT_MS, launched_chromium
from tests.server.serving import serving_here

require_part("playwright.sync_api", "the dev group's playwright: uv sync")

FLAGS = ["--scenario", "veyru", "--grain", "round", "--by", "round_budget_chars", "--measure",
         "round_success:rate", "--measure", "mean_chars_per_round"]  # fmt: skip
"""The query every surface is asked in its own words (default seed and resamples)."""

BODY: dict[str, Any] = {
    "selection": {"kind": "filters", "scenario": ["veyru"]}, "grain": "round",
    "by": ["round_budget_chars"],
    "measures": [{"field": "round_success", "agg": "rate"}, {"field": "mean_chars_per_round"}],
}  # fmt: skip
API = "/api/g/local/runs/analysis"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("analysis-page-runs")))


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for the file's tests (about 0.9 CPU-s a launch): none runs ``asyncio.run``
    while it is up."""
    with launched_chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def served(cohort: Cohort) -> Iterator[str]:
    """``glossogen serve``'s app over the cohort for the file's tests (its base URL): each test
    only reads the cohort or saves a dashboard of its own name."""
    with serving_here(cohort.runs_dir) as base:
        yield base


def cells(result: dict[str, Any]) -> list[list[Any]]:
    """A result's cells as the page's table lists them: keys, measure, value, n, missing, runs,
    low, high, interval."""
    rows = []
    for group in result["groups"]:
        for c in group["cells"]:
            i = c["interval"] or {"low": None, "high": None, "method": None}
            rows.append([group["keys"]["round_budget_chars"], c["measure"], c["value"], c["n"],
                         c["missing"], c["runs"], i["low"], i["high"], i["method"]])  # fmt: skip
    return rows


def page_cells(page: Any) -> list[list[Any]]:
    """The page's table, each number read from its exact value (``data-value``)."""
    rows = page.evaluate(
        """Array.from(document.querySelectorAll('#cells tbody tr')).map(tr =>
             Array.from(tr.cells).map(td => td.dataset.value !== undefined ?
               Number(td.dataset.value) : (td.className === 'blank' ? null : td.textContent)))"""
    )
    return [[r[0], r[1], *r[2:8], r[8]] for r in rows]


def mcp_answer(base: str) -> dict[str, Any]:
    from tests.mcp.conftest import call, http_session

    async def flow() -> dict[str, Any]:
        async with http_session(f"{base}/mcp") as session:
            return await call(session, "analyze_runs", grain="round", by=["round_budget_chars"],
                              measures=["round_success:rate", "mean_chars_per_round"],
                              selection={"kind": "filters", "scenario": ["veyru"]})  # fmt: skip

    # Playwright's sync API holds this thread's event loop: the client runs on another thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, flow()).result()


def fill_the_query(page: Any) -> None:
    """Ask the page :data:`FLAGS`' query (grain, key, two measures) in its own inputs."""
    page.select_option("#grain", "round")
    page.fill("#key1", "round_budget_chars")
    page.fill("#measures .measure-field", "round_success")
    page.select_option("#measures .measure-agg", "rate")
    page.click("#add-measure")
    page.locator("#measures .measure-field").nth(1).fill("mean_chars_per_round")


def refused_on_the_page(page: Any, url: str, measure: str) -> str:
    """Open ``url``, ask ``measure`` and return the refusal the page shows."""
    page.goto(url)
    page.wait_for_selector("#analysis[data-ready=true]")
    page.fill("#measures .measure-field", measure)
    page.click("#run-query")
    page.wait_for_selector("#analysis-error:not([hidden])")
    return str(page.inner_text("#analysis-error"))


def answer_on_the_page(page: Any, times: int) -> None:
    page.wait_for_selector(f"#analysis[data-answered='{times}']", timeout=TIMEOUT_MS)
    page.wait_for_function(
        "() => { const i = document.getElementById('chart-image'); "
        "return i.complete && i.naturalWidth > 0; }",
        timeout=TIMEOUT_MS,
    )


def test_the_page_answers_as_every_surface(
    cohort: Cohort, served: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], browser: Any,
    shots: Path,
) -> None:  # fmt: skip
    cli = analyze_json(capsys, "--runs-dir", cohort.runs_dir, *FLAGS)
    assert analyze("--runs-dir", cohort.runs_dir, *FLAGS, "--csv") == 0
    cli_csv = capsys.readouterr().out
    expected = cells(cli)
    # Worked by hand from the cohort's table (the intervals are the seeded bootstrap's).
    assert [row[:6] for row in expected] == [
        ["300", "round_success:rate", 0.75, 4, 0, 2],
        ["300", "mean_chars_per_round:mean", 15.0, 4, 0, 2],
        ["600", "round_success:rate", 0.25, 4, 0, 2],
        ["600", "mean_chars_per_round:mean", 30.0, 2, 2, 1],
        [None, "round_success:rate", 1.0, 2, 0, 1],
        [None, "mean_chars_per_round:mean", 50.0, 2, 0, 1],
    ]
    base = served
    rest = httpx.post(f"{base}{API}/query", json=BODY, timeout=None)
    assert rest.status_code == 200, rest.text
    mcp = mcp_answer(base)
    requests: list[str] = []
    page = browser.new_page(viewport={"width": 1100, "height": 1300})
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/?scenario=veyru")
    page.click("#open-analysis")
    page.wait_for_selector("#analysis[data-ready=true]")
    assert page.url == f"{base}/analysis?scenario=veyru"
    assert page.inner_text("#cohort") == "scenario=veyru"
    fill_the_query(page)
    page.click("#run-query")
    answer_on_the_page(page, 1)
    shown = page_cells(page)
    assert page.inner_text("#summary") == "round grain: 10 rows of 5 runs"
    assert page.locator("#cells tbody tr").nth(3).locator("td").all_inner_texts() == [
        "600", "mean_chars_per_round:mean", "30", "2", "2", "1", "", "", "none",
    ]  # fmt: skip
    with page.expect_download() as got_csv:
        page.click("#download-csv")
    page_csv = Path(got_csv.value.path()).read_text()
    with page.expect_download() as got_svg:
        page.click("#download-chart")
    svg = ET.parse(got_svg.value.path()).getroot()
    page.screenshot(path=str(shots / "analysis-page.png"), full_page=True)

    # Save the query as a dashboard, render it with the CLI, open it again on the page.
    page.fill("#chart-name", "success")
    page.fill("#dashboard-name", "study")
    page.click("#save-dashboard")
    saved = Path(cohort.runs_dir, ".glossogen", "dashboards", "study.yaml")
    # Its file within the runs dir: the server's own path is never shown.
    page.wait_for_selector("#dashboard-status:has-text('saved .glossogen/dashboards/study.yaml')")
    board = load_dashboard(str(saved))
    page.goto(f"{base}/analysis")
    page.wait_for_selector("#analysis[data-ready=true]")
    assert page.inner_text("#cohort") == "every run"
    page.select_option("#dashboard-names", "study")
    page.click("#open-dashboard")
    page.click("button.dashboard-chart[data-chart=success]")
    answer_on_the_page(page, 1)
    reopened = page_cells(page)
    assert page.inner_text("#cohort") == "from dashboard study, chart success"
    assert page.input_value("#key1") == "round_budget_chars"
    # A refusal is the REST answer's one line, and nothing is drawn.
    refused = refused_on_the_page(page, f"{base}/analysis?knob=x", "task_done")
    assert page.locator("#answer").is_hidden()
    assert errors == []
    assert refused == (
        "knob 'x': no operator; write <knob><op><value> with op one of != >= <= = > <"
    )
    assert rest.json() == cli
    assert mcp == cli
    assert shown == expected
    assert reopened == expected
    assert page_csv == cli_csv
    assert (svg.tag, svg.get("width"), svg.get("height")) == (f"{SVG}svg", "518.4pt", "288pt")
    assert svg.find(f".//{SVG}g[@id='axes_1']") is not None
    # The chart and the downloads are blobs the page made of the server's answers.
    assert [u for u in requests if not u.startswith((base + "/", f"blob:{base}/"))] == []
    assert sorted({u.removeprefix(base).split("?")[0] for u in requests if "/static/" in u}) == [
        "/static/analysis.js", "/static/browser.css", "/static/clock.js", "/static/runs.js",
    ]  # fmt: skip
    assert board.queries["success"].model_dump(exclude_defaults=True) == {
        "selection": {"scenario": ["veyru"]}, "grain": "round",
        "by": ["round_budget_chars"],
        "measures": [{"field": "round_success", "agg": "rate"}, {"field": "mean_chars_per_round"}],
    }  # fmt: skip
    out = tmp_path / "report"
    assert analyze("--runs-dir", cohort.runs_dir, "--dashboard", str(saved), "--out", str(out)) == 0
    capsys.readouterr()
    assert (out / "success.csv").read_text() == cli_csv


COMPARE_FLAGS = ["--scenario", "veyru", "--grain", "round", "--by", "round_budget_chars",
                 "--measure", "round_success:rate", "--measure", "mean_chars_per_round",
                 "--filter", "round_number<2", "--compare", "round_budget_chars=300,600",
                 "--seed", "7", "--resamples", "50"]  # fmt: skip
"""A comparison, a row filter, a seed and resamples, as ``glossogen analyze`` takes them."""


def page_table(page: Any, table: str) -> list[list[Any]]:
    """A table of the page, each number read from its exact value (``data-value``)."""
    rows: list[list[Any]] = page.evaluate(
        f"""Array.from(document.querySelectorAll('#{table} tbody tr')).map(tr =>
             Array.from(tr.cells).map(td => td.dataset.value !== undefined ?
               Number(td.dataset.value) : (td.className === 'blank' ? null : td.textContent)))"""
    )
    return rows


def comparisons(result: dict[str, Any]) -> list[list[Any]]:
    """A result's comparisons as the page lists them (as ``--csv`` does: paired as yes/no)."""
    return [[c["measure"], c["key"], c["a"], c["b"], c["a_value"], c["b_value"], c["difference"],
             c["interval"]["low"], c["interval"]["high"], c["interval"]["method"],
             "yes" if c["paired"] else "no", c["pairing"], c["n_a"], c["n_b"], c["pairs"]]
            for c in result["comparisons"]]  # fmt: skip


def fill_the_comparison(page: Any) -> None:
    """Ask the page :data:`COMPARE_FLAGS`' query in its own inputs."""
    fill_the_query(page)
    page.click("#add-filter")
    page.fill("#filters .filter-field", "round_number")
    page.select_option("#filters .filter-op", "<")
    page.fill("#filters .filter-value", "2")
    page.fill("#compare-key", "round_budget_chars")
    page.fill("#compare-a", "300")
    page.fill("#compare-b", "600")
    page.fill("#seed", "7")
    page.fill("#resamples", "50")


def test_the_page_compares_two_arms_over_filtered_rows(
    cohort: Cohort, served: str, capsys: pytest.CaptureFixture[str], browser: Any, shots: Path
) -> None:
    cli = analyze_json(capsys, "--runs-dir", cohort.runs_dir, *COMPARE_FLAGS)
    # Round 1 only (round_number<2), worked by hand from the cohort's table: r1 1/8, r2 1/20,
    # r3 0/25, r4 1/none, r5 (no budget) 1/40. Paired by seed for the rate (r1-r3, r2-r4); the
    # chars arm 600 has r3 alone, so its seeds differ from 300's and the comparison is unpaired.
    # Per budget: (value, n, missing, runs) of the rate, then of the mean.
    by_hand = {"300": [(1.0, 2, 0, 2), (14.0, 2, 0, 2)], "600": [(0.5, 2, 0, 2), (25.0, 1, 1, 1)],
               None: [(1.0, 1, 0, 1), (40.0, 1, 0, 1)]}  # fmt: skip
    measures = ["round_success:rate", "mean_chars_per_round:mean"]
    assert [row[:6] for row in cells(cli)] == [
        [budget, m, *cell] for budget, pair in by_hand.items()
        for m, cell in zip(measures, pair, strict=True)
    ]  # fmt: skip
    assert [[*row[:7], *row[10:]] for row in comparisons(cli)] == [
        ["round_success:rate", "round_budget_chars", "300", "600", 1.0, 0.5, -0.5, "yes", "seed",
         2, 2, 2],
        ["mean_chars_per_round:mean", "round_budget_chars", "300", "600", 14.0, 25.0, 11.0, "no",
         "unpaired: the arms' seeds differ", 2, 1, 0],
    ]  # fmt: skip
    base = served
    posted: list[Any] = []
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(TIMEOUT_MS)
    page.on("request", lambda r: posted.append(r.post_data_json)
            if r.url.endswith("/analysis/query") else None)  # fmt: skip
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/analysis?scenario=veyru")
    page.wait_for_selector("#analysis[data-ready=true]")
    fill_the_comparison(page)
    page.click("#run-query")
    answer_on_the_page(page, 1)
    shown = page_table(page, "cells")
    shown_comparisons = page_table(page, "comparisons")
    page.screenshot(path=str(shots / "analysis-page-compare.png"), full_page=True)
    # Headed as the CLI and the report head them; within a 1200 px window, nothing past it.
    heading = page.inner_text("#comparisons-part h3")
    page.set_viewport_size({"width": 1200, "height": 1400})
    widths = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth, "
        "document.querySelector('#comparisons-part').getBoundingClientRect().right <= "
        "document.documentElement.clientWidth, "
        "document.querySelector('#comparisons').getBoundingClientRect().right <= "
        "document.querySelector('#answer').getBoundingClientRect().right]"
    )
    # Saved and opened again, the dashboard's query fills the same inputs.
    page.fill("#chart-name", "arms")
    page.fill("#dashboard-name", "arms")
    page.click("#save-dashboard")
    page.wait_for_selector("#dashboard-status:has-text('saved')")
    page.goto(f"{base}/analysis")
    page.wait_for_selector("#analysis[data-ready=true]")
    page.select_option("#dashboard-names", "arms")
    page.click("#open-dashboard")
    page.click("button.dashboard-chart[data-chart=arms]")
    answer_on_the_page(page, 1)
    reopened = (page_table(page, "cells"), page_table(page, "comparisons"))
    inputs = [page.input_value(f"#{i}") for i in
              ("compare-key", "compare-a", "compare-b", "seed", "resamples")]  # fmt: skip
    assert errors == []
    # The page posted the engine's query, nothing else: the flags' query, field for field.
    assert {**posted[0], "selection": posted[0]["selection"]["scenario"]} == {
        "selection": ["veyru"], "grain": "round", "by": ["round_budget_chars"],
        "measures": [{"field": "round_success", "agg": "rate"},
                     {"field": "mean_chars_per_round", "agg": "mean"}],
        "filters": [{"field": "round_number", "op": "<", "value": "2"}],
        "compare": {"key": "round_budget_chars", "a": "300", "b": "600"},
        "seed": 7, "resamples": 50,
    }  # fmt: skip
    assert shown == cells(cli)
    assert shown_comparisons == comparisons(cli)
    assert reopened == (shown, shown_comparisons)
    assert heading == "comparisons (B - A)"
    assert widths == [1200, 1200, True, True]
    assert inputs == ["round_budget_chars", "300", "600", "7", "50"]


def test_render_and_dashboard_refusals(cohort: Cohort, served: str) -> None:
    base = served
    result = httpx.post(f"{base}{API}/query", json=BODY, timeout=None).json()
    heatmap = httpx.post(f"{base}{API}/render", json={"result": result, "chart": "heatmap"},
                         timeout=None)  # fmt: skip
    table = httpx.post(f"{base}{API}/render", json={"result": result, "chart": "table"},
                       timeout=None)  # fmt: skip
    missing = httpx.get(f"{base}{API}/dashboards/absent", timeout=None)
    bad_name = httpx.put(f"{base}{API}/dashboards/..secret",
                         json={"queries": {"q": BODY}, "charts": [{"name": "c", "query": "q"}]},
                         timeout=None)  # fmt: skip
    bad_body = httpx.put(f"{base}{API}/dashboards/ok",
                         json={"queries": {"q": BODY}, "charts": [{"name": "c", "query": "x"}]},
                         timeout=None)  # fmt: skip
    listed = httpx.get(f"{base}{API}/dashboards", timeout=None)
    assert (heatmap.status_code, heatmap.json()["detail"]) == (
        422, {"field": "chart", "message": "chart 'heatmap' needs two keys (by K1,K2)"},
    )  # fmt: skip
    assert table.status_code == 200
    assert (table.json()["svg"], table.json()["comparisons_csv"]) == (None, None)
    assert table.json()["csv"].splitlines()[1] == (
        "300,round_success:rate,0.75,4,0,2,0.5,1.0,bootstrap"
    )
    assert missing.status_code == 404
    assert (bad_name.status_code, bad_name.json()["detail"]) == (422, {
        "field": "dashboard",
        "message": "'..secret': a dashboard's name is letters, digits, _ . - (64 at most)",
    })  # fmt: skip
    assert (bad_body.status_code, bad_body.json()["detail"]) == (422, {
        "field": "body", "message": "charts.0.query 'x': no such query (q)",
    })  # fmt: skip
    assert "ok" not in listed.json()["names"]  # a refused dashboard is never written
    assert not Path(cohort.runs_dir, ".glossogen", "dashboards", "ok.yaml").exists()


def test_a_later_valid_submit_leaves_no_stale_error(served: str, browser: Any) -> None:
    base = served
    page = browser.new_page(viewport={"width": 1100, "height": 1300})
    first = refused_on_the_page(page, f"{base}/analysis", "nope")
    page.fill("#measures .measure-field", "task_done")
    page.click("#run-query")
    answer_on_the_page(page, 1)
    after_valid = page.locator("#analysis-error").is_hidden()
    # A refused submit answered after a later valid one: its error is not shown.
    held: list[Any] = []

    def hold_the_first(route: Any) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route("**/analysis/query", hold_the_first)
    page.fill("#measures .measure-field", "nope")
    page.click("#run-query")
    page.fill("#measures .measure-field", "task_done")
    page.click("#run-query")
    answer_on_the_page(page, 2)
    assert len(held) == 1
    with page.expect_response("**/analysis/query") as late_answer:
        held[0].continue_()
    assert late_answer.value.status == 422
    page.evaluate("() => fetch('/api/health')")  # a round trip after the late answer
    late = page.locator("#analysis-error").is_hidden()
    assert first == (
        "measures: measure 'nope': no such field at the run grain of this selection (list the "
        "grain's fields)"
    )
    assert (after_valid, late) == (True, True)


def test_a_seed_or_resamples_out_of_range_shows_the_servers_line(served: str, browser: Any) -> None:
    """The browser's own check of the number boxes (min 10 resamples) used to stop the submit
    with a bubble a person may not see, and a seed of -1 showed nothing: the form takes no
    check of its own (``novalidate``), and the page shows the REST refusal's line."""
    shown: dict[str, str] = {}
    base = served
    page = browser.new_page(viewport={"width": 1100, "height": 1300})
    for box, typed in (("#seed", "-1"), ("#resamples", "5")):
        page.goto(f"{base}/analysis")
        page.wait_for_selector("#analysis[data-ready=true]")
        page.fill("#measures .measure-field", "task_done")
        page.fill(box, typed)
        page.click("#run-query")
        page.wait_for_selector("#analysis-error:not([hidden])")
        shown[box] = page.inner_text("#analysis-error")
    assert shown == {
        "#seed": "seed -1: must be at least 0",  # the line names its field: not prefixed again
        "#resamples": "resamples: Input should be greater than or equal to 10",
    }
