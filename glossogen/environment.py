"""The variables a command reads: the process environment, completed by the nearest ``.env``.

Variables come from the environment first, then the nearest ``.env`` at or above the working
directory (an environment variable is never overridden). Kept apart from ``glossogen.launch``
so that commands which only read runs (evaluate, export) need not import the engine.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values


def nearest_dotenv(start: Path) -> Path | None:
    """Return the nearest ``.env`` file at or above ``start``, or None."""
    for folder in (start, *start.parents):
        candidate = folder / ".env"
        if candidate.is_file():
            return candidate
    return None


def load_environment(cwd: Path | None = None) -> dict[str, str]:
    """Return the environment, completed (not overridden) by the nearest ``.env``."""
    env = dict(os.environ)
    found = nearest_dotenv((cwd or Path.cwd()).resolve())
    if found is not None:
        for key, value in dotenv_values(found).items():
            if value is not None:
                env.setdefault(key, value)
    return env


def apply_dotenv(cwd: Path | None = None) -> None:
    """Copy variables of the nearest ``.env`` into ``os.environ`` where they are unset."""
    for key, value in load_environment(cwd).items():
        os.environ.setdefault(key, value)
