"""Whether the Prefect API a command needs answers, said in one line before anything is written.

Commands that talk to a configured Prefect server (``pools apply``, ``deploy``, ``run``,
``sweep``, the derived-run commands, ``evaluate``) call :func:`refuse_unreachable_api` first: a
``PREFECT_API_URL`` naming a server that is not there is refused with
``glossogen: error: cannot reach the Prefect API at <url>: <reason>`` and exit 69 (transport),
instead of Prefect's bare ``ConnectError:``/``ReadError:`` later on.
:func:`unreachable_reason` recognises the same failure when the server goes away mid-command.
"""

from __future__ import annotations

import re
import sys

from glossogen import exit_codes

HEALTH_TIMEOUT_SECONDS = 10.0
"""How long the health check waits to connect and for the answer (seconds)."""

_ERRNO = re.compile(r"^\[Errno -?\d+\]\s*")
_QUIET = {
    "ReadError": "the connection broke before the server answered",
    "WriteError": "the connection broke while sending the request",
    "RemoteProtocolError": "the server closed the connection without an answer",
    "ConnectTimeout": f"no connection within {HEALTH_TIMEOUT_SECONDS:g} s",
    "ReadTimeout": f"no answer within {HEALTH_TIMEOUT_SECONDS:g} s",
    "PoolTimeout": f"no connection within {HEALTH_TIMEOUT_SECONDS:g} s",
}
"""What an httpx transport error means, for the classes that often carry no message."""


def _describe(exc: BaseException) -> str:
    """``[Errno 111] Connection refused`` -> ``connection refused``; a bare class is named."""
    text = _ERRNO.sub("", (str(exc).strip().splitlines() or [""])[0]).rstrip(". ")
    if not text:
        return _QUIET.get(type(exc).__name__, type(exc).__name__)
    return text[0].lower() + text[1:]


def unreachable_reason(exc: BaseException) -> str | None:
    """Return why the Prefect API could not be reached, if ``exc`` (or its cause) says so.

    Recognised: httpx transport errors (connect, read, write, timeouts, protocol), Python's
    ``ConnectionError``, and Prefect's own ``RuntimeError("Failed to reach API at ...")``.

    Returns:
        A short lower-case reason (``connection refused``), or None for any other error.
    """
    import httpx

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.TransportError | ConnectionError):
            return _describe(seen)
        if isinstance(seen, RuntimeError) and str(seen).startswith("Failed to reach API"):
            cause = seen.__cause__ or seen.__context__
            return _describe(cause) if cause is not None else "no answer to its health check"
        seen = seen.__cause__ or seen.__context__
    return None


def health_problem(api_url: str) -> str | None:
    """Ask ``<api_url>/health`` once; return None when it answers 2xx, else why not.

    Args:
        api_url: The Prefect API URL (``http://127.0.0.1:4200/api``).

    Returns:
        None, or a one-line reason (``connection refused``, ``it answered HTTP 404 at /health``).
    """
    import httpx

    url = f"{api_url.rstrip('/')}/health"
    tls = not url.lower().startswith("http:")  # plain HTTP: no TLS context (CA bundle) built
    try:
        answer = httpx.get(url, timeout=HEALTH_TIMEOUT_SECONDS, verify=tls)
    except httpx.HTTPError as exc:
        return unreachable_reason(exc) or _describe(exc)
    if answer.is_success or answer.status_code in (401, 403):
        return None  # reachable; credentials (PREFECT_API_KEY, Cloud) are the client's business
    return f"it answered HTTP {answer.status_code} at /health (is it a Prefect server's /api URL?)"


def cannot_reach(api_url: str, reason: str) -> int:
    """Print ``cannot reach the Prefect API at <api_url>: <reason>``; return 69 (transport).

    A user name and password written in the URL are left out of the line (secrets never reach
    a log).
    """
    import httpx

    try:
        shown = str(httpx.URL(api_url).copy_with(username=None, password=None))
    except (httpx.InvalidURL, TypeError, ValueError):
        shown = "the configured URL"
    print(
        f"glossogen: error: cannot reach the Prefect API at {shown}: {reason}",
        file=sys.stderr,
        flush=True,
    )
    return int(exit_codes.TRANSPORT)


def refuse_unreachable_api() -> int | None:
    """Check the configured Prefect API, if any, before a command writes or spends anything.

    Returns:
        None when no ``PREFECT_API_URL`` is configured (the command starts a temporary server)
        or the server answers; else 69, the error line printed on stderr.
    """
    from glossogen.cli._startup import loading_modules

    with loading_modules():  # Prefect, for its settings
        from orchestration.runtime import api_url

    url = api_url()
    if url is None:
        return None
    problem = health_problem(url)
    return None if problem is None else cannot_reach(url, problem)
