"""The run browser over HTTP: the list and its filters, the run page, the event stream and its
resume, Stop, scenario pages, the 404 rules and the token rule (a real ``glossogen serve``)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from glossogen.cli import main
from glossogen.eventlog import read_events
from glossogen.server import create_app
from tests.fixtures.played_runs import claim_cancelled, claim_unbegun, play_run
from tests.server.serving import XSS_IMG, XSS_SCRIPT, plant_message, serving, serving_here

LAUNCH = 1_800_000_000
"""The cohort's launch seconds count from here (2027-01-15): ids no clock reading decides."""


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Three played veyru runs (1, 2 and 3 rounds; the 2-round one labelled ``arm=a`` and
    ``pilot``, the 3-round one of group ``lab``) and a prisoners_dilemma run.

    Each is claimed at a launch second of its own choosing, not the clock's: the 3-round run and
    the prisoners_dilemma run share a second (the list's tie), and no run's last four digits
    occur in another's id."""
    root = tmp_path_factory.mktemp("runs")
    one = play_run(str(root), rounds=1, now_unix=LAUNCH + 101)
    two = play_run(str(root), rounds=2, overrides=("labels.arm=a", "labels.pilot=true"),
                   now_unix=LAUNCH + 202)  # fmt: skip
    three = play_run(str(root), rounds=3, group_slug="lab", now_unix=LAUNCH + 303)
    pd = play_run(str(root), scenario="prisoners_dilemma", rounds=1, now_unix=LAUNCH + 303)
    return {"root": str(root), "one": one.run_id, "two": two.run_id, "three": three.run_id,
            "pd": pd.run_id, "two_dir": two.url}  # fmt: skip


def _rows(html: str) -> list[str]:
    import re

    return re.findall(r'<tr class="run [a-z]+" data-run-id="([^"]+)"', html)


def _showing(html: str) -> str:
    import re

    found = re.search(r'<p class="footer" id="showing">([^<]*)</p>', html)
    assert found is not None
    return found.group(1)


def test_the_list_shows_every_run_newest_first_and_each_filter_narrows_it(
    cohort: dict[str, str],
) -> None:
    client = TestClient(create_app(cohort["root"]))
    every = client.get("/")
    assert every.status_code == 200
    # Newest first (the folder's unix timestamp; a tie by run id, descending), every group.
    assert _rows(every.text) == [cohort["three"], cohort["pd"], cohort["two"], cohort["one"]]
    assert cohort["three"] == f"veyru/{LAUNCH + 303}" and cohort["pd"].endswith(f"/{LAUNCH + 303}")
    assert _rows(every.text).index(cohort["three"]) < _rows(every.text).index(cohort["one"])
    assert _showing(every.text) == "showing 4 of 4"
    assert "round 3 / 3" in every.text and "round 1 / 1" in every.text
    knob = client.get("/", params={"knob": "round_count>=2"})
    assert _rows(knob.text) == [cohort["three"], cohort["two"]]
    assert _showing(knob.text) == "showing 2 of 2 (of 4 runs in the runs directory)"
    labelled = client.get("/", params=[("label", "arm=a"), ("label", "pilot")])
    assert _rows(labelled.text) == [cohort["two"]]
    assert _rows(client.get("/", params=[("label", "arm=b")]).text) == []
    assert _rows(client.get("/", params={"group": "lab"}).text) == [cohort["three"]]
    assert _rows(client.get("/", params={"scenario": "prisoners_dilemma"}).text) == [cohort["pd"]]
    # the menu offers every installed scenario: one with no run lists none, no error
    no_runs = client.get("/", params={"scenario": "signal_game"})
    assert (no_runs.status_code, _rows(no_runs.text)) == (200, [])
    assert _rows(client.get("/", params={"status": "running"}).text) == []
    assert _rows(client.get("/", params={"run_id": cohort["one"][-4:]}).text) == [cohort["one"]]


def test_a_bad_knob_condition_is_the_clis_one_line_error(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    client = TestClient(create_app(cohort["root"]))
    page = client.get("/", params={"knob": "round_count>=many"})
    assert page.status_code == 422
    capsys.readouterr()  # the CLI's entry in-process: its line is the point, not a process
    with pytest.raises(SystemExit) as cli:
        main(["export", "--runs-dir", cohort["root"], "--out",
              str(Path(cohort["root"]).parent / "out-bad"), "--knob", "round_count>=many"])  # fmt: skip
    assert cli.value.code == 65
    line = capsys.readouterr().err.strip()
    assert line == (
        "glossogen: error: --knob 'round_count>=many': knob 'round_count', operator '>=', "
        "value 'many': the run records a number"
    )
    from markupsafe import escape  # Jinja's own escaping: what the page holds is the line

    assert f'<p class="error" id="filter-error">{escape(line)}</p>' in page.text


def test_the_run_page_escapes_what_agents_wrote_and_shows_rounds_seats_and_case(
    tmp_path: Path,
) -> None:
    run = play_run(str(tmp_path), rounds=2)
    plant_message(run.url, "veyru", [XSS_SCRIPT, XSS_IMG])
    page = TestClient(create_app(str(tmp_path))).get(f"/runs/{run.run_id}")
    assert page.status_code == 200
    assert XSS_SCRIPT not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page.text
    assert "&#34;&gt;&lt;img src=x onerror=&#34;window.__xss = 2&#34;&gt;" in page.text
    assert '<span class="badge status-completed" id="status">completed</span>' in page.text
    assert "2 played, 2 won of 2" in page.text
    assert page.text.count("show the case (answer key)") == 2  # one case per round, folded
    assert '<div class="column" data-channel="link">' in page.text
    assert "<td>field_observer</td><td>field_observer</td><td>team</td>" in page.text


def test_the_stream_sends_the_whole_log_and_resumes_exactly_after_last_event_id(
    cohort: dict[str, str],
) -> None:
    client = TestClient(create_app(cohort["root"]))
    ids = [e.event_id for e in read_events(f"{cohort['two_dir']}/veyru.jsonl").events]
    url = f"/api/g/local/runs/{cohort['two']}/events"

    def stream(headers: dict[str, str]) -> list[tuple[str, str, dict]]:
        with client.stream("GET", url, headers=headers) as got:
            assert got.status_code == 200
            assert got.headers["content-type"].startswith("text/event-stream")
            frames = got.read().decode().split("\n\n")
        out = []
        for frame in frames:
            fields = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
            if "id" in fields:
                out.append((fields["id"], fields["event"], json.loads(fields["data"])))
        return out

    whole = stream({})
    assert [i for i, _, _ in whole] == ids
    assert whole[0][1] == "simulation_started" and whole[-1][1] == "simulation_ended"
    assert all(data["event_type"] == kind and data["event_id"] == i for i, kind, data in whole)
    rest = stream({"Last-Event-ID": ids[40]})
    assert [i for i, _, _ in rest] == ids[41:]
    assert stream({"Last-Event-ID": ids[-1]}) == []  # the last one: nothing more to send
    # An id the log does not hold is refused in one line, never replayed from the start.
    other = read_events(f"{cohort['root']}/{cohort['one']}/veyru.jsonl").events[3].event_id
    for refused in (
        client.get(url, headers={"Last-Event-ID": other}),
        client.get(url, params={"last_event_id": "no-such-event"}),
    ):
        assert refused.status_code == 409
    assert client.get(url, headers={"Last-Event-ID": other}).json()["detail"]["message"] == (
        f"Last-Event-ID {other!r} names no event of run {cohort['two']}'s log; reconnect "
        "without it to read the log from its first event"
    )
    assert client.get(f"/api/g/lab/runs/{cohort['two']}/events").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/runs/../etc/1",
        "/runs/%2e%2e/1",
        "/runs/veyru%2F..%2F..%2Fetc/1",
        "/runs/veyru/..%2F1",
        "/runs/veyru/%2Fetc%2Fpasswd",
        "/runs/veyru/1",
        "/api/g/local/runs/%2e%2e/1/events",
        "/api/g/local/runs/veyru/%2Fetc/events",
        "/api/g/local/runs/..%2Fveyru/1/events",
        "/scenarios/..%2Fveyru",
    ],
)
def test_a_run_id_that_is_not_a_run_under_the_runs_dir_is_404(
    cohort: dict[str, str], path: str
) -> None:
    assert TestClient(create_app(cohort["root"])).get(path).status_code == 404


