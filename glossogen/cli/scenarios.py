"""``glossogen scenarios``: list installed scenarios with their presets."""

from __future__ import annotations

from glossogen.knobs import list_presets
from glossogen.scenario import UnknownScenarioError, load_scenario, scenario_dir, scenario_names


def scenarios() -> int:
    """List every installed scenario, its presets and a one-line description."""
    for name in scenario_names():
        try:
            cls = load_scenario(name)
        except UnknownScenarioError as exc:
            print(f"{name}\t(unavailable: {exc})")
            continue
        presets = ", ".join(list_presets(scenario_dir(cls))) or "(no presets)"
        print(f"{name}\tpresets: {presets}\t{cls.description.split('. ')[0].rstrip('.')}.")
    return 0
