"""What the CLI needs to know of Prefect itself, kept out of the Prefect-free library."""

from __future__ import annotations

from prefect.exceptions import TerminationSignal
from prefect.settings import get_current_settings

__all__ = ["TerminationSignal", "api_url_configured"]


def api_url_configured() -> bool:
    """True when a Prefect API URL is configured (else flows start a temporary server)."""
    return bool(get_current_settings().api.url)
