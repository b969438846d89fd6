"""The scenario registry: built-ins and plug-ins, all found through one entry-point group.

Every scenario, ours included, is declared in the ``glossogen.scenarios`` entry-point group
(``name = "package.module:ScenarioClass"``), so a plug-in registers exactly as a built-in does.
Classes load lazily, so listing names imports no scenario code.
"""

from __future__ import annotations

import inspect
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from glossogen.eventlog import register_event
from glossogen.scenario._contract import Scenario

ENTRY_POINT_GROUP = "glossogen.scenarios"


class UnknownScenarioError(LookupError):
    """A scenario name no installed package provides; the message lists the installed ones."""


def scenario_names() -> list[str]:
    """Return the names of every installed scenario, sorted."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


@cache
def load_scenario(name: str) -> type[Scenario]:
    """Return the scenario class called ``name`` and register its events.

    Raises:
        UnknownScenarioError: no installed scenario has that name, or its module fails to import.
    """
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        raise UnknownScenarioError(
            f"unknown scenario {name!r} (installed: {', '.join(scenario_names()) or 'none'})"
        )
    try:
        cls = found[0].load()
    except Exception as exc:  # a broken plug-in must not take the whole CLI down
        raise UnknownScenarioError(
            f"scenario {name!r} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, Scenario)):
        raise UnknownScenarioError(f"entry point {name!r} does not name a Scenario class")
    for event_cls in cls.events:
        register_event(event_cls)
    return cls


def scenario_dir(cls: type[Scenario]) -> Path:
    """Return the folder holding the scenario's module, presets and prompts."""
    return Path(inspect.getfile(cls)).parent


@cache
def _prompts(folder: Path) -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    return Environment(
        loader=FileSystemLoader(folder),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render_prompt(cls: type[Scenario], name: str, **values: Any) -> str:
    """Render the scenario's ``prompts/<name>.j2`` with ``values``, stripped.

    One Jinja environment per scenario (strict undefined: a missing value is an error, not an
    empty string), the convention every built-in scenario follows.
    """
    template = _prompts(scenario_dir(cls) / "prompts").get_template(f"{name}.j2")
    return str(template.render(**values)).strip()
