"""Issue 30 (4, 6, 7 and the cosmetics) over HTTP: the run list's cache follows every file it
reads and shows rounds won and the headline metrics; the run page is one round at a time with
the case as a table, tool calls as rows and a ranked round's winner; a missing run is a page;
the favicon; a GlossoGen 0.5 run's seat spend. Scripted runs played for real, a real app."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from glossogen.server import create_app
from tests.export.conftest import metric, write_report
from tests.fixtures.played_runs import play_run

CASE_05 = Path(__file__).resolve().parents[1] / "cases" / "glossogen-0.5-runs" / "veyru"


def _row(listing: str, run_id: str) -> str:
    found = re.search(rf'<tr class="run [a-z]+" data-run-id="{run_id}">(.*?)</tr>', listing, re.S)
    assert found is not None, listing
    return found.group(1)


def test_the_list_rereads_a_run_whose_report_or_labels_changed_and_shows_its_headline(
    tmp_path: Path,
) -> None:
    run = play_run(str(tmp_path), rounds=3, now_unix=1_700_000_101)
    client = TestClient(create_app(str(tmp_path)))
    first = _row(client.get("/").text, run.run_id)
    assert 'class="evaluation"></td>' in first
    assert 'round 3 / 3 · <span class="won">2 won</span>' in first
    # evaluate writes a report, a researcher edits the labels: the same server shows both.
    metrics = {
        "agent_cycle_failures": metric("agent_cycle_failures", 0.0, 3),
        "character_entropy_bits": metric("character_entropy_bits", 4.1, 3),
        "cost_per_round_usd": metric("cost_per_round_usd", 0.0, 3),
        "mean_chars_per_round": metric("mean_chars_per_round", 123.0, 3),
        "round_success": metric("round_success", 1.0, 3),
    }
    write_report(Path(run.url), "veyru", metrics)
    (Path(run.url) / "labels.json").write_text(json.dumps({"arm": "b"}))
    listed = client.get("/").text
    row = _row(listed, run.run_id)
    assert re.sub(r"\s+", " ", row.split('class="evaluation">')[1].split("</td>")[0]) == (
        '<span class="badge evaluated">evaluated</span> <span class="score">round_success 1</span>'
        ' <span class="score">mean_chars_per_round 123</span>'
    )
    assert '<span class="badge label">arm=b</span>' in row
    assert run.run_id in client.get("/?label=arm%3Db").text
    assert run.run_id not in client.get("/?label=arm%3Da").text


def test_the_run_page_is_one_round_at_a_time_with_the_case_as_a_table(tmp_path: Path) -> None:
    run = play_run(str(tmp_path), scenario="prisoners_dilemma", rounds=3, now_unix=1_700_000_301)
    client = TestClient(create_app(str(tmp_path)))
    page = client.get(f"/runs/{run.run_id}").text
    articles = re.findall(r'<article class="round (\w+)" data-round="(\d)"( hidden)?>', page)
    assert [(n, hidden) for _, n, hidden in articles] == [("1", " hidden"), ("2", " hidden"),
                                                           ("3", "")]  # fmt: skip
    picks = re.findall(r'<a class="pick (\w+)( current)?" data-round="(\d)"', page)
    assert [(n, current) for _, current, n in picks] == [("1", ""), ("2", ""), ("3", " current")]
    chosen = client.get(f"/runs/{run.run_id}?round=1").text
    assert '<article class="round lost" data-round="1">' in chosen  # the scripted misplay
    assert '<td class="sender">player_a</td><td><code>lock_in</code></td>' in page
    assert "<summary>result</summary>" in page  # the result folded under its call
    assert 'ended by: <span class="ended-by">settled</span>' in page
    assert '<div class="column" data-channel="table"><h4>table</h4>' in page
    assert '<h4 class="postmortem-title">postmortem</h4>' in page
    assert '<svg class="chart"' not in page


def test_a_ranked_round_says_which_team_won_and_each_teams_reason(tmp_path: Path) -> None:
    run = play_run(str(tmp_path), scenario="spot_the_difference", rounds=2, now_unix=1_700_000_401)
    page = TestClient(create_app(str(tmp_path))).get(f"/runs/{run.run_id}?round=1").text
    one = page.split('data-round="1">', 1)[1].split("</article>", 1)[0]
    assert '<span class="winner">team b won the round</span>' in one
    verdicts = re.findall(
        r'<li class="verdict (\w+)" data-team="(\w)"><strong>team \w</strong>: '
        r'<span class="outcome">(\w+)</span> — <span class="reason">(.*?)</span></li>',
        one,
    )
    assert [(team, outcome) for _, team, outcome, _ in verdicts] == [("a", "eligible"),
                                                                      ("b", "won")]  # fmt: skip
    assert all(reason for *_, reason in verdicts)
    case = one.split('<table class="case-table"><tbody>', 1)[1].split("</details>", 1)[0]
    assert "<tr><th>grid_size</th><td>12</td></tr>" in case
    assert (
        '<tr><th>scene_a</th><td><table class="case-list"><thead><tr><th>size</th>'
        "<th>colour</th><th>shape</th><th>x</th><th>y</th></tr></thead>"
    ) in case
    assert "{" not in case and "&#34;" not in case  # a table, not JSON


def test_a_missing_run_is_a_page_and_the_favicon_is_served(tmp_path: Path) -> None:
    client = TestClient(create_app(str(tmp_path)))
    missing = client.get("/runs/veyru/1")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert (
        '<p class="error" id="page-error">run ids that no longer resolve: veyru/1</p>'
        in missing.text
    )
    api = client.get("/api/g/local/runs/veyru/1/summary")
    assert (api.status_code, api.json()) == (
        404,
        {"detail": {"field": "run_id", "message": "run ids that no longer resolve: veyru/1"}},
    )
    icon = client.get("/favicon.ico")
    assert (icon.status_code, icon.headers["content-type"]) == (200, "image/svg+xml")
    assert '<link rel="icon" href="/favicon.ico" type="image/svg+xml">' in missing.text


def test_a_glossogen_05_runs_seats_say_their_spend_was_not_recorded(tmp_path: Path) -> None:
    shutil.copytree(CASE_05, tmp_path / "veyru")
    page = TestClient(create_app(str(tmp_path))).get("/runs/veyru/1795939736").text
    assert re.findall(r'<td class="spend">(.*?)</td>', page) == [
        "not recorded (GlossoGen 0.5)",
        "not recorded (GlossoGen 0.5)",
    ]
    assert (
        '<dd id="cost">$0.0000 (judge $0.0000) · the total GlossoGen 0.5 recorded; it recorded no'
        " seat&#39;s spend</dd>"
    ) in page


def test_a_run_without_postmortems_has_no_postmortem_column(tmp_path: Path) -> None:
    run = play_run(
        str(tmp_path),
        scenario="prisoners_dilemma",
        rounds=1,
        overrides=("postmortem_enabled=false",),
        now_unix=1_700_000_501,
    )
    page = TestClient(create_app(str(tmp_path))).get(f"/runs/{run.run_id}").text
    assert re.findall(r'<div class="column" data-channel="(\w+)">', page) == ["table"]
    assert "postmortem-title" not in page
