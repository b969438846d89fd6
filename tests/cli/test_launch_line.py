"""Each launch logs what its knobs resolved from, in the words the reference pages quote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(tmp_path: Path, config: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "run", "prisoners_dilemma", "--model", "scripted",
         "--provider", "scripted", "--runs-dir", str(tmp_path / "runs"), "--config", config,
         "round_count=1"],
        cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("preset", [True, False], ids=["preset", "file"])
def test_the_launch_names_where_its_knobs_came_from_then_prints_them(
    prefect_api: str, tmp_path: Path, preset: bool
) -> None:
    path = tmp_path / "my_knobs.json"
    path.write_text(json.dumps({"round_count": 4, "seed": 7}))
    lines = _run(tmp_path, "knobs_default" if preset else str(path))
    source = "preset 'knobs_default'" if preset else f"file '{path.resolve()}'"
    at = lines.index(f"Scenario knobs from {source}")
    resolved = lines[at + 1]
    assert resolved.startswith(f"resolved_config={source} {{")
    knobs = json.loads(resolved.removeprefix(f"resolved_config={source} "))
    assert (knobs["round_count"], knobs["seed"]) == (1, 42 if preset else 7)
