"""The scenario registry: built-ins and plug-ins, all found through one entry-point group.

Every scenario, ours included, is declared in the ``glossogen.scenarios`` entry-point group
(``name = "package.module:ScenarioClass"``), so a plug-in registers exactly as a built-in does.
A scenario package that is not installed is found through ``GLOSSOGEN_SCENARIO_PATH``: folders
(``os.pathsep``-separated) whose sub-folders each hold a scenario package, a ``pyproject.toml``
declaring the same entry points it would declare installed. Classes load lazily, so listing
names imports no scenario code.
"""

from __future__ import annotations

import inspect
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from glossogen.eventlog import register_event
from glossogen.scenario._contract import Scenario

ENTRY_POINT_GROUP = "glossogen.scenarios"
SCENARIO_PATH = "GLOSSOGEN_SCENARIO_PATH"
"""Environment variable: folders holding scenario packages that are not installed."""


class UnknownScenarioError(LookupError):
    """A scenario name no installed package provides; the message lists the installed ones."""


@dataclass(frozen=True)
class ScenarioSource:
    """Where a scenario is declared: its entry point and, off the path, its package folder.

    Attributes:
        entry_point: ``name = "module:Class"`` in the ``glossogen.scenarios`` group.
        package_dir: The folder holding the package's ``pyproject.toml`` when the scenario was
            found through ``GLOSSOGEN_SCENARIO_PATH`` (its modules import from there); None
            when it is installed.
    """

    entry_point: EntryPoint
    package_dir: Path | None = None


def path_scenarios(environ: Mapping[str, str] | None = None) -> list[ScenarioSource]:
    """Return the scenarios the packages under ``GLOSSOGEN_SCENARIO_PATH`` declare, in order.

    Each folder of the path (empty parts skipped) is read one level deep: a sub-folder with a
    ``pyproject.toml`` whose ``[project.entry-points."glossogen.scenarios"]`` table names
    scenarios. A folder that does not exist, or a ``pyproject.toml`` that is not TOML, adds
    nothing here; :func:`path_problems` names each, and an unknown scenario's error says them.
    """
    return _read_path(environ)[0]


def path_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """Return one line per part of ``GLOSSOGEN_SCENARIO_PATH`` that adds no scenario for a fault.

    The faults: a folder that does not exist or is a file; a package's ``pyproject.toml`` that
    cannot be read or is not TOML (named with the parser's reason).
    """
    return _read_path(environ)[1]


def _read_path(environ: Mapping[str, str] | None) -> tuple[list[ScenarioSource], list[str]]:
    raw = (os.environ if environ is None else environ).get(SCENARIO_PATH, "")
    found: list[ScenarioSource] = []
    problems: list[str] = []
    for folder in (Path(part) for part in raw.split(os.pathsep) if part):
        if not folder.is_dir():
            what = "is a file, not a folder" if folder.exists() else "does not exist"
            problems.append(f"{SCENARIO_PATH} folder {folder} {what}")
            continue
        for project in sorted(folder.glob("*/pyproject.toml")):
            try:
                table = tomllib.loads(project.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                problems.append(f"{SCENARIO_PATH}: {project} cannot be read: {exc}")
                continue
            declared = table.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
            found += [
                ScenarioSource(EntryPoint(name, str(value), ENTRY_POINT_GROUP), project.parent)
                for name, value in declared.items()
            ]
    return found, problems


def scenario_sources() -> dict[str, ScenarioSource]:
    """Return every scenario by name: ``GLOSSOGEN_SCENARIO_PATH`` first, then installed ones.

    A name both on the path and installed is the path's (a package being written wins over an
    older installed copy); the first of two path entries with one name wins.
    """
    sources: dict[str, ScenarioSource] = {}
    for source in path_scenarios():
        sources.setdefault(source.entry_point.name, source)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        sources.setdefault(ep.name, ScenarioSource(ep))
    return sources


def scenario_names() -> list[str]:
    """Return the names of every installed scenario (and those on the path), sorted."""
    return sorted(scenario_sources())


@cache
def load_scenario(name: str) -> type[Scenario]:
    """Return the scenario class called ``name`` and register its events.

    A scenario found through ``GLOSSOGEN_SCENARIO_PATH`` imports from its package folder (added
    to the end of ``sys.path``, so it never hides an installed module).

    Raises:
        UnknownScenarioError: no installed scenario has that name, or its module fails to import.
    """
    source = scenario_sources().get(name)
    if source is None:
        problems = path_problems()
        raise UnknownScenarioError(
            f"unknown scenario {name!r} (installed: {', '.join(scenario_names()) or 'none'})"
            + (f"; {'; '.join(problems)}" if problems else "")
        )
    if source.package_dir is not None and str(source.package_dir) not in sys.path:
        sys.path.append(str(source.package_dir))
    try:
        cls = source.entry_point.load()
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
