"""The launch check: every provider the run will call has its variables set.

Variables come from the environment first, then the nearest ``.env`` at or above the working
directory. Values are never logged or returned, only the names of missing variables.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from glossogen import exit_codes
from glossogen.catalog import Provider, missing_env_vars
from glossogen.launch._plan import LaunchError, RunConfig

EXIT_CREDENTIALS = int(exit_codes.CREDENTIALS)
JUDGE_ENV_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "huggingface": "HF_TOKEN",
}


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


def check_credentials(config: RunConfig, cwd: Path | None = None) -> list[str]:
    """Return the providers checked; refuse the launch if any needed variable is unset.

    Checks every seat's provider, every provider a scheduled swap brings in, and the judge's;
    for a run that goes on (``config.providers_ahead``), only the providers still ahead of it.

    Raises:
        LaunchError: exit 77, naming each missing variable and who needs it.
    """
    env = load_environment(cwd)
    if config.providers_ahead is not None:
        needed = dict(config.providers_ahead)
    else:
        needed = {s.provider: f"agent {s.agent_id}" for s in reversed(config.seats)}
        for swap in config.future_providers:
            needed.setdefault(swap, "a scheduled swap")
    missing: list[str] = []
    for name, who in needed.items():
        for var in missing_env_vars(Provider(name), env):
            missing.append(f"{var} (provider {name}, {who})")
    judge = config.judge.provider if config.judge else None
    if judge and judge != "scripted":
        var = JUDGE_ENV_VARS[judge]
        if not env.get(var):
            missing.append(f"{var} (judge provider {judge})")
    if missing:
        raise LaunchError("missing credentials: " + "; ".join(missing), EXIT_CREDENTIALS)
    return sorted(set(needed) | ({judge} if judge else set()))


def apply_dotenv(cwd: Path | None = None) -> None:
    """Copy variables of the nearest ``.env`` into ``os.environ`` where they are unset."""
    for key, value in load_environment(cwd).items():
        os.environ.setdefault(key, value)
