"""Writing your own scenario as a user does it: new-scenario, check-scenario, run, its own test.

Every step is a subprocess of the real CLI (or of the project's pytest); the package is found
through GLOSSOGEN_SCENARIO_PATH, never installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.cli import main

NAME = "harbour_lights"
FILES = [
    "pyproject.toml",
    f"{NAME}/scenario.py",
    f"{NAME}/knobs.py",
    f"{NAME}/knobs_default.json",
    f"{NAME}/prompts/seat.j2",
    f"tests/test_{NAME}.py",
]
ROUNDS = [  # seed 7; one night of four misplayed: the keeper misses the last lantern
    "round 1/4: won (raised blue red red amber exactly)",
    "round 2/4: won (raised amber green green amber exactly)",
    "round 3/4: won (raised red blue red green exactly)",
    "round 4/4: lost (raised red red blue for red red blue green)",
]


def _run(*args: str, cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["GLOSSOGEN_SCENARIO_PATH"] = str(path)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_new_scenario_checks_plays_and_passes_its_own_test(
    prefect_api: str, tmp_path: Path
) -> None:
    packages = tmp_path / "packages"
    made = _run("-m", "glossogen", "new-scenario", NAME, "--dir", str(packages), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[:7] == [
        f"new_scenario_dir={packages / NAME}",
        *(f"  {f}" for f in FILES),
    ]
    written = sorted(str(p.relative_to(packages / NAME)) for p in (packages / NAME).rglob("*"))
    assert [w for w in written if (packages / NAME / w).is_file()] == sorted(FILES)

    checked = _run("-m", "glossogen", "check-scenario", NAME, cwd=tmp_path, path=packages)
    assert (checked.returncode, checked.stderr) == (0, "")
    assert checked.stdout == (
        f"ok: {NAME}: 1 preset, 1 prompt, 2 seats, 2 events; "
        "two scripted 2-round runs agree (2 of 2 rounds won)\n"
    )

    played = _run(
        "-m", "glossogen", "run", NAME, "--model", "scripted", "--provider", "scripted",
        "--runs-dir", str(tmp_path / "runs"), "--config", "knobs_default",
        cwd=tmp_path, path=packages,
    )  # fmt: skip
    assert played.returncode == 0, played.stderr
    rounds = [x.split(" · ")[0] for x in played.stdout.splitlines() if x.startswith("round ")]
    assert rounds == ROUNDS
    assert "completed: 3/4 rounds won · 4 messages · 77 characters" in played.stdout

    own = _run("-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=packages / NAME)
    assert own.returncode == 0, own.stdout
    assert own.stdout.splitlines()[-1].startswith("3 passed")


@pytest.mark.parametrize(
    ("name", "code", "line"),
    [
        ("Harbour-Lights", 64, "glossogen: error: scenario name 'Harbour-Lights' is not a lowercase Python identifier (a letter, then letters, digits or _)"),
        ("class", 64, "glossogen: error: scenario name 'class' is not a lowercase Python identifier (a letter, then letters, digits or _)"),
        ("veyru", 65, "glossogen: error: scenario name 'veyru' is taken: a scenario of that name is installed or on GLOSSOGEN_SCENARIO_PATH"),
        ("json", 65, "glossogen: error: scenario name 'json' is taken: a module of that name is importable already"),
    ],
)  # fmt: skip
def test_a_name_that_cannot_be_a_scenario_is_refused_and_nothing_is_written(
    name: str, code: int, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["new-scenario", name, "--dir", str(tmp_path / "packages")])
    assert exited.value.code == code
    assert capsys.readouterr().err.splitlines() == [line]
    assert not (tmp_path / "packages").exists()


def test_a_dir_already_holding_the_package_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "packages" / NAME / "pyproject.toml"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my own work\n")
    with pytest.raises(SystemExit) as exited:
        main(["new-scenario", NAME, "--dir", str(tmp_path / "packages")])
    assert exited.value.code == 65
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: error: '{tmp_path / 'packages' / NAME}' already exists: "
        "new-scenario never overwrites"
    ]
    assert [p.name for p in (tmp_path / "packages").rglob("*")] == [NAME, "pyproject.toml"]
    assert mine.read_text() == "# my own work\n"


def test_a_dir_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes").write_text("x")
    with pytest.raises(SystemExit) as exited:
        main(["new-scenario", NAME, "--dir", str(tmp_path / "notes")])
    assert exited.value.code == 66
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: error: --dir '{tmp_path / 'notes'}' is not a folder"
    ]
