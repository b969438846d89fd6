"""Prefect's console shows the same lines whether or not the process imported Prefect first.

Prefect reads ``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL`` once, when its first import sets up its
logging; ``apply_prefect_defaults`` sets glossogen's level (CRITICAL) when the environment has
none. Each case runs in a fresh interpreter, so what the test process imported does not count.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_LOG = (
    "import logging\n"
    "logging.getLogger('prefect.engine').info('an info line')\n"
    "logging.getLogger('prefect.engine').error('an error line')\n"
)
_DEFAULTS = "from glossogen.launch import apply_prefect_defaults\napply_prefect_defaults()\n"
_PREFECT = "from prefect import flow\n"  # sets up Prefect's logging, as a flow's import does


def _stderr_lines(script: str, level: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"}
    if level is not None:
        env["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = level
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    # Prefect's console lines start with the time: keep what follows it.
    return [line.split(" | ", 1)[1] for line in done.stderr.splitlines()]


@pytest.mark.parametrize("order", ["defaults, then Prefect", "Prefect, then defaults"])
def test_the_console_shows_no_prefect_line_by_default_in_either_order(order: str) -> None:
    first, second = (_DEFAULTS, _PREFECT) if order.startswith("defaults") else (_PREFECT, _DEFAULTS)
    assert _stderr_lines(first + second + _LOG, None) == []


@pytest.mark.parametrize("order", ["defaults, then Prefect", "Prefect, then defaults"])
def test_a_level_the_user_sets_is_kept_in_either_order(order: str) -> None:
    first, second = (_DEFAULTS, _PREFECT) if order.startswith("defaults") else (_PREFECT, _DEFAULTS)
    assert _stderr_lines(first + second + _LOG, "ERROR") == [
        "ERROR   | prefect.engine - an error line"
    ]


def test_without_the_defaults_prefect_shows_its_info_lines() -> None:
    """The case the defaults change: Prefect imported, nothing set (the test's control)."""
    assert _stderr_lines(_PREFECT + _LOG, None) == [
        "INFO    | prefect.engine - an info line",
        "ERROR   | prefect.engine - an error line",
    ]
