"""Unseeded sources of chance or time in a scenario's code, read without running it.

A scenario draws every random choice from ``ctx.rng(...)`` (seeded by the run's seed and the
round) and never reads the wall clock: otherwise one seed does not replay the same game. This
module reads every ``.py`` file of the scenario's folder (its syntax tree, no import) and names
each use of a source that breaks that:

- the ``random`` module's global functions (``random.random()``, ``from random import
  choice``), ``random.Random()`` built with no seed, ``random.SystemRandom``;
- the wall clock and other fresh values: ``time.time``/``time_ns``/``monotonic``/
  ``perf_counter``, ``datetime.now``/``utcnow``/``today``, ``date.today``, ``uuid.uuid1``/
  ``uuid4``, ``os.urandom``, ``os.getrandom`` and the ``secrets`` module.

A module used through another name (``import random as r``) is followed by its name.
"""

from __future__ import annotations

import ast
from pathlib import Path

SEEDED = frozenset({"Random"})
"""What of ``random`` a scenario may name: the class that ``ctx.rng`` instances are."""

UNSEEDED = {
    "time": frozenset({"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter"}),
    "datetime": frozenset({"now", "utcnow", "today"}),
    "date": frozenset({"today"}),
    "uuid": frozenset({"uuid1", "uuid4"}),
    "os": frozenset({"urandom", "getrandom"}),
}
"""Module (or class) name to the attributes that read the clock or fresh entropy."""

ADVICE = "draw from ctx.rng(...), never a global or unseeded source"


def unseeded_sources(folder: Path) -> list[str]:
    """One line per use of an unseeded source in the ``.py`` files under ``folder``, in order.

    Each line is ``<file>:<line>: <what> ...``, the file relative to ``folder``. A file that
    does not parse is left to the import (which names it).
    """
    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        where = path.relative_to(folder).as_posix()
        found += [f"{where}:{line}: {what}: {ADVICE}" for line, what in _uses(tree)]
    return found


def _uses(tree: ast.Module) -> list[tuple[int, str]]:
    aliases, uses = _imports(tree)
    return sorted(set(uses + _reads(tree, aliases)))


def _imports(tree: ast.Module) -> tuple[dict[str, str], list[tuple[int, str]]]:
    """The names imports bind to a random or clock source, and the imports that are uses."""
    aliases: dict[str, str] = {}  # local name -> the module or class it stands for
    uses: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("random", "secrets", *UNSEEDED):
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            _import_from(node, aliases, uses)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            for alias in node.names:
                if alias.name == "Random":
                    aliases[alias.asname or alias.name] = "random.Random"
    return aliases, uses


def _import_from(
    node: ast.ImportFrom, aliases: dict[str, str], uses: list[tuple[int, str]]
) -> None:
    """Note what ``from <module> import ...`` binds (``aliases``) or uses (``uses``)."""
    if node.module in ("random", "secrets"):
        for alias in node.names:
            if node.module == "secrets" or alias.name not in SEEDED:
                uses.append((node.lineno, f"from {node.module} import {alias.name}"))
    elif node.module in ("datetime", *UNSEEDED):
        for alias in node.names:
            if alias.name in ("datetime", "date"):
                aliases[alias.asname or alias.name] = alias.name
            elif alias.name in UNSEEDED.get(node.module, ()):
                uses.append((node.lineno, f"from {node.module} import {alias.name}"))


def _reads(tree: ast.Module, aliases: dict[str, str]) -> list[tuple[int, str]]:
    """The attributes and calls that read an unseeded random source, fresh entropy or the clock."""
    uses: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            module = _named(node.value, aliases)
            what = f"{module}.{node.attr}"
            if module == "random" and node.attr not in SEEDED:
                uses.append((node.lineno, f"{what} is the unseeded global random source"))
            elif module == "secrets":
                uses.append((node.lineno, f"{what} is fresh entropy"))
            elif module is not None and node.attr in UNSEEDED.get(module, ()):
                uses.append((node.lineno, f"{what} reads the clock or fresh entropy"))
        if (
            isinstance(node, ast.Call)
            and not node.args
            and not node.keywords
            and _named(node.func, aliases) == "random.Random"
        ):
            uses.append((node.lineno, "random.Random() with no seed"))
    return uses


def _named(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The module or class ``node`` names (``random``, ``datetime``, ``random.Random``)."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        outer = _named(node.value, aliases)
        if outer == "datetime" and node.attr in ("datetime", "date"):
            return node.attr
        if outer == "random" and node.attr == "Random":
            return "random.Random"
    return None
