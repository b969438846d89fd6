"""A ``--judge-cache`` that is not UTF-8 text is refused as ``--runs-dir`` is (issue 34).

Was: ``rejudge`` exited 0 having made provider calls and a folder; ``evaluate`` and ``run``
exited 70 on a ``UnicodeEncodeError``. Now every command taking it refuses it first: exit 64,
one line, nothing written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = {
    "rejudge": ["rejudge", "--runs-dir", "runs", "--judge-model", "scripted"],
    "evaluate": ["evaluate", "--runs-dir", "runs"],
    "run": ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--runs-dir", "runs"],
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_judge_cache_not_utf8_is_refused_before_anything_is_written(
    tmp_path: Path, command: str
) -> None:
    cache = os.fsencode(tmp_path) + b"/jc\xff"
    done = subprocess.run(  # noqa: S603 (our own CLI, no shell)
        [os.fsencode(sys.executable), b"-m", b"glossogen"]
        + [os.fsencode(arg) for arg in COMMANDS[command]]
        + [b"--judge-cache", cache],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    shown = f"'{tmp_path}/jc\\xff'"  # the byte named as typed
    assert (done.returncode, done.stdout, done.stderr.decode(errors="backslashreplace")) == (
        64,
        b"",
        f"glossogen: error: --judge-cache {shown}: not UTF-8 text\n",
    )
    assert sorted(tmp_path.iterdir()) == []
