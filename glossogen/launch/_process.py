"""What every process that plays or serves runs sets up first: Prefect's defaults and Ctrl-C.

Shared by the CLI's commands, the detached player (``python -m glossogen.launch.play``) and
``glossogen mcp``/``serve``; nothing here imports Prefect (the settings are environment
variables, read by Prefect when a flow first imports it).
"""

from __future__ import annotations

import os
import signal
import threading

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


def apply_prefect_defaults() -> None:
    """Set each of :data:`PREFECT_DEFAULTS` the environment does not set already."""
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)


def answer_ctrl_c() -> None:
    """Make SIGINT raise ``KeyboardInterrupt`` here, even if this process started ignoring it.

    A shell that starts a command in the background (``glossogen run ... &`` in a script) hands
    it SIGINT ignored, and Python then leaves it ignored: such a run could not be stopped by
    Ctrl-C's signal, which is what ``glossogen stop`` and the browser's Stop send. Only the main
    thread may set a handler; elsewhere (an embedding program) this does nothing.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


__all__ = ["PREFECT_DEFAULTS", "answer_ctrl_c", "apply_prefect_defaults"]
