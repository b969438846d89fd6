"""``glossogen pools apply``: create the work pools and ``llm:<provider>`` limits from one file."""

from __future__ import annotations

import asyncio
import os

import typer

from glossogen import exit_codes
from glossogen.cli._refusals import error

pools = typer.Typer(
    name="pools",
    help="Work pools and model-call concurrency limits on the Prefect server.",
    no_args_is_help=True,
    add_completion=False,
)


def _error(message: str) -> None:
    error(message)


def server_configured() -> bool:
    """True when ``PREFECT_API_URL`` names a server (pools and limits on a temporary one vanish)."""
    from orchestration.runtime import api_url_configured

    return api_url_configured()


@pools.command("apply")
def apply(
    limits: str = typer.Option(
        "", "--limits", help="Limits file (default: deployments/limits.yaml of the checkout)."
    ),
) -> int:
    """Create or update every work pool and active llm:<provider> limit the file declares."""
    from deployments.pools import DEFAULT_LIMITS_FILE, LimitsError, apply_limits, load_limits

    try:
        spec = load_limits(limits or DEFAULT_LIMITS_FILE)
    except LimitsError as exc:
        _error(str(exc))
        return exc.exit_code
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    if not server_configured():
        _error("PREFECT_API_URL is not set: pools and limits need a running Prefect server")
        return int(exit_codes.USAGE)
    from glossogen.cli._prefect_api import cannot_reach, refuse_unreachable_api, unreachable_reason
    from orchestration.runtime import api_url

    refused = refuse_unreachable_api()
    if refused is not None:
        return refused
    try:
        done = asyncio.run(apply_limits(spec))
    except Exception as exc:  # noqa: BLE001 (server gone or refusing: one line, exit 69)
        reason = unreachable_reason(exc)
        if reason is not None:
            return cannot_reach(str(api_url()), reason)
        _error(f"the Prefect server at {api_url()} refused: {type(exc).__name__}: {exc}")
        return int(exit_codes.TRANSPORT)
    for line in done:
        print(line)
    return 0
