"""``glossogen new-scenario`` and ``glossogen check-scenario``: writing your own scenario."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from glossogen import exit_codes


def new_scenario(
    name: str = typer.Argument(..., help="The scenario's name: a lowercase Python identifier."),
    dir: Path = typer.Option(
        ..., "--dir", help="Folder to write the package folder <dir>/<NAME>/ into."
    ),
) -> int:
    """Write the scenario package NAME under --dir: six files that play offline as written.

    Refused in one line, writing nothing, when NAME is not a lowercase identifier (64), is
    taken by a scenario or an importable module (65), or <dir>/<NAME> exists (65).
    """
    from glossogen.authoring import NewScenarioError, write_new_scenario
    from glossogen.cli._refusals import said

    try:
        made = write_new_scenario(name, dir)
    except NewScenarioError as exc:
        print(f"glossogen: error: {said(exc)}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"glossogen: error: cannot write {str(dir / name)!r}: {exc}", file=sys.stderr)
        return int(exit_codes.UNREADABLE)
    print(f"new_scenario_dir={made.package_dir}")
    for relative in made.files:
        print(f"  {relative}")
    print(
        f"Next: GLOSSOGEN_SCENARIO_PATH={dir} glossogen check-scenario {name}  "
        f"(or pip install -e {made.package_dir})"
    )
    return 0


def check_scenario(
    name: str = typer.Argument(..., help="Scenario name, installed or on GLOSSOGEN_SCENARIO_PATH."),
) -> int:
    """Check scenario NAME before a run spends money: one line per problem, exit 65; else ok.

    Presets validate, the knobs schema exports, every seat's prompt renders (strict undefined),
    every seat can act or speak, events carry the scenario's prefix, two scripted 2-round runs
    agree, and a judged scenario's judge prompts hold no field its case marks hidden.
    """
    from glossogen.authoring import check_scenario as check

    found = check(name)
    for problem in found.problems:
        print(f"glossogen: error: {name}: {problem}", file=sys.stderr)
    if found.problems:
        return int(exit_codes.REFUSED)
    print(found.summary)
    return 0
