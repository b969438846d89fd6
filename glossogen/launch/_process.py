"""What every process that plays or serves runs sets up first: Prefect's defaults and Ctrl-C.

Shared by the CLI's commands, the detached player (``python -m glossogen.launch.play``) and
``glossogen mcp``/``serve``. The settings are environment variables, read by Prefect when a
flow first imports it; whether a Prefect API is configured is read from the environment, and
from Prefect's settings (``orchestration.runtime``) only when Prefect is imported already or a
settings file names an API URL: otherwise nothing here imports Prefect. A process that imported
Prefect before (a test, a program that embeds glossogen) has its console handlers set here instead.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

PREFECT_DEFAULTS = {
    # A temporary server on a small, loaded machine can take longer than Prefect's default 20 s.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The console shows our progress and one-line errors; Prefect's own lines (tracebacks
    # included) still reach its API and UI. Set it to INFO to see them on the terminal.
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
}
"""Prefect settings a glossogen process uses unless the environment sets them."""


_CONSOLE_LEVEL = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


def apply_prefect_defaults() -> None:
    """Set each of :data:`PREFECT_DEFAULTS` the environment does not set already.

    Prefect reads its console level once, when its logging is set up (at its first import):
    if that happened earlier in this process, its console handlers are given the level the
    environment now names, so that the console shows the same lines whatever ran before.
    """
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    _console_level_as_set()


def _console_level_as_set() -> None:
    """Give Prefect's console handlers the level now set, if Prefect set up its logging."""
    configuration = sys.modules.get("prefect.logging.configuration")
    if configuration is None or not configuration.PROCESS_LOGGING_CONFIG:
        return  # Prefect reads the variable when it sets up its logging
    from orchestration.runtime import set_console_level  # Prefect's edge, already imported

    set_console_level(os.environ[_CONSOLE_LEVEL])


def prefect_api_configured() -> bool:
    """True when a Prefect API URL is configured, asking Prefect only when one may be.

    When this process has already imported Prefect's settings, they are asked; else
    ``PREFECT_API_URL`` in the environment decides at once; otherwise Prefect is imported (about
    2 CPU-s) only when a settings source it reads mentions the API URL: the profiles file
    (``$PREFECT_HOME/profiles.toml``), or ``prefect.toml``, ``pyproject.toml`` or ``.env`` in
    the working directory.
    """
    if "prefect.settings" in sys.modules:  # already paid for: ask it (temporary settings too)
        from orchestration.runtime import api_url_configured

        return api_url_configured()
    if "PREFECT_API_URL" in os.environ:
        return bool(os.environ["PREFECT_API_URL"].strip())
    home = Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser()
    sources = [
        Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser(),
        Path("prefect.toml"),
        Path("pyproject.toml"),
        Path(".env"),
    ]
    for source in sources:
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        if "PREFECT_API_URL" in text or ("[api]" in text and "url" in text):
            from orchestration.runtime import api_url_configured

            return api_url_configured()
    return False


def answer_ctrl_c() -> None:
    """Make SIGINT raise ``KeyboardInterrupt`` here, even if this process started ignoring it.

    A shell that starts a command in the background (``glossogen run ... &`` in a script) hands
    it SIGINT ignored, and Python then leaves it ignored: such a run could not be stopped by
    Ctrl-C's signal, which is what ``glossogen stop`` and the browser's Stop send. Only the main
    thread may set a handler; elsewhere (an embedding program) this does nothing.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


__all__ = ["PREFECT_DEFAULTS", "answer_ctrl_c", "apply_prefect_defaults", "prefect_api_configured"]