def test_stop_of_a_finished_run_is_refused_with_the_clis_line(cohort: dict[str, str]) -> None:
    got = TestClient(create_app(cohort["root"])).post(f"/api/g/local/runs/{cohort['one']}/stop")
    assert got.status_code == 409
    assert got.json()["detail"]["message"] == (
        f"run {cohort['one']} has no live writer: nothing to stop"
    )


def test_the_list_reads_a_run_again_only_when_its_log_changed(tmp_path: Path) -> None:
    first = play_run(str(tmp_path), rounds=1)
    play_run(str(tmp_path), rounds=1)
    app = create_app(str(tmp_path))
    client = TestClient(app)
    client.get("/")
    assert app.state.run_cache.reads == 2
    client.get("/")
    assert app.state.run_cache.reads == 2  # both logs unchanged: nothing read again
    with open(Path(first.url) / "veyru.jsonl", "a") as log:
        log.write("\n")  # the log grew: its size and mtime changed
    client.get("/")
    assert app.state.run_cache.reads == 3


def test_scenario_pages_show_seats_channels_presets_and_the_knob_table() -> None:
    client = TestClient(create_app("."))
    listed = client.get("/scenarios").text
    for name in ("veyru", "orbital_anomaly", "drive_module_repair", "prisoners_dilemma"):
        assert f'<a href="/scenarios/{name}">{name}</a>' in listed
    page = client.get("/scenarios/prisoners_dilemma").text
    assert "<td>player_a</td><td>player</td>" in page
    assert "<td>table</td><td>main</td><td>no</td>" in page
    assert "<summary>knobs_default</summary>" in page
    assert "<td><code>round_count</code></td><td>integer</td><td><code>5</code></td>" in page
    assert client.get("/scenarios/nope").status_code == 404


