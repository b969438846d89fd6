"""The launch check: every provider the run will call has its variables set.

Variables come from the environment first, then the nearest ``.env`` at or above the working
directory. Values are never logged or returned, only the names of missing variables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from glossogen import exit_codes
from glossogen.catalog import Provider, missing_env_vars
from glossogen.environment import apply_dotenv, load_environment, nearest_dotenv
from glossogen.launch._plan import LaunchError, RunConfig

__all__ = [
    "EXIT_CREDENTIALS",
    "JUDGE_ENV_VARS",
    "apply_dotenv",
    "check_credentials",
    "load_environment",
    "nearest_dotenv",
    "placeholder_keys",
]

EXIT_CREDENTIALS = int(exit_codes.CREDENTIALS)
JUDGE_ENV_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "huggingface": "HF_TOKEN",
}


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


PLACEHOLDER_KEY = "glossogen-dry-run-placeholder"
"""What a missing key reads while a dry run builds the models (no request is ever sent)."""


@contextmanager
def placeholder_keys(config: RunConfig) -> Iterator[list[str]]:
    """Set every key the run's providers lack to a placeholder meanwhile; yield their names.

    A dry run estimates without keys, but the settings check builds each model as a run would
    (pydantic-ai's profile says what a model drops), and an SDK refuses to build a client with
    no key. Only key and token variables are filled (an endpoint variable is no key: a model
    that needs one still fails to build); the environment is restored on exit.
    """
    env = load_environment()
    needed = {s.provider for s in config.seats} | set(config.future_providers)
    wanted = [v for name in needed for v in missing_env_vars(Provider(name), env)]
    judge = config.judge.provider if config.judge else None
    if judge and judge != "scripted" and not env.get(JUDGE_ENV_VARS[judge]):
        wanted.append(JUDGE_ENV_VARS[judge])
    filled = sorted(
        {g.split("|")[0] for g in wanted if "KEY" in g.split("|")[0] or "TOKEN" in g.split("|")[0]}
    )
    for var in filled:
        os.environ[var] = PLACEHOLDER_KEY
    try:
        yield filled
    finally:
        for var in filled:
            if os.environ.get(var) == PLACEHOLDER_KEY:
                del os.environ[var]
