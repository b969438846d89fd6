"""A damaged run and odd run ids over real HTTP: the run page, summary, events and Stop name
what is wrong in the runs directory's own terms, never the server's path (issue 32)."""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from glossogen.eventlog import read_events
from glossogen.server import create_app
from tests.fixtures.played_runs import play_run

LAUNCH = 1_796_446_580
"""The damaged run's launch second (its id is ``veyru/1796446580``)."""

DAMAGE = {
    "labels.json": (b'{"a":"\xff"}', "is not UTF-8 text (byte 0xff at offset 6)"),
    "config.json": (
        b'{"round_count": 1, "x": "\xfe"}',
        "is not UTF-8 text (byte 0xfe at offset 25)",
    ),
}
"""A file of the run folder, the bytes it is damaged with, and how every surface words it."""


@pytest.fixture
def damaged(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str, str]:
    """A played one-round veyru run whose file ``request.param`` is not UTF-8: the runs dir,
    the run id, and the line naming the damage relative to the runs dir."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), rounds=1, now_unix=LAUNCH)
    name = request.param
    data, reason = DAMAGE[name]
    (Path(folder.url) / name).write_bytes(data)
    return str(runs), folder.run_id, f"{folder.run_id}/{name} {reason}"


@pytest.mark.parametrize("damaged", list(DAMAGE), indirect=True)
def test_the_run_page_of_a_damaged_run_names_the_damage_as_the_list_does(
    damaged: tuple[str, str, str],
) -> None:
    """Was a 500 (``UnicodeDecodeError`` out of ``build_run_page``)."""
    runs, run_id, line = damaged
    client = TestClient(create_app(runs), raise_server_exceptions=False)
    listed = client.get("/")
    assert f"skipped {run_id}: {line}" in html.unescape(listed.text)
    got = client.get(f"/runs/{run_id}")
    assert got.status_code == 200
    found = re.findall(r'<p class="note damage">([^<]*)</p>', got.text)
    assert [html.unescape(f) for f in found] == [line]


@pytest.mark.parametrize("damaged", list(DAMAGE), indirect=True)
def test_summary_events_and_stop_of_a_damaged_run_read_its_log_and_never_its_path(
    damaged: tuple[str, str, str],
) -> None:
    """Was 404 ``no run veyru/1796446580: <server path>/labels.json is not UTF-8 text ...`` for
    each: none of them reads the labels or the knobs; Stop says what the CLI and MCP say."""
    runs, run_id, _ = damaged
    client = TestClient(create_app(runs))
    base = f"/api/g/local/runs/{run_id}"
    summary = client.get(f"{base}/summary")
    assert (summary.status_code, summary.json()["status"]) == (200, "completed")
    log = Path(runs) / run_id / "veyru.jsonl"
    events = client.get(f"{base}/events")
    assert events.status_code == 200
    ids = re.findall(r"^id: (.+)$", events.text, flags=re.M)
    assert ids == [e.event_id for e in read_events(str(log)).events]
    stop = client.post(f"{base}/stop")
    assert (stop.status_code, stop.json()["detail"]["message"]) == (
        409,
        f"run {run_id} has no live writer: nothing to stop",
    )


def test_a_rest_stop_says_how_to_resume_by_the_run_id_not_the_servers_path(
    tmp_path: Path,
) -> None:
    """Was ``...; resume it with glossogen run veyru --resume <server path>/veyru/<ts>``."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), rounds=1, now_unix=LAUNCH)
    writer = subprocess.Popen(["sleep", "600"])  # the launched process the run reads live by
    try:
        folder.mark_launch(writer.pid)
        got = TestClient(create_app(str(runs))).post(f"/api/g/local/runs/{folder.run_id}/stop")
        assert got.status_code == 200
        assert got.json()["message"] == (
            f"stopping {folder.run_id} (pid {writer.pid}): it ends 'interrupted'; resume it "
            f"with glossogen run veyru --resume <runs-dir>/{folder.run_id}"
        )
        assert writer.wait() == -2  # SIGINT
    finally:
        writer.kill()
        writer.wait()


ENCODED = ["/runs/{sent}", "/api/g/local/runs/{sent}/stop", "/api/g/local/runs/{sent}/events",
           "/api/g/local/runs/{sent}/summary"]  # fmt: skip


@pytest.mark.parametrize("route", ENCODED)
def test_an_encoded_separator_in_a_run_id_is_a_404_naming_it_as_sent(
    route: str, tmp_path: Path
) -> None:
    """Was served as the run ``veyru/<ts>`` (the page 200, Stop 409): README's 404."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), rounds=1, now_unix=LAUNCH)
    sent = folder.run_id.replace("/", "%2F")
    client = TestClient(create_app(str(runs)))
    path = route.format(sent=sent)
    got = client.post(path) if path.endswith("/stop") else client.get(path)
    assert got.status_code == 404
    line = (
        f"run_id '{sent}': not a run id (<scenario>/<run_dir_name>, relative to the runs directory)"
    )
    if path.startswith("/runs/"):
        assert line in html.unescape(got.text)
    else:
        assert got.json()["detail"] == {"field": "run_id", "message": line}
