"""Asking a busy Prefect server again soon, instead of after the client's own backoff.

A SQLite-backed Prefect server answers 503 while its database is locked, and refuses a write
at once with ``SQLITE_BUSY_SNAPSHOT`` whenever another write committed since the request's
read (the busy timeout does not wait that out): each try is a fresh chance, and under load most
fail. Prefect's client retries a 429/502/503 5 times, 2, 4, 8, 16 and 32 s apart
(``PREFECT_CLIENT_MAX_RETRIES``, ``prefect/client/base.py``): 6 chances in a minute, while slots
sat free (measured on a 40-run sweep) and a loaded machine's sweep launch failed on its sixth
503. :func:`ask_while_busy` turns the client's retries off for one call and asks again after a
short jittered wait, many times over a longer window; it answers a ``Retry-After`` as asked.
Used by the call gate (:mod:`orchestration.gate`) and by every launch of a deployment's flow
run (:func:`orchestration.deployments.create_flow_run`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

__all__ = ["ask_while_busy"]

FIRST_WAIT_SECONDS = 0.05
"""The wait before the first ask again (jittered: between half of it and all of it)."""


async def ask_while_busy(
    call: Callable[..., Awaitable[T]],
    *,
    statuses: Collection[int],
    seconds: float,
    longest_wait: float,
    dropped: bool = False,
    **kwargs: Any,
) -> T:
    """Await ``call(**kwargs)`` with the Prefect client's retries off; ask again while busy.

    Args:
        call: A coroutine function making Prefect client requests.
        statuses: The HTTP statuses that mean "busy, ask again" (e.g. 503).
        seconds: How long to keep asking; the answer past it is raised.
        longest_wait: The longest wait between two asks (the waits double from
            :data:`FIRST_WAIT_SECONDS`, jittered); a ``Retry-After`` header is waited as said
            (one that ends past ``seconds`` raises at once).
        dropped: Also ask again when the connection failed mid-request (a read or write error,
            a timeout, a broken response), as Prefect's client does; not when it was refused.
        **kwargs: ``call``'s arguments.

    Raises:
        httpx.HTTPStatusError: any other status, or a busy one after ``seconds``.
        httpx.TransportError: a connection that failed, or (``dropped``) dropped after
            ``seconds``.
    """
    from prefect.context import SettingsContext, get_settings_context

    deadline = time.monotonic() + seconds
    delay = FIRST_WAIT_SECONDS
    while True:
        told: float | None = None
        try:
            context = get_settings_context()
            with SettingsContext(profile=context.profile, settings=_no_retries(context.settings)):
                return await call(**kwargs)
        except httpx.HTTPStatusError as exc:
            told = _retry_after(exc.response)
            later = time.monotonic() + (told or 0.0)
            if exc.response.status_code not in statuses or later > deadline:
                raise
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            refused = isinstance(exc, httpx.ConnectError)
            if not dropped or refused or time.monotonic() > deadline:
                raise
        wait = random.uniform(delay / 2, delay)  # noqa: S311 (jitter, not secrets)
        await asyncio.sleep(told if told is not None else wait)
        delay = min(delay * 2, longest_wait)


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number of seconds), else None."""
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, ValueError):
        return None


_NO_RETRIES: list[tuple[Any, Any]] = []
"""The last (settings, same settings with client retries off): one entry, so none is kept alive."""


def _no_retries(settings: Any) -> Any:
    """``settings`` with the client's retries off, built once per settings object in force.

    ``prefect.settings.temporary_settings`` rebuilds the whole settings model on each use,
    which costs more CPU than the request it wraps.
    """
    from prefect.settings import PREFECT_CLIENT_MAX_RETRIES

    if not _NO_RETRIES or _NO_RETRIES[0][0] is not settings:
        _NO_RETRIES[:] = [
            (settings, settings.copy_with_update(updates={PREFECT_CLIENT_MAX_RETRIES: 0}))
        ]
    return _NO_RETRIES[0][1]