def test_the_token_rule_over_plain_http(cohort: dict[str, str]) -> None:
    log: list[bytes] = []
    with serving(cohort["root"], env={"GLOSSOGEN_SERVE_TOKEN": "t0ken-x"}, log=log) as base:
        assert httpx.get(f"{base}/api/health").status_code == 200
        for path in ("/", f"/runs/{cohort['one']}", f"/api/g/local/runs/{cohort['one']}/events"):
            assert httpx.get(base + path).status_code == 401
            assert (
                httpx.get(base + path, headers={"Authorization": "Bearer nope"}).status_code == 401
            )
            assert httpx.get(base + path, cookies={"glossogen_token": "nope"}).status_code == 401
        assert httpx.get(f"{base}/", headers={"Authorization": "Bearer t0ken-x"}).status_code == 200
        with httpx.Client(base_url=base) as browser:
            landed = browser.get("/?token=t0ken-x&scenario=veyru", follow_redirects=False)
            assert landed.status_code == 303
            assert landed.headers["location"] == "/?scenario=veyru"  # the token leaves the URL
            assert "HttpOnly" in landed.headers["set-cookie"]
            assert browser.get("/?scenario=veyru").status_code == 200  # the cookie carries it
            events = browser.get(f"/api/g/local/runs/{cohort['one']}/events")
            assert events.status_code == 200 and "event: simulation_ended" in events.text
            assert browser.get("/?token=wrong").status_code == 200  # the cookie still holds
        assert httpx.get(f"{base}/?token=wrong", follow_redirects=False).status_code == 401
    # The secret never reaches the server's log: the access lines show it redacted.
    written = b"".join(log)
    assert b"t0ken-x" not in written
    assert b'"GET /?token=[redacted]&scenario=veyru HTTP/1.1" 303' in written


def test_the_list_and_the_stream_read_a_runs_dir_on_s3(prefect_api: str, s3_bucket: str) -> None:
    runs = f"{s3_bucket}/experiments"
    run = play_run(runs, rounds=1)
    client = TestClient(create_app(runs))
    assert _rows(client.get("/").text) == [run.run_id]
    ids = [e.event_id for e in read_events(f"{run.url}/veyru.jsonl").events]
    with client.stream("GET", f"/api/g/local/runs/{run.run_id}/events") as got:
        body = got.read().decode()
    assert [line[4:] for line in body.splitlines() if line.startswith("id: ")] == ids
    with client.stream(
        "GET", f"/api/g/local/runs/{run.run_id}/events", headers={"Last-Event-ID": ids[-3]}
    ) as got:
        rest = got.read().decode()
    assert [line[4:] for line in rest.splitlines() if line.startswith("id: ")] == ids[-2:]
    assert client.get(f"/runs/{run.run_id}").status_code == 200


