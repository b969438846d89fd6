"""A fork whose ``--knobs`` holds a knob of the wrong type is refused in one line (65), with no
folder made: the knobs model validates the file before any rule reads a knob's value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.fixtures.played_runs import play_run


def test_a_string_round_count_in_a_forks_knobs_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = play_run(str(tmp_path / "runs"), rounds=3)
    knobs = tmp_path / "knobs.json"
    knobs.write_text(json.dumps({"round_count": "x"}))
    out = tmp_path / "forks"
    argv = ["fork-at-round", "veyru", "--source-run-dir", source.url, "--after-round", "1",
            "--runs-dir", str(out), "--knobs", str(knobs)]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 65
    assert capsys.readouterr().err == (
        "glossogen: error: invalid knob 'round_count' = \"x\": Input should be a valid integer\n"
    )
    assert not out.exists()
