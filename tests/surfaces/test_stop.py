"""Stopping a run through the CLI, REST and MCP: the same result and the same refusal, each
surface wording it its own way (``glossogen stop``, ``POST .../stop``, ``stop_run``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from glossogen.server import create_app
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import claim_cancelled, claim_unbegun, play_run
from tests.surfaces.drive import (
    STATUS,
    SURFACES,
    Answer,
    _cli,
    _mcp,
)


def _rest_stop(runs_dir: str, folder: RunFolder) -> Answer:
    got = TestClient(create_app(runs_dir)).post(f"/api/g/local/runs/{folder.run_id}/stop")
    body = got.json()
    if got.status_code != 200:
        return Answer(True, body["detail"]["message"], got.status_code)
    return Answer(False, body["message"], got.status_code)


def stop_through(
    surface: str, runs_dir: str, folder: RunFolder, capsys: pytest.CaptureFixture[str]
) -> Answer:
    """``glossogen stop``, ``POST .../stop`` or MCP ``stop_run`` of the run in ``folder``."""
    if surface == "cli":
        return _cli(capsys, "stop", folder.url)
    if surface == "rest":
        return _rest_stop(runs_dir, folder)
    return _mcp(runs_dir, "stop_run", run_id=folder.run_id)[0]


OTHER_FILES = (
    "run {run_id} has not begun its log and no process holds it, but its folder holds other "
    "files: left as it is"
)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("extra", [False, True], ids=["queued", "holding-other-files"])
def test_stopping_a_claim_answers_the_same_through_every_surface(
    surface: str, extra: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A queued claim is cancelled and removed; one holding a file of its own is refused and
    left as it is: the same line each way, in each surface's status."""
    runs = str(tmp_path / "runs")
    folder = claim_unbegun(runs)
    if extra:
        (Path(folder.url) / "notes.txt").write_text("mine")
    answer = stop_through(surface, runs, folder, capsys)
    if not extra:
        assert answer == Answer(False, claim_cancelled(folder.run_id), STATUS[surface][0])
        assert not Path(folder.url).exists()
        return
    assert answer == Answer(True, OTHER_FILES.format(run_id=folder.run_id), STATUS[surface][1])
    assert sorted(p.name for p in Path(folder.url).iterdir()) == [
        "config.json", "labels.json", "notes.txt"
    ]  # fmt: skip


NOT_A_RUN_ID_LINE = "not a run id (<scenario>/<run_dir_name>, relative to the runs directory)"
STOP_REFUSALS = {
    "not-a-timestamp": ("veyru/abc", "run ids that no longer resolve: veyru/abc"),
    "no-such-run": ("veyru/1", "run ids that no longer resolve: veyru/1"),
    "blank-before": (" veyru/1", "{name} ' veyru/1': " + NOT_A_RUN_ID_LINE),
    "backslash": ("veyru\\1790000000/1", "{name} 'veyru\\1790000000/1': " + NOT_A_RUN_ID_LINE),
    "backslash-one-part": ("veyru\\1", "{name} 'veyru\\1': " + NOT_A_RUN_ID_LINE),
}
"""A run id ``stop`` is given (the CLI's run folder relative to the runs directory) and the
library's line for it (``launch.stop_folder``): the export's words for a malformed id and for
an id that names no run, the input named each surface's way."""
STOP_NAMES = {"cli": "RUN_DIR", "rest": "run_id", "mcp": "run_id"}
STOP_STATUS = {"cli": {64: 64, 66: 66}, "rest": {64: 404, 66: 404},
               "mcp": {64: "tool error", 66: "tool error"}}  # fmt: skip


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("case", list(STOP_REFUSALS))
def test_a_bad_run_id_to_stop_is_refused_with_one_line_through_every_surface(
    surface: str, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``glossogen stop``, ``POST .../stop`` and ``stop_run`` call one check (was three
    wordings: ``'veyru/abc' is not a run folder (<runs-dir>/<scenario>/<unix_ts>)``, ``no run
    veyru/abc``, ``'veyru/abc' is not a run id (<scenario>/<unix_ts>)``; ``veyru/1 holds no run
    log``, ``no run veyru/1: it has no event log``, ``run 'veyru/1' has no event log in the
    server's runs directory``), nothing stopped or removed."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)
    monkeypatch.chdir(runs)  # the CLI's run folder, relative to the runs directory
    sent, line = STOP_REFUSALS[case]
    if surface == "cli":
        answer = _cli(capsys, "stop", sent)
    elif surface == "rest":
        got = TestClient(create_app(str(runs))).post(f"/api/g/local/runs/{sent}/stop")
        answer = Answer(True, got.json()["detail"]["message"], got.status_code)
    else:
        answer = _mcp(str(runs), "stop_run", run_id=sent)[0]
    code = 64 if "not a run id" in line else 66
    said = line.format(name=STOP_NAMES[surface])
    assert answer == Answer(True, said, STOP_STATUS[surface][code])
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == [folder.run_id.split("/")[1]]
