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

PLAIN_HTTP_CA_FILE = Path(__file__).with_name("_plain_http_api.pem")
"""The CA bundle Prefect's API clients load when the API is plain HTTP: one certificate.

Prefect builds a verifying TLS context for every API client it opens (about eight in a
``glossogen run``: the flow run's, its result-store reads, its log and event workers, their
version checks), each loading ``PREFECT_API_SSL_CERT_FILE``, by default a bundle of about 150
certificates: about 20 ms of CPU each, 0.13 CPU-s of a 5-round scripted run, though on an
``http://`` API no TLS handshake ever happens. This bundle holds one self-signed certificate
made for glossogen, its private key discarded at once: it trusts no server, so should anything
in the process reach an ``https://`` URL with it, verification fails rather than passes.
"""

_CA_FILE = "PREFECT_API_SSL_CERT_FILE"


_CONSOLE_LEVEL = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


def apply_prefect_defaults() -> None:
    """Set each of :data:`PREFECT_DEFAULTS` the environment does not set already.

    With a plain-HTTP ``PREFECT_API_URL`` and no ``PREFECT_API_SSL_CERT_FILE``, the latter is
    set to :data:`PLAIN_HTTP_CA_FILE` (an API named in a profile keeps Prefect's default).

    Prefect reads its console level once, when its logging is set up (at its first import):
    if that happened earlier in this process, its console handlers are given the level the
    environment now names, so that the console shows the same lines whatever ran before.
    """
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if _plain_http(os.environ.get("PREFECT_API_URL", "")) and _CA_FILE not in os.environ:
        os.environ[_CA_FILE] = str(PLAIN_HTTP_CA_FILE)  # see PLAIN_HTTP_CA_FILE
    _console_level_as_set()


def _plain_http(url: str) -> bool:
    """Whether ``url`` is a plain-HTTP URL (no TLS: a local or in-cluster Prefect server)."""
    return url.strip().lower().startswith("http://")


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


__all__ = [
    "PLAIN_HTTP_CA_FILE",
    "PREFECT_DEFAULTS",
    "answer_ctrl_c",
    "apply_prefect_defaults",
    "prefect_api_configured",
]
