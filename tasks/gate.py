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
from uuid import UUID

import httpx
from prefect.client.orchestration import PrefectClient, get_client
from prefect.exceptions import ObjectNotFound
from prefect.logging import get_logger, get_run_logger

from glossogen.concurrency import CallGate, current_gate, install_gate, limit_name

__all__ = ["PrefectCallGate", "install_call_gate", "LEASE_SECONDS", "SAY_WAITING_AFTER_SECONDS"]

LEASE_SECONDS = 60.0
"""Lease of one held slot, renewed while the request runs (the server's minimum is 60 s): a slot
held by a killed process is freed at most this long after the kill."""
SAY_WAITING_AFTER_SECONDS = 2.0
"""A request waiting this long for a slot logs which limit it waits for."""
HANDOFF_SECONDS = 10.0
"""How long a slot taken from the server may pass from one request of this process to the next
before it goes back to the server (so processes share a limit by turns)."""
MAX_POLL_SECONDS = 1.0
"""Longest wait between two asks for a slot another process holds (the server suggests one)."""
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


@dataclass
class Lease:
    """One slot of a limit held from the server, and when its lease was last set (monotonic s)."""

    lease_id: UUID
    acquired_at: float
    renewed_at: float


class SlotPool:
    """This process's slots of one limit: a local queue in front of the server's limit.

    Requests beyond the limit's size wait in an ``asyncio.Semaphore`` (in order, no polling).
    A request that finishes while another of this process waits hands its slot over directly
    (no release and re-acquire round trip), for at most ``HANDOFF_SECONDS`` after the slot was
    taken from the server, so other processes get their turn; otherwise the slot goes back to
    the server. The process never holds more slots than it has requests in flight.
    """

    def __init__(self, name: str, size: int) -> None:
        """Queue for ``name`` (a limit of ``size`` slots)."""
        self.name = name
        self.queue = asyncio.Semaphore(size)
        self.idle: list[Lease] = []
        self.waiting = 0

    @asynccontextmanager
    async def slot(self, client: PrefectClient) -> AsyncIterator[None]:
        """Hold one slot (from a finished request of this process, or from the server)."""
        self.waiting += 1
        try:
            await self.queue.acquire()
        finally:
            self.waiting -= 1
        try:
            lease = self._handed_over() or await _acquire(client, self.name)
            renewing = asyncio.create_task(_renew(client, lease)) if lease else None
            try:
                yield
            finally:
                if renewing is not None:
                    renewing.cancel()
                if lease is not None:
                    fresh = time.monotonic() - lease.acquired_at < HANDOFF_SECONDS
                    if self.waiting and fresh:
                        self.idle.append(lease)
                    else:
                        await asyncio.shield(
                            client.release_concurrency_slots_with_lease(lease.lease_id)
                        )
        finally:
            self.queue.release()

    def _handed_over(self) -> Lease | None:
        """A slot a finished request left for this one, if its lease is surely still alive.

        A slot left behind by a waiter that was cancelled meanwhile is dropped once it is older
        than half a lease (the server frees it when the lease ends).
        """
        while self.idle:
            lease = self.idle.pop()
            if time.monotonic() - lease.renewed_at < LEASE_SECONDS / 2:
                return lease
        return None


class PrefectCallGate:
    """A :class:`~glossogen.concurrency.CallGate` taking slots of ``llm:<provider>`` limits."""

    def __init__(self, say_waiting_after: float = SAY_WAITING_AFTER_SECONDS) -> None:
        """Start with nothing read; ``say_waiting_after`` is in seconds."""
        self.say_waiting_after = say_waiting_after
        self._limits: dict[str, LimitState] = {}
        self._pools: dict[tuple[str, int, int], SlotPool] = {}
        self._clients: dict[int, PrefectClient] = {}
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

    def _pool(self, state: LimitState) -> SlotPool:
        key = (state.name, state.size or 1, id(asyncio.get_running_loop()))
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = SlotPool(state.name, state.size or 1)
        return pool

    async def _client(self) -> PrefectClient:
        """One open API client per event loop (opening one costs more than a slot)."""
        key = id(asyncio.get_running_loop())
        client = self._clients.get(key)
        if client is None:
            client = await get_client().__aenter__()
            self._clients[key] = client
        return client

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
            async with self._pool(state).slot(await self._client()):
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
            "waiting for a slot of %s: all %d are held by model calls", state.name, state.size
        )


async def _acquire(client: PrefectClient, name: str) -> Lease | None:
    """Take one slot of ``name`` with a lease; wait while the server answers 423 (all held).

    We call the client's lease endpoints directly rather than ``prefect.concurrency``'s
    ``concurrency()``: on this machine that helper costs about 300 ms per acquire and release
    (a queue thread, a lease-renewal thread and events per call) against about 18 ms for the
    two requests themselves (measured: bench/sweep_throughput.py). Returns None when the limit
    vanished meanwhile (nothing held, nothing to release).
    """
    while True:
        try:
            response = await client.increment_concurrency_slots_with_lease(
                names=[name], slots=1, mode="concurrency", lease_duration=LEASE_SECONDS
            )
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 423:
                raise
            retry_after = float(exc.response.headers.get("Retry-After", 1.0))
            await asyncio.sleep(min(retry_after, MAX_POLL_SECONDS))
            continue
        body = response.json()
        if not body.get("limits"):
            return None
        now = time.monotonic()
        return Lease(UUID(body["lease_id"]), now, now)


async def _renew(client: PrefectClient, lease: Lease) -> None:
    """Renew the lease every half lease while a request holds it (long model calls)."""
    while True:
        await asyncio.sleep(max(0.0, lease.renewed_at + LEASE_SECONDS / 2 - time.monotonic()))
        try:
            await client.renew_concurrency_lease(lease.lease_id, LEASE_SECONDS)
            lease.renewed_at = time.monotonic()
        except httpx.HTTPError as exc:  # the slot may be lost: say so, let the call finish
            _logger().warning("could not renew a lease of a model call slot: %s", exc)
            lease.renewed_at = time.monotonic()


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
