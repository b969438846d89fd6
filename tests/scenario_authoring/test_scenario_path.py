"""GLOSSOGEN_SCENARIO_PATH: folders of scenario packages found without installing them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from glossogen.authoring import write_new_scenario
from glossogen.scenario import path_scenarios
from glossogen.scenario._registry import path_problems


def test_each_folder_of_the_path_is_read_and_a_missing_one_is_skipped(tmp_path: Path) -> None:
    write_new_scenario("kelp_bell", tmp_path / "second")
    path = os.pathsep.join([str(tmp_path / "nowhere"), "", str(tmp_path / "second")])
    found = path_scenarios({"GLOSSOGEN_SCENARIO_PATH": path})
    assert [(s.entry_point.name, s.entry_point.value, s.package_dir) for s in found] == [
        ("kelp_bell", "kelp_bell.scenario:KelpBell", tmp_path / "second" / "kelp_bell")
    ]
    assert path_scenarios({}) == []


def test_glossogen_scenarios_lists_a_package_on_the_path(tmp_path: Path) -> None:
    write_new_scenario("kelp_bell", tmp_path / "packages")
    listed = subprocess.run(
        [sys.executable, "-m", "glossogen", "scenarios"],
        env={**os.environ, "GLOSSOGEN_SCENARIO_PATH": str(tmp_path / "packages")},
        capture_output=True, text=True,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert (
        "kelp_bell\tpresets: knobs_default\tA lookout sees a row of lanterns and tells the "
        "keeper on a metered channel; the night is won when the keeper raises the same colours "
        "in the same order."
    ) in listed.stdout.splitlines()


def test_each_faulty_part_of_the_path_is_named_and_an_unknown_scenario_says_them(
    tmp_path: Path,
) -> None:
    write_new_scenario("kelp_bell", tmp_path / "packages")
    (tmp_path / "packages" / "kelp_bell" / "pyproject.toml").write_text("this is [not toml\n")
    (tmp_path / "a_file").write_text("")
    path = os.pathsep.join(
        [str(tmp_path / "nowhere"), str(tmp_path / "a_file"), str(tmp_path / "packages")]
    )
    env = {**os.environ, "GLOSSOGEN_SCENARIO_PATH": path}
    problems = [
        f"GLOSSOGEN_SCENARIO_PATH folder {tmp_path / 'nowhere'} does not exist",
        f"GLOSSOGEN_SCENARIO_PATH folder {tmp_path / 'a_file'} is a file, not a folder",
        f"GLOSSOGEN_SCENARIO_PATH: {tmp_path / 'packages' / 'kelp_bell' / 'pyproject.toml'} "
        "cannot be read: Expected '=' after a key in a key/value pair (at line 1, column 6)",
    ]
    assert path_problems({"GLOSSOGEN_SCENARIO_PATH": path}) == problems
    listed = subprocess.run(
        [sys.executable, "-m", "glossogen", "scenarios"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert listed.returncode == 0
    assert listed.stderr.splitlines() == [f"glossogen: warning: {p}" for p in problems]
    checked = subprocess.run(
        [sys.executable, "-m", "glossogen", "check-scenario", "kelp_bell"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert checked.returncode == 65
    assert checked.stderr.splitlines() == [
        "glossogen: error: kelp_bell: unknown scenario 'kelp_bell' (installed: "
        "drive_module_repair, orbital_anomaly, prisoners_dilemma, signal_game, "
        "spot_the_difference, veyru); " + "; ".join(problems)
    ]
