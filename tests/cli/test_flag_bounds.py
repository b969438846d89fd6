"""A numeric flag out of bounds: one line that names the flag and repeats the value, exit 64,
nothing written. (``evaluate``'s replica flags: tests/evaluation/test_command.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main

RUN = ["run", "veyru", "--model", "scripted", "--provider", "scripted", "--config",
       "knobs_default", "--runs-dir", "OUT"]  # fmt: skip
SWEEP = ["sweep", "SPEC"]
EXPORT = ["export", "--runs-dir", "OUT", "--out", "OUT/export"]
FORK = ["fork-at-round", "veyru", "--source-run-dir", "OUT/veyru/1", "--after-round", "1",
        "--runs-dir", "OUT"]  # fmt: skip
FORK_FROM = ["fork-at-round", "veyru", "--source-run-dir", "OUT/veyru/1", "--runs-dir", "OUT"]
# (The source folder does not exist: a bound is refused before the source is read.)

CASES = [
    (RUN + ["--max-agent-turns", "0"], "--max-agent-turns must be at least 1, got 0"),
    (RUN + ["--max-agent-turns", "-3"], "--max-agent-turns must be at least 1, got -3"),
    (SWEEP + ["--max-turns", "-1"], "--max-turns must be at least 0 (0: the spec's or 200), got -1"),
    (SWEEP + ["--concurrency", "0"], "--concurrency 0: use 1 or more"),
    (SWEEP + ["--concurrency", "-2"], "--concurrency -2: use 1 or more"),
    (SWEEP + ["--run-timeout", "-1.5"],
     "--run-timeout must be a finite number of seconds, 0 or more (0: none), got -1.5"),
    (SWEEP + ["--run-timeout", "inf"],
     "--run-timeout must be a finite number of seconds, 0 or more (0: none), got inf"),
    (SWEEP + ["--run-timeout", "nan"],
     "--run-timeout must be a finite number of seconds, 0 or more (0: none), got nan"),
    (EXPORT + ["--max-runs", "0"], "--max-runs must be at least 1, got 0"),
    (FORK + ["--rounds-after", "0"], "--rounds-after must be at least 1, got 0"),
    (FORK_FROM + ["--after-round", "0"], "--after-round must be at least 1, got 0"),
    (FORK_FROM + ["--after-round", "-2", "--rounds-after", "1"],
     "--after-round must be at least 1, got -2"),
    (SWEEP + ["--run-timeout", "abc"], "Invalid value for '--run-timeout': Input should be a "
     "valid number, unable to parse string as a number: got 'abc'"),
    (SWEEP + ["--concurrency=1.5"], "Invalid value for '--concurrency': Input should be a "
     "valid integer, unable to parse string as an integer: got '1.5'"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[c[1][:40] for c in CASES])
def test_a_refused_number_is_repeated_in_one_line_and_nothing_is_written(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "scenario: veyru\nconfig: knobs_default\nmodel: scripted\nprovider: scripted\n"
        "runs_dir: ./out\ntrials: 1\n"
    )
    argv = [a.replace("OUT", str(out)).replace("SPEC", str(spec)) for a in argv]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 64
    assert capsys.readouterr().err == f"glossogen: error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]
