"""check-scenario names each kind of problem in one exact line and exits 65 (the real CLI).

Each broken package is the one new-scenario writes, with one thing broken by hand, checked in a
process of its own (each is imported as ``reef_signal``, a module a process imports once). The
built-ins are checked by the CLI's entry in one process for the module, and a scenario found
nowhere in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from glossogen.authoring import write_new_scenario
from glossogen.cli import main

NAME = "reef_signal"


def _check(packages: Path, name: str = NAME) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GLOSSOGEN_SCENARIO_PATH": str(packages)}
    return subprocess.run(
        [sys.executable, "-m", "glossogen", "check-scenario", name],
        env=env, capture_output=True, text=True,
    )  # fmt: skip


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def _bad_preset(package: Path) -> None:
    (package / NAME / "knobs_night_watch.json").write_text('{"signal_length": 0}\n')


def _undefined_in_prompt(package: Path) -> None:
    seat = package / NAME / "prompts" / "seat.j2"
    seat.write_text(seat.read_text() + "\nHigh tide is at {{ tide_hour }}.\n")


def _event_without_prefix(package: Path) -> None:
    scenario = package / NAME / "scenario.py"
    _edit(scenario, f'"{NAME}_lanterns_raised"', '"lanterns_raised"')


def _verdicts_that_drift(package: Path) -> None:
    scenario = package / NAME / "scenario.py"
    _edit(scenario, 'LOOKOUT, KEEPER = "lookout", "keeper"',
          'LOOKOUT, KEEPER = "lookout", "keeper"\nTALLY = __import__("itertools").count(1)')  # fmt: skip
    _edit(scenario, 'reason=f"raised {shown} exactly"', 'reason=f"raised {shown} exactly, tally {next(TALLY)}"')  # fmt: skip


def _judge_told_the_signal(package: Path) -> None:
    scenario = package / NAME / "scenario.py"
    _edit(
        scenario,
        "from typing import TYPE_CHECKING, Any, Literal",
        "from typing import TYPE_CHECKING, Annotated, Any, Literal",
    )
    _edit(scenario, "    AgentSpec,\n", "    AgentSpec,\n    Code,\n    JudgeDecision,\n")
    _edit(scenario, f'event_type: Literal["{NAME}_signal_shown"] = "{NAME}_signal_shown"\n    signal: list[str]',
          f'event_type: Literal["{NAME}_case_started"] = "{NAME}_case_started"\n    signal: Annotated[list[str], Code()]')  # fmt: skip
    _edit(scenario, "    events = (SignalShown, LanternsRaised)\n",
          "    events = (SignalShown, LanternsRaised)\n    uses_judge = True\n")  # fmt: skip
    _edit(scenario, "            self.raised = list(colours)\n",
          "            self.raised = list(colours)\n"
          "            await ctx.deps.round.judge(\n"
          "                'Did the keeper raise the right lanterns?',\n"
          "                f\"The signal was {' '.join(self.signal)}.\",\n"
          "                lambda: JudgeDecision(True, 'they match'),\n"
          "            )\n")  # fmt: skip


@pytest.mark.parametrize(
    ("breakage", "lines"),
    [
        (_bad_preset, [f"glossogen: error: {NAME}: preset knobs_night_watch: invalid knob 'signal_length' = 0: Input should be greater than or equal to 1"]),
        (_undefined_in_prompt, [
            f"glossogen: error: {NAME}: prompt seat.j2 for seat lookout: 'tide_hour' is undefined",
            f"glossogen: error: {NAME}: prompt seat.j2 for seat keeper: 'tide_hour' is undefined",
        ]),
        (_event_without_prefix, [f"glossogen: error: {NAME}: event LanternsRaised is named 'lanterns_raised': a scenario's events must start with '{NAME}_'"]),
        (_verdicts_that_drift, [
            f"glossogen: error: {NAME}: two scripted runs of one seed disagree in round 1: team team won (raised blue red red amber exactly, tally 1) then team team won (raised blue red red amber exactly, tally 3)",
            f"glossogen: error: {NAME}: two scripted runs of one seed disagree in round 2: team team won (raised amber green green amber exactly, tally 2) then team team won (raised amber green green amber exactly, tally 4)",
        ]),
        (_judge_told_the_signal, [
            f"glossogen: error: {NAME}: round 1: a judge prompt holds hidden field signal of {NAME}_case_started (amber, blue, red)",
            f"glossogen: error: {NAME}: round 2: a judge prompt holds hidden field signal of {NAME}_case_started (amber, green)",
        ]),
    ],
    ids=["preset", "prompt", "event_name", "nondeterministic", "judge_leak"],
)  # fmt: skip
def test_each_kind_of_problem_is_one_line_and_exit_65(
    breakage: Callable[[Path], None], lines: list[str], tmp_path: Path
) -> None:
    package = write_new_scenario(NAME, tmp_path / "packages").package_dir
    breakage(package)
    checked = _check(tmp_path / "packages")
    assert (checked.returncode, checked.stdout) == (65, "")
    assert checked.stderr.splitlines() == lines


def test_a_scenario_nowhere_to_be_found_is_one_line_and_exit_65(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GLOSSOGEN_SCENARIO_PATH", str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        main(["check-scenario", "coral_bell"])
    assert exited.value.code == 65
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: coral_bell: unknown scenario 'coral_bell' (installed: "
        "drive_module_repair, orbital_anomaly, prisoners_dilemma, signal_game, "
        "spot_the_difference, veyru)"
    ]


BUILT_IN = {  # what check-scenario says of each built-in: counts, and the two runs' wins
    "drive_module_repair": "3 presets, 4 prompts, 3 seats, 2 events",
    "orbital_anomaly": "3 presets, 4 prompts, 3 seats, 2 events",
    "prisoners_dilemma": "2 presets, 1 prompt, 2 seats, 2 events",
    "signal_game": "1 preset, 1 prompt, 2 seats, 3 events",
    "spot_the_difference": "3 presets, 3 prompts, 4 seats, 3 events",
    "veyru": "2 presets, 7 prompts, 2 seats, 2 events",
}


CHECK_EACH = """
import contextlib, io, json, sys
from glossogen.cli import main
said = {}
for name in sys.argv[1:]:
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["check-scenario", name])
        except SystemExit as exited:
            code = exited.code
    said[name] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(said))
