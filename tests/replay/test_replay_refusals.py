"""A ``--runs-dir`` where no folder can go is refused before anything is written.

As every command words a bad ``--runs-dir``: a value that is not UTF-8 text is a usage error
(64) naming the byte as typed, ``'\\xff'`` (was: accepted, and the replay's folder printed with
U+FFFD); a file where the folder would go is ``glossogen run``'s line and code, 66 (a runs dir in
which no run folder can be made). Nothing is written either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.derive import DeriveError
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.played_runs import play_run
from tests.replay.record_tapes import TAPES

TAPE = str(next((TAPES / "veyru").iterdir()))
"""The committed scripted veyru tape: a run that would replay identically."""


def _cli(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


SOURCE = "SOURCE"
"""Stands for a played scripted veyru run's folder in a command line below."""


@pytest.mark.parametrize(
    "command",
    [
        ["replay", TAPE],
        ["run", "veyru", "--model", "scripted", "--provider", "scripted", "--config",
         "knobs_default"],
        ["fork-at-round", "veyru", "--source-run-dir", SOURCE, "--after-round", "1",
         "--rounds-after", "1"],
        ["replace-agent", "veyru", "--source-run-dir", SOURCE, "--after-round", "1",
         "--replaced-agent-id", "field_observer", "--model", "other-script", "--provider",
         "scripted"],
    ],
)  # fmt: skip
def test_a_runs_dir_not_utf8_on_a_real_command_line_is_a_usage_error(
    command: list[str], tmp_path: Path
) -> None:
    """The bytes as a shell passes them (``--runs-dir $'...\\xff'``): one line, 64, no folder
    (was: ``run`` 70, ``run failed: UnicodeEncodeError``; the forks 0, ``new_run_id=`` printed
    and a half-made run left behind that its detached process failed to play)."""
    source = play_run(str(tmp_path / "src"), "veyru", rounds=2, now_unix=1796000000)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    args = [os.fsencode(source.url if a == SOURCE else a) for a in command]
    done = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"glossogen", *args,
         b"--runs-dir", os.fsencode(tmp_path) + b"/r\xff"],
        capture_output=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (
        64, b"", b"glossogen: error: --runs-dir '" + os.fsencode(tmp_path) + b"/r\\xff': not "
        b"UTF-8 text\n"
    )  # fmt: skip
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_a_runs_dir_that_is_a_file_is_refused_as_run_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs_dir = tmp_path / "runs"
    runs_dir.write_text("a file")
    assert _cli(["replay", TAPE, "--runs-dir", str(runs_dir)]) == 66
    said = f"runs dir '{runs_dir}': {runs_dir} is a file, not a folder"
    assert capsys.readouterr() == ("", f"glossogen: error: {said}\n")
    assert runs_dir.read_text() == "a file"
    assert _cli(["run", "veyru", "--model", "scripted", "--provider", "scripted", "--config",
                 "knobs_default", "--runs-dir", str(runs_dir)]) == 66  # fmt: skip
    assert capsys.readouterr() == ("", f"glossogen: error: {said}\n")


def test_the_library_refuses_a_runs_dir_not_utf8_with_the_check_the_cli_asks(
    tmp_path: Path,
) -> None:
    """``replay_run`` itself (a script, no CLI in front of it) refuses such a runs dir: the same
    check the CLI's entry asks of every command, worded with the request's field."""
    runs_dir = f"{tmp_path}/r\udcff"
    with pytest.raises(DeriveError) as refused:
        replay_run(ReplayRequest(run_dir=TAPE, runs_dir=runs_dir))
    assert (str(refused.value), refused.value.exit_code) == (
        f"runs_dir {runs_dir!r}: not UTF-8 text",
        64,
    )
    assert list(tmp_path.iterdir()) == []
