"""What the CLI needs to know of Prefect itself, kept out of the Prefect-free library."""

from __future__ import annotations

from contextlib import AbstractContextManager

from prefect.exceptions import TerminationSignal
from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

__all__ = [
    "TerminationSignal",
    "api_url",
    "api_url_configured",
    "send_queued",
    "set_console_level",
    "using_api_url",
]


def api_url_configured() -> bool:
    """True when a Prefect API URL is configured (else flows start a temporary server)."""
    return bool(get_current_settings().api.url)


def api_url() -> str | None:
    """The configured Prefect API URL, or None (flows then start a temporary server)."""
    return get_current_settings().api.url or None


def using_api_url(url: str) -> AbstractContextManager[object]:
    """Point every Prefect client in this process at ``url`` until the block exits."""
    return temporary_settings(updates={PREFECT_API_URL: url})


def send_queued(seconds: float = 5.0) -> None:
    """Send the logs and events Prefect has queued for the API now, waiting at most ``seconds``.

    Before a temporary server stops: whatever is still queued would otherwise be retried against
    the stopped server at interpreter exit (``Error logging to API``, retried for a minute or
    more). Call it with no event loop running.
    """
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=seconds)
    EventsWorker.drain_all(timeout=seconds)


def set_console_level(level: str) -> None:
    """Give each of Prefect's console handlers ``level`` (a name or a number).

    On the root logger and the loggers Prefect's logging config names: the library calls this
    when Prefect set up its logging before glossogen's default level was applied.
    """
    import logging

    from prefect.logging.configuration import PROCESS_LOGGING_CONFIG
    from prefect.logging.handlers import PrefectConsoleHandler

    for name in [None, *PROCESS_LOGGING_CONFIG.get("loggers", {})]:
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.setLevel(int(level) if level.isdigit() else level)