"""


@pytest.fixture(scope="module")
def built_in_checks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """``glossogen check-scenario NAME`` of each built-in by the CLI's entry, one after another
    in one process started for them (its global random source moved by no other thread):
    each one's exit code, stdout and stderr."""
    env = {**os.environ, "GLOSSOGEN_SCENARIO_PATH": str(tmp_path_factory.mktemp("none"))}
    done = subprocess.run([sys.executable, "-c", CHECK_EACH, *sorted(BUILT_IN)], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    said: dict[str, list[Any]] = json.loads(done.stdout.splitlines()[-1])
    return said


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_built_in_scenario_passes(name: str, built_in_checks: dict[str, list[Any]]) -> None:
    code, stdout, stderr = built_in_checks[name]
    assert (code, stderr) == (0, "")
    assert stdout == (
        f"ok: {name}: {BUILT_IN[name]}; two scripted 2-round runs agree (2 of 2 rounds won)\n"
    )


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_built_in_follows_the_convention(name: str) -> None:
    """Knobs in knobs.py, prompts under prompts/, rendered by the one strict environment."""
    from glossogen.scenario import load_scenario, scenario_dir

    cls = load_scenario(name)
    folder = scenario_dir(cls)
    assert cls.knobs_model.__module__ == f"scenarios.{name}.knobs"
    assert sorted(folder.glob("prompts/*.j2")), "no prompts under prompts/"
    sources = "".join(p.read_text() for p in folder.glob("*.py"))
    assert "render_prompt(" in sources
    assert "Environment(" not in sources and "jinja2" not in sources


def _verdict_by_chance(package: Path, odds: str, way_in: str) -> int:
    """The verdict flips with chance ``odds`` through ``CHANCE``, which ``way_in`` makes (a
    module-level statement); return the verdict's line."""
    scenario = package / NAME / "scenario.py"
    _edit(scenario, 'LOOKOUT, KEEPER = "lookout", "keeper"',
          f'LOOKOUT, KEEPER = "lookout", "keeper"\n{way_in}')  # fmt: skip
    _edit(scenario, 'return [Verdict(team_id="team", success=True, reason=f"raised {shown} exactly")]',
          f'return [Verdict(team_id="team", success=CHANCE.random() >= {odds}, reason=f"raised {{shown}} exactly")]')  # fmt: skip
    lines = scenario.read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if "CHANCE.random()" in line)


