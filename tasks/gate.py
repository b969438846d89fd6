"""The ``llm:<provider>`` call gate: Prefect global concurrency limits around every model request.

:func:`install_call_gate` puts a :class:`PrefectCallGate` behind the library's hook
(:mod:`glossogen.concurrency`) when a Prefect API URL is configured. Each model request of a
provider whose limit ``llm:<provider>`` exists and is active then holds one slot of it, across
every process on that server (agents and judges). Prefect limits fail open (STACK.md): a
missing name is ignored and an inactive limit is ignored even with ``strict=True``; so the gate
reads each limit before its first use and logs, once, which providers run unlimited. A request
that waits for a slot longer than ``SAY_WAITING_AFTER_SECONDS`` logs what it waits for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from prefect.client.orchestration import get_client
from prefect.concurrency.asyncio import concurrency
from prefect.exceptions import ObjectNotFound
from prefect.logging import get_logger, get_run_logger

from glossogen.concurrency import CallGate, current_gate, install_gate, limit_name

__all__ = ["PrefectCallGate", "install_call_gate", "LEASE_SECONDS", "SAY_WAITING_AFTER_SECONDS"]

LEASE_SECONDS = 60.0
"""Lease of one held slot, renewed while the request runs (the server's minimum is 60 s): a slot
held by a killed process is freed at most this long after the kill."""
SAY_WAITING_AFTER_SECONDS = 2.0
"""A request waiting this long for a slot logs which limit it waits for."""
RECHECK_SECONDS = 60.0
"""How long the gate trusts what it read of a limit (existence, active flag, size)."""


@dataclass(frozen=True)
class LimitState:
    """What the gate knows of one ``llm:<provider>`` limit."""

    name: str
    size: int | None  # None: no such limit
    active: bool
    read_at: float  # time.monotonic() seconds

    @property
    def enforced(self) -> bool:
        """True when the server would enforce the limit (it exists and is active)."""
        return self.size is not None and self.active


def _logger() -> logging.Logger | logging.LoggerAdapter:
    try:
        return get_run_logger()
    except Exception:  # noqa: BLE001 (outside a flow or task run: Prefect's plain logger)
        return get_logger("glossogen.gate")


class PrefectCallGate:
    """A :class:`~glossogen.concurrency.CallGate` taking slots of ``llm:<provider>`` limits."""

    def __init__(self, say_waiting_after: float = SAY_WAITING_AFTER_SECONDS) -> None:
        """Start with nothing read; ``say_waiting_after`` is in seconds."""
        self.say_waiting_after = say_waiting_after
        self._limits: dict[str, LimitState] = {}
        self.waits = 0  # requests that waited past ``say_waiting_after`` (for benches and tests)

    async def limit_state(self, provider: str) -> LimitState:
        """Return the state of ``llm:<provider>``, read from the server at most once a minute."""
        name = limit_name(provider)
        known = self._limits.get(name)
        if known is not None and time.monotonic() - known.read_at < RECHECK_SECONDS:
            return known
        async with get_client() as client:
            try:
                limit = await client.read_global_concurrency_limit_by_name(name)
                state = LimitState(name, limit.limit, bool(limit.active), time.monotonic())
            except ObjectNotFound:
                state = LimitState(name, None, False, time.monotonic())
        if known is None or known.enforced != state.enforced:
            if state.enforced:
                _logger().info("model calls to %s hold a slot of %s (limit %d)", provider,
                               name, state.size)  # fmt: skip
            else:
                why = "does not exist" if state.size is None else "is inactive"
                _logger().warning(
                    "concurrency limit %s %s: calls to %s are not limited "
                    "(create it with `glossogen pools apply`)",
                    name,
                    why,
                    provider,
                )
        self._limits[name] = state
        return state

    def slot(self, provider: str) -> AbstractAsyncContextManager[None]:
        """Hold one slot of ``llm:<provider>`` for one request (no wait when it is not enforced)."""
        return self._slot(provider)

    @asynccontextmanager
    async def _slot(self, provider: str) -> AsyncIterator[None]:
        state = await self.limit_state(provider)
        if not state.enforced:
            yield
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiting = loop.call_later(self.say_waiting_after, self._say_waiting, state)
        try:
            async with concurrency(state.name, occupy=1, strict=True, lease_duration=LEASE_SECONDS):
                waiting.cancel()
                if loop.time() - started >= self.say_waiting_after:
                    _logger().info("got a slot of %s after %.1f s", state.name,
                                   loop.time() - started)  # fmt: skip
                yield
        finally:
            waiting.cancel()

    def _say_waiting(self, state: LimitState) -> None:
        self.waits += 1
        _logger().info(
            "waiting for a slot of %s: all %d are held by other model calls", state.name, state.size
        )


def install_call_gate() -> CallGate:
    """Install a :class:`PrefectCallGate` in this process if a Prefect API URL is configured.

    Idempotent: an installed Prefect gate is kept (it remembers the limits it read). With no
    API URL (the temporary server of a one-off run) the open gate stays. Returns the gate in
    force.
    """
    from prefect.settings import get_current_settings

    gate = current_gate()
    if isinstance(gate, PrefectCallGate) or not get_current_settings().api.url:
        return gate
    gate = PrefectCallGate()
    install_gate(gate)
    return gate
