"""``glossogen scenarios``: list installed scenarios with their presets."""

from __future__ import annotations

import sys

from glossogen.knobs import list_presets
from glossogen.scenario import UnknownScenarioError, load_scenario, scenario_dir, scenario_names
from glossogen.scenario._registry import path_problems


def scenarios() -> int:
    """List every installed scenario, its presets and a one-line description.

    A part of ``GLOSSOGEN_SCENARIO_PATH`` that adds nothing for a fault is warned about on
    stderr, one line each (the listing still exits 0).
    """
    for problem in path_problems():
        print(f"glossogen: warning: {problem}", file=sys.stderr)
    for name in scenario_names():
        try:
            cls = load_scenario(name)
        except UnknownScenarioError as exc:
            print(f"{name}\t(unavailable: {exc})")
            continue
        presets = ", ".join(list_presets(scenario_dir(cls))) or "(no presets)"
        print(f"{name}\tpresets: {presets}\t{cls.description.split('. ')[0].rstrip('.')}.")
    return 0