TEN_CHECKS = (
    "from glossogen.authoring import check_scenario\n"
    f"for _ in range(10): print(check_scenario({NAME!r}).problems)\n"
)
"""Ten checks of ``NAME`` one after another, each one's problems on a line."""


def _ten_checks(packages: Path, cli_first: bool = False) -> tuple[list[Any] | None, list[str]]:
    """Each of ten checks' problems, made one after another in one process; with
    ``cli_first``, ``glossogen check-scenario NAME`` by the CLI's entry first in the same
    process (its exit code, stdout and stderr, as :data:`CHECK_EACH` reads them), else None."""
    script = (CHECK_EACH if cli_first else "") + TEN_CHECKS
    env = {**os.environ, "GLOSSOGEN_SCENARIO_PATH": str(packages)}
    out = subprocess.run([sys.executable, "-c", script, NAME], env=env, capture_output=True,
                         text=True, check=True)  # fmt: skip
    lines = out.stdout.splitlines()
    if not cli_first:
        return None, lines
    return json.loads(lines[0])[NAME], lines[1:]


@pytest.mark.parametrize("odds", ["0.5", "0.1"], ids=["coin_flip", "ten_percent_flip"])
def test_an_unseeded_random_verdict_is_caught_every_time(odds: str, tmp_path: Path) -> None:
    """Named where the module draws it: ten checks, ten findings (they were 7 and 3 in 10).

    The CLI's line once, then ten checks, in one process (the finding is read from the module's
    text, so a process per check would pay ten start-ups for the same reading).
    """
    package = write_new_scenario(NAME, tmp_path / "packages").package_dir
    line = _verdict_by_chance(package, odds, "import random as CHANCE")
    finding = (
        f"scenario.py:{line}: random.random is the unseeded global random source: draw from "
        "ctx.rng(...), never a global or unseeded source"
    )
    checked, ten = _ten_checks(tmp_path / "packages", cli_first=True)
    assert checked is not None
    code, stdout, stderr = checked
    assert (code, stdout) == (65, "")
    assert stderr.splitlines() == [f"glossogen: error: {NAME}: {finding}"]
    assert ten == [str([finding])] * 10


@pytest.mark.parametrize("odds", ["0.5", "0.1"], ids=["coin_flip", "ten_percent_flip"])
def test_a_random_draw_the_source_hides_is_caught_by_the_run_every_time(
    odds: str, tmp_path: Path
) -> None:
    """A global draw the module's text does not show is seen by the scripted run (the global
    random state moved): ten checks in one process, ten findings."""
    package = write_new_scenario(NAME, tmp_path / "packages").package_dir
    hidden = 'CHANCE = getattr(__import__("importlib").import_module("ran" + "dom"), "_inst")'
    _verdict_by_chance(package, odds, hidden)
    finding = (
        "the scripted run drew from the global random source: draw from ctx.rng(...), never a "
        "global or unseeded source"
    )
    assert _ten_checks(tmp_path / "packages")[1] == [str([finding])] * 10
