"""A numeric flag out of bounds: one line that names the flag and repeats the value, exit 64,
nothing written. A float flag that is no finite number as typed (``inf``, ``nan``, ``1e400``
that reads as infinity, ``1e-400`` that reads as 0) is refused quoting the text typed, in every
command that takes one. (``evaluate``'s replica flags: tests/evaluation/test_command.py.)"""

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
REPLACE = ["replace-agent", "veyru", "--source-run-dir", "OUT/veyru/1", "--after-round", "1",
           "--replaced-agent-id", "field_observer", "--model", "scripted", "--provider",
           "scripted", "--runs-dir", "OUT"]  # fmt: skip
EVALUATE = ["evaluate", "--runs-dir", "OUT"]

INFINITE = "not a finite number"
TOO_LARGE = "not a finite number (too large: it reads as infinity)"
TOO_SMALL = "too close to 0 to be read (it reads as 0)"
NOT_FINITE = [  # (command, flag, typed, why): refused quoting the text typed
    (SWEEP, "--run-timeout", "inf", INFINITE), (SWEEP, "--run-timeout", "nan", "not a number"),
    (SWEEP, "--run-timeout", "abc", "not a number"), (SWEEP, "--run-timeout", "1e400", TOO_LARGE),
    (SWEEP, "--run-timeout", "1e-400", TOO_SMALL), (RUN, "--spend-cap-usd", "1e400", TOO_LARGE),
    (RUN, "--spend-cap-usd", "NaN", "not a number"), (RUN, "--spend-cap-usd", "-1e-400", TOO_SMALL),
    (RUN, "--run-timeout", "-Infinity", INFINITE), (FORK, "--spend-cap-usd", "1E999", TOO_LARGE),
    (FORK, "--run-timeout", "nan", "not a number"), (REPLACE, "--spend-cap-usd", "inf", INFINITE),
    (EVALUATE, "--spend-cap-usd", "1e400", TOO_LARGE),
]  # fmt: skip

CASES = [
    (RUN + ["--max-agent-turns", "0"], "--max-agent-turns must be at least 1, got 0"),
    (RUN + ["--max-agent-turns", "-3"], "--max-agent-turns must be at least 1, got -3"),
    (SWEEP + ["--max-turns", "-1"], "--max-turns must be at least 0 (0: the spec's or 200), got -1"),
    (SWEEP + ["--concurrency", "0"], "--concurrency 0: use 1 or more"),
    (SWEEP + ["--concurrency", "-2"], "--concurrency -2: use 1 or more"),
    (SWEEP + ["--run-timeout", "-1.5"],
     "--run-timeout must be a finite number of seconds, 0 or more (0: none), got -1.5"),
    *[(command + [flag, typed], f"Invalid value for '{flag}': {typed!r} is {why}")
      for command, flag, typed, why in NOT_FINITE],
    (RUN + ["--spend-cap-usd=inf"], f"Invalid value for '--spend-cap-usd': 'inf' is {INFINITE}"),
    (RUN + ["--spend-cap-usd", "-2.50"],
     "--spend-cap-usd must be a number of USD above 0, got -2.5"),
    (EXPORT + ["--max-runs", "0"], "--max-runs 0: must be at least 1"),
    (FORK + ["--rounds-after", "0"], "--rounds-after must be at least 1, got 0"),
    (FORK_FROM + ["--after-round", "0"], "--after-round must be at least 1, got 0"),
    (FORK_FROM + ["--after-round", "-2", "--rounds-after", "1"],
     "--after-round must be at least 1, got -2"),
    # Past a bound no run needs, or past a 64-bit integer the log's readers parse (issue 32):
    (RUN + ["--max-agent-turns", "99999999999999999999999"],
     "--max-agent-turns must be at most 1000000, got 99999999999999999999999"),
    (FORK + ["--max-agent-turns", "1000001"],
     "--max-agent-turns must be at most 1000000, got 1000001"),
    (REPLACE + ["--max-agent-turns", "99999999999999999999999"],
     "--max-agent-turns must be at most 1000000, got 99999999999999999999999"),
    (FORK + ["--rounds-after", "9223372036854775808"],
     "--rounds-after must be at most 9223372036854775807, got 9223372036854775808"),
    (FORK_FROM + ["--after-round", "99999999999999999999999"],
     "--after-round must be at most 9223372036854775807, got 99999999999999999999999"),
    (SWEEP + ["--concurrency=1.5"], "Invalid value for '--concurrency': Input should be a "
     "valid integer, unable to parse string as an integer: got '1.5'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"), CASES, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in CASES]
)
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


def test_a_seed_past_a_64_bit_integer_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The log records the seed, and its readers parse signed 64-bit integers (issue 32)."""
    out = tmp_path / "out"
    argv = [a.replace("OUT", str(out)) for a in RUN] + ["seed=99999999999999999999999"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    refused = (exited.value.code, capsys.readouterr().err, list(tmp_path.iterdir()))
    why = "Input should be less than or equal to 9223372036854775807"
    assert refused == (
        65,
        f"glossogen: error: invalid knob 'seed' = 99999999999999999999999: {why}\n",
        [],
    )
