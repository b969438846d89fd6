"""``glossogen run --resume`` refuses a folder it cannot continue in one line, before anything is
written: a broken ``config.json``, a flag that differs from the record, a folder that is not a
run folder. A refusal or a dry run leaves the folder's files (its writer lock included) as they
were."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main
from tests.fixtures.played_runs import play_run


def _run(*args: str) -> int:
    try:
        main(["run", "veyru", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture
def stopped(tmp_path: Path) -> Path:
    """A 3-round scripted run whose process died before it logged ``simulation_ended``."""
    run = Path(play_run(str(tmp_path / "runs"), rounds=3, group_slug="lab-a").url)
    log = run / "veyru.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))
    (run / ".writer.lock").write_text("4242")  # the pid the dead writer left
    return run


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("xx", "is not valid JSON (Expecting value: line 1 column 1 (char 0))"),
        ("[]", "is not a JSON object (it holds a list)"),
        ("null", "is not a JSON object (it holds a NoneType)"),
    ],
)
def test_a_broken_config_json_is_refused_in_one_line(
    stopped: Path, capsys: pytest.CaptureFixture[str], content: str, reason: str
) -> None:
    (stopped / "config.json").write_text(content)
    before = _snapshot(stopped)
    assert _run("--resume", str(stopped)) == 66
    assert capsys.readouterr().err == f"glossogen: error: {stopped}/config.json {reason}\n"
    assert _snapshot(stopped) == before


def test_a_config_json_that_is_a_folder_is_refused(
    stopped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (stopped / "config.json").unlink()
    (stopped / "config.json").mkdir()
    assert _run("--resume", str(stopped)) == 66
    assert capsys.readouterr().err == (
        f"glossogen: error: {stopped}/config.json is a folder, not a file\n"
    )


def test_a_different_group_slug_is_a_config_change(
    stopped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(stopped)
    assert _run("--resume", str(stopped), "--group-slug", "lab-b") == 65
    assert capsys.readouterr().err == (
        "glossogen: error: the config differs from the one the run recorded "
        '(group_slug "lab-a" -> "lab-b"); pass --allow-config-change to resume under the new one\n'
    )
    assert _run("--resume", str(stopped), "--group-slug", "lab-a", "--dry-run") == 0
    assert _snapshot(stopped) == before  # neither the refusal nor the dry run wrote a byte


def test_a_dry_run_of_a_resume_prints_the_recorded_limits(
    stopped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("--resume", str(stopped), "--dry-run") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"dry run: veyru, recorded in {stopped}/config.json, 3 rounds, max_agent_turns 200, "
        "run timeout none, spend cap none"
    )


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("file", "'{path}' is a file, not a run folder"),
        ("named", "'{path}' holds veyru.jsonl but is not a run folder: its name must be the "
                  "run's unix timestamp (<runs-dir>/<scenario>/<unix_ts>)"),
        ("empty-log", "{path}/veyru.jsonl is not a run log (empty)"),  # every reader's words
        ("log-folder", "{path}/veyru.jsonl is a folder, not an event log"),
    ],
)  # fmt: skip
def test_a_folder_that_is_not_a_run_is_named_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str, message: str
) -> None:
    path = tmp_path / "veyru" / ("copy" if layout == "named" else "1700000000")
    if layout == "file":
        path.parent.mkdir(parents=True)
        path.write_text("not a folder")
    else:
        path.mkdir(parents=True)
        if layout == "log-folder":
            (path / "veyru.jsonl").mkdir()
        else:
            (path / "veyru.jsonl").write_text("" if layout == "empty-log" else "{}\n")
    assert _run("--resume", str(path)) == 66
    assert capsys.readouterr().err == f"glossogen: error: {message.format(path=path)}\n"
