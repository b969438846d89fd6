"""Each launch logs what its knobs resolved from, in the words the reference pages quote.

Played in this process (``glossogen.cli.main``): what is tested is what the command prints,
not how a process starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main


def _run(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    argv = ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--runs-dir", str(tmp_path / "runs"), "--config", config, "round_count=1"]  # fmt: skip
    try:
        main(argv)
    except SystemExit as exited:
        assert exited.code in (0, None), capsys.readouterr().err
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("preset", [True, False], ids=["preset", "file"])
def test_the_launch_names_where_its_knobs_came_from_then_prints_them(
    prefect_api: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    preset: bool,
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "my_knobs.json"
    path.write_text(json.dumps({"round_count": 4, "seed": 7}))
    lines = _run(tmp_path, "knobs_default" if preset else str(path), capsys)
    source = "preset 'knobs_default'" if preset else f"file '{path.resolve()}'"
    at = lines.index(f"Scenario knobs from {source}")
    resolved = lines[at + 1]
    assert resolved.startswith(f"resolved_config={source} {{")
    knobs = json.loads(resolved.removeprefix(f"resolved_config={source} "))
    assert (knobs["round_count"], knobs["seed"]) == (1, 42 if preset else 7)
