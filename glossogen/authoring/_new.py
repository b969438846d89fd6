"""``glossogen new-scenario``: write a small scenario package that plays offline as written.

The package is its own distribution, six files under ``<dir>/<name>/``::

    pyproject.toml              the distribution, its entry point in ``glossogen.scenarios``
    <name>/scenario.py          the Scenario subclass, its events, its scripted policy
    <name>/knobs.py             its knobs model
    <name>/knobs_default.json   its preset
    <name>/prompts/seat.j2      its system prompt (one template, both seats)
    tests/test_<name>.py        its own test, through glossogen.testing

``<name>/`` has no ``__init__.py`` (a namespace package: one file fewer, imported the same).
Rules, each checked before anything is written: the name is a lowercase Python identifier
(``[a-z][a-z0-9_]*``, not a keyword); no scenario is already called so (installed or on
``GLOSSOGEN_SCENARIO_PATH``) and no importable module has that name; ``<dir>/<name>`` does not
exist (never overwritten). The files are written into a hidden folder beside it and renamed
into place, so a failure leaves nothing behind.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from string import Template

from glossogen import exit_codes
from glossogen.refusals import Refusal
from glossogen.scenario import scenario_names

_NAME = re.compile(r"[a-z][a-z0-9_]*")

_FILES = {  # template -> where it goes, relative to <dir>/<name>/ ("{name}" filled in)
    "pyproject.toml.tmpl": "pyproject.toml",
    "scenario.py.tmpl": "{name}/scenario.py",
    "knobs.py.tmpl": "{name}/knobs.py",
    "knobs_default.json.tmpl": "{name}/knobs_default.json",
    "seat.j2.tmpl": "{name}/prompts/seat.j2",
    "test_scenario.py.tmpl": "tests/test_{name}.py",
}


class NewScenarioError(ValueError):
    """A ``new-scenario`` request refused before anything is written; one line, with its code.

    Attributes:
        exit_code: 64 for a name that is not a lowercase identifier, 65 for a name taken or a
            package already there, 66 for a ``dir`` that is not a folder.
        refusal: The refused request value (``dir``), which each surface names its own way
            (the CLI by its flag), or None.
    """

    def __init__(self, message: str, exit_code: int, refusal: Refusal | None = None) -> None:
        """Keep the one-line ``message`` (or the refusal's) and the exit code it carries."""
        super().__init__(message or (refusal.worded() if refusal else ""))
        self.exit_code = exit_code
        self.refusal = refusal


@dataclass(frozen=True)
class NewScenario:
    """What ``new-scenario`` wrote: the package folder and its files, relative to it."""

    package_dir: Path
    files: list[str]


def class_name(name: str) -> str:
    """The scenario class of ``name``: ``lantern_relay`` -> ``LanternRelay``."""
    return "".join(part.capitalize() for part in name.split("_") if part)


def check_new_scenario(name: str, folder: Path) -> Path:
    """Return ``<folder>/<name>`` if a package may be written there, else refuse.

    Raises:
        NewScenarioError: see the module's rules; the message names the value.
    """
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise NewScenarioError(
            f"scenario name {name!r} is not a lowercase Python identifier "
            "(a letter, then letters, digits or _)",
            int(exit_codes.USAGE),
        )
    if name in scenario_names():
        raise NewScenarioError(
            f"scenario name {name!r} is taken: a scenario of that name is installed "
            "or on GLOSSOGEN_SCENARIO_PATH",
            int(exit_codes.REFUSED),
        )
    if importlib.util.find_spec(name) is not None:
        raise NewScenarioError(
            f"scenario name {name!r} is taken: a module of that name is importable already",
            int(exit_codes.REFUSED),
        )
    if folder.exists() and not folder.is_dir():
        refused = Refusal(field="dir", reason=f"{str(folder)!r} is not a folder")
        raise NewScenarioError("", int(exit_codes.UNREADABLE), refused)
    package_dir = folder / name
    if package_dir.exists() or package_dir.is_symlink():
        raise NewScenarioError(
            f"{str(package_dir)!r} already exists: new-scenario never overwrites",
            int(exit_codes.REFUSED),
        )
    return package_dir


def write_new_scenario(name: str, folder: Path) -> NewScenario:
    """Write the scenario package ``name`` under ``folder`` (created if missing).

    Raises:
        NewScenarioError: the request is refused (:func:`check_new_scenario`); nothing written.
        OSError: the folder cannot be written; what was begun is removed.
    """
    package_dir = check_new_scenario(name, folder)
    folder.mkdir(parents=True, exist_ok=True)
    values = {"name": name, "class_name": class_name(name)}
    template_dir = files("glossogen.authoring") / "template"
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
    staging.chmod(0o755)  # mkdtemp makes it private; the package is an ordinary folder
    written = []
    try:
        for template, target in _FILES.items():
            relative = target.format(name=name)
            text = Template((template_dir / template).read_text(encoding="utf-8"))
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.substitute(values), encoding="utf-8")
            written.append(relative)
        staging.rename(package_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return NewScenario(package_dir, written)