def test_a_fork_shows_its_badge_its_fork_point_and_links_both_ways(
    prefect_api: str, tmp_path: Path
) -> None:
    import asyncio

    from flows.derived import fork_at_round
    from glossogen.derive import ForkRequest

    source = play_run(str(tmp_path), rounds=3)
    forked = asyncio.run(fork_at_round(ForkRequest("veyru", source.url, 1, str(tmp_path))))
    fork_id = forked.run_id
    client = TestClient(create_app(str(tmp_path)))
    listed = client.get("/").text
    assert '<span class="badge lineage">fork after round 1</span>' in listed
    assert listed.count('<span class="badge lineage">') == 1  # its own play is not a resume
    # each row's start has its date and zone (it showed 12:00:04 alone)
    assert len(re.findall(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</td>", listed)) == 2
    fork_page = client.get(f"/runs/{fork_id}").text
    assert "<dt>resumed</dt>" not in fork_page  # a fork's own start is no resume
    assert f'<a href="/runs/{source.run_id}">{source.run_id}</a>' in fork_page
    assert f"fork point: after round 1 of {source.run_id}" in fork_page
    source_page = client.get(f"/runs/{source.run_id}").text
    assert f'<dt>derived runs</dt><dd><a href="/runs/{fork_id}">{fork_id}</a>' in source_page


def test_a_fork_whose_prefix_was_replayed_says_so_on_its_badge(
    prefect_api: str, tmp_path: Path
) -> None:
    import asyncio

    from flows.derived import fork_at_round
    from glossogen.derive import ForkRequest

    source = play_run(str(tmp_path), rounds=2)
    request = ForkRequest("veyru", source.url, 1, str(tmp_path), replay=True)
    asyncio.run(fork_at_round(request))
    listed = TestClient(create_app(str(tmp_path))).get("/").text
    assert re.findall(r'<span class="badge lineage">([^<]*)</span>', listed) == [
        "fork after round 1, replayed"
    ]


def test_the_run_page_shows_the_evaluation_report_with_its_per_round_charts(
    prefect_api: str, tmp_path: Path
) -> None:
    import re

    run = play_run(str(tmp_path), rounds=3)
    with pytest.raises(SystemExit) as done:  # the CLI's entry in-process: the report is the point
        main(["evaluate", "veyru", "--run-dir", run.url,
              "--metrics", "round_success,mean_chars_per_round"])  # fmt: skip
    assert done.value.code == 0
    report = json.loads((Path(run.url) / "veyru_report.json").read_text())["metrics"]
    page = TestClient(create_app(str(tmp_path))).get(f"/runs/{run.run_id}").text
    section = page[page.index("<h2>Evaluation</h2>") :]
    for name in ("round_success", "mean_chars_per_round"):
        entry = report[name]
        row = re.search(rf"<tr><td>{name}</td>(.*?)</tr>", section, re.S)
        assert row is not None
        assert f"<td>{entry['score']:.4g}</td><td>{entry['unit']}</td>" in row.group(1)
        assert len(entry["per_round"]) == 3
    # The per-round charts are the evaluation report's own (axes, labels), drawn by its code.
    from glossogen.evaluation import read_report, report_charts

    charts = report_charts(read_report(run.url, "veyru"))
    assert [title for title, _ in charts] == [
        "Characters per round (primary channels)",
        "Success per round",
    ]
    for title, png in charts:
        assert f'<figure><img alt="{title}" src="data:image/png;base64,{png}"></figure>' in section
    listed = TestClient(create_app(str(tmp_path))).get("/").text
    assert '<span class="badge evaluated">evaluated</span>' in listed


def test_claimed_runs_not_begun_are_listed_queued_and_rows_per_page_is_a_choice(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    played = play_run(str(runs), rounds=1)
    # 26 folders claimed as a launcher claims them before a worker plays them: no log yet.
    claimed = [
        claim_unbegun(str(runs), ("round_count=4", "labels.arm=q"), now_unix=1_900_000_000 + i)
        for i in range(26)
    ]
    # Its player has begun: its writer holds the folder, its log created, still empty.
    writer = claimed[0].lock()
    (Path(claimed[0].url) / "veyru.jsonl").write_text("")
    queued = [f.run_id for f in reversed(claimed)]  # newest first
    with serving_here(str(runs)) as base, contextlib.ExitStack() as held:
        held.callback(writer.release)
        every = httpx.get(base + "/", timeout=None)
        assert every.status_code == 200
        assert _rows(every.text) == [*queued, played.run_id]
        assert _showing(every.text) == "showing 27 of 27"
        row = every.text.split(f'data-run-id="{queued[0]}"', 1)[1].split("</tr>", 1)[0]
        assert '<span class="badge status-queued">queued</span>' in row
        assert "round ? / 4" in row and '<span class="badge label">arm=q</span>' in row
        assert f'href="/runs/{queued[0]}"' not in row  # no page before its log begins
        assert '<option value="queued" >queued</option>' in every.text
        only = httpx.get(base + "/", params={"status": "queued"}, timeout=None)
        assert _rows(only.text) == queued
        assert _showing(only.text) == "showing 26 of 26 (of 27 runs in the runs directory)"
        assert _rows(httpx.get(base + "/", params={"status": "completed"}, timeout=None).text) == [
            played.run_id
        ]
        # Rows per page: 25 of the 27 on page 1, the last 2 on page 2; the choice is kept.
        first = httpx.get(base + "/", params={"per_page": "25"}, timeout=None)
        assert first.status_code == 200
        assert _rows(first.text) == queued[:25]
        assert _showing(first.text) == "showing 25 of 27"
        assert '<option value="25" selected>25</option>' in first.text
        assert '<a href="?per_page=25&page=2">2</a>' in first.text
        second = httpx.get(base + "/", params={"per_page": "25", "page": "2"}, timeout=None)
        assert _rows(second.text) == [queued[25], played.run_id]
        assert '<option value="50" selected>50</option>' in every.text
        for bad in ("30", "0", "1000", "many", "-25"):
            refused = httpx.get(base + "/", params={"per_page": bad}, timeout=None)
            assert refused.status_code == 422
            assert _rows(refused.text) == []
            line = f"glossogen: error: per_page &#39;{bad}&#39; is not one of 25, 50, 100, 200"
            assert f'<p class="error" id="filter-error">{line}</p>' in refused.text


def test_stop_of_a_queued_run_cancels_its_claim(tmp_path: Path) -> None:
    folder = claim_unbegun(str(tmp_path))
    client = TestClient(create_app(str(tmp_path)))
    url = f"/api/g/local/runs/{folder.run_id}/stop"
    assert _rows(client.get("/", params={"status": "queued"}).text) == [folder.run_id]
    stopped = client.post(url)
    assert stopped.status_code == 200
    assert stopped.json() == {
        "run_id": folder.run_id,
        "pid": None,
        "flow_run_id": None,
        "message": claim_cancelled(folder.run_id),
    }
    assert not Path(folder.url).exists()
    assert _rows(client.get("/").text) == []
    assert client.post(url).status_code == 404  # nothing left to stop


def test_the_list_reads_a_run_being_resumed_as_running_before_its_first_event(
    tmp_path: Path,
) -> None:
    """A run that ended ``interrupted``, with a resume launched and not begun (its process
    recorded in ``.launch.json``, the log untouched): the list says ``running`` as its page
    does, from a cached row too, and ``interrupted · resumable`` once that process is gone."""
    import asyncio

    from glossogen.storage import RunStore
    from tests.fixtures.played_runs import after_round_1

    run_id = asyncio.run(after_round_1(str(tmp_path), "interrupted"))
    client = TestClient(create_app(str(tmp_path)))

    def listed() -> list[tuple[str, str]]:
        html = client.get("/").text
        return re.findall(r'<span class="badge status-(\w+)">\w+</span>( <span class="hint">'
                          r"resumable</span>)?", html)  # fmt: skip

    assert listed() == [("interrupted", ' <span class="hint">resumable</span>')]  # cached now
    launched = subprocess.Popen(["sleep", "60"])  # the launched resume, not begun
    try:
        RunStore(str(tmp_path)).open_run(run_id).mark_launch(launched.pid)
        assert listed() == [("running", "")]
        page = client.get(f"/runs/{run_id}").text
        assert '<span class="badge status-running" id="status">running</span>' in page
        fresh = TestClient(create_app(str(tmp_path))).get("/").text  # not from the cache
        assert '<span class="badge status-running">running</span>' in fresh
    finally:
        launched.kill()
        launched.wait()
    assert listed() == [("interrupted", ' <span class="hint">resumable</span>')]


def test_a_resume_killed_before_its_first_round_lists_stopped_not_its_old_ending(
    tmp_path: Path,
) -> None:
    """The log ends ``simulation_ended interrupted``, ``run_resumed``, the resumed process's
    setup, and no ending (the resume was killed): that ending was the previous process's, so
    the list, the export's selection and the page all say ``stopped``, resumable."""
    import asyncio

    from glossogen.export import FilterSelection, select_runs
    from glossogen.launch import ResumeRequest, open_session, plan_resume
    from tests.fixtures.played_runs import after_round_1

    run_id = asyncio.run(after_round_1(str(tmp_path), "interrupted"))
    plan, point = plan_resume(ResumeRequest(run_dir=str(tmp_path / run_id)))
    session = open_session(plan, point.folder, resume=point)
    session.writer.close()  # killed: no round played, no ending written
    assert session.lock is not None
    session.lock.release()
    client = TestClient(create_app(str(tmp_path)))
    assert re.findall(r'<span class="badge status-(\w+)">', client.get("/").text) == ["stopped"]
    selected = select_runs(str(tmp_path), FilterSelection(status="stopped"))
    assert [r.run_id for r in selected.records] == [run_id]
    page = client.get(f"/runs/{run_id}").text
    assert '<span class="badge status-stopped" id="status">stopped</span>' in page
