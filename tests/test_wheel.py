"""The built wheel carries what an installed glossogen needs: presets and prompt templates."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests._trust_store import machine_trust

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_every_scenario_preset_and_prompt(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is needed to build the wheel (README's set-up installs it)")
    built = subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        env=machine_trust(os.environ),  # uv may fetch the build backend over TLS
    )
    assert built.returncode == 0, f"uv build exited {built.returncode}:\n{built.stderr}"
    (wheel,) = tmp_path.glob("glossogen-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected_data = {
        str(p.relative_to(ROOT))
        for folder in ("scenarios",)
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and p.suffix in {".json", ".j2", ".md"}
    }
    assert {
        "scenarios/veyru/knobs_default.json",
        "scenarios/veyru/knobs_intern.json",
        "scenarios/prisoners_dilemma/knobs_default.json",
        "scenarios/prisoners_dilemma/prompts/system.j2",
    } <= expected_data
    assert expected_data - names == set()
    assert {"glossogen/cli/__init__.py", "flows/simulate.py", "tasks/rounds.py"} <= names
    # new-scenario writes its package from templates that ship inside glossogen.
    templates = {
        str(p.relative_to(ROOT)) for p in (ROOT / "glossogen/authoring/template").glob("*.tmpl")
    }
    assert len(templates) == 6 and templates <= names
    # The run browser's templates and assets ship inside the package (no CDN at run time).
    browser_assets = {
        str(p.relative_to(ROOT))
        for folder in ("glossogen/server/templates", "glossogen/server/static")
        for p in (ROOT / folder).rglob("*")
        if p.is_file()
    }
    assert {
        "glossogen/server/templates/runs.html",
        "glossogen/server/templates/run.html",
        "glossogen/server/static/run.js",
        "glossogen/server/static/browser.css",
    } <= browser_assets
    assert browser_assets - names == set()
    for asset in browser_assets:  # nothing fetched from a network by a page
        # SVG's namespace is a name, never fetched: the one address an asset may hold
        text = (ROOT / asset).read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "http://" not in text and "https://" not in text, asset
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "glossogen = glossogen.cli:main" in text
    assert "veyru = scenarios.veyru.scenario:Veyru" in text
