"""A part the project installs that does not import: skipped on a laptop, a failure in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NEEDS_ABSENT = """
from tests.fixtures.parts import needs_part

@needs_part("glossogen_no_such_module", "the `imaginary` extra")
def test_uses_it():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "exit_code", "line"),
    [
        ("", 0, "1 skipped"),
        ("true", 1, "1 failed"),
    ],
)
def test_a_part_that_does_not_import_fails_only_under_ci(
    tmp_path: Path, ci: str, exit_code: int, line: str
) -> None:
    (tmp_path / "test_absent.py").write_text(NEEDS_ABSENT)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_absent.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == exit_code, done.stdout
    reason = (
        "glossogen_no_such_module (the `imaginary` extra) does not import: "
        "ModuleNotFoundError: No module named 'glossogen_no_such_module'"
    )
    assert reason in done.stdout
    assert ("CI installs every part, but " + reason in done.stdout) is (ci == "true")
    assert done.stdout.strip().splitlines()[-1].startswith(line)
