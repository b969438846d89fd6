"""The ``llm:<provider>`` call gate: Prefect global concurrency limits around every model request.

:func:`install_call_gate` puts a :class:`PrefectCallGate` behind the library's hook
(:mod:`glossogen.concurrency`) when a Prefect API URL is configured. Each model request of a
provider whose limit ``llm:<provider>`` exists and is active then holds one slot of it, across
every process on that server (agents and judges). Prefect limits fail open: a
missing name is ignored and an inactive limit is ignored even with ``strict=True``; so the gate
reads each limit before its first use and logs, once, which providers run unlimited. A request
that waits for a slot longer than ``SAY_WAITING_AFTER_SECONDS`` logs what it waits for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

import httpx
from prefect.client.orchestration import PrefectClient, get_client
from prefect.exceptions import ObjectNotFound
from prefect.logging import get_logger, get_run_logger

from glossogen.concurrency import CallGate, current_gate, install_gate, limit_name
from orchestration.busy import ask_while_busy

T = TypeVar("T")

__all__ = ["PrefectCallGate", "install_call_gate", "LEASE_SECONDS", "SAY_WAITING_AFTER_SECONDS"]

LEASE_SECONDS = 60.0
"""Lease of one held slot, renewed while the request runs (the server's minimum is 60 s): a slot
held by a killed process is freed at most this long after the kill."""
SAY_WAITING_AFTER_SECONDS = 2.0
"""A request waiting this long for a slot logs which limit it waits for."""
HANDOFF_SECONDS = 10.0
"""How long a slot taken from the server may pass from one request of this process to the next
before it goes back to the server (so processes share a limit by turns)."""
LINGER_SECONDS = 0.5
"""How long a finished request's slot waits, idle, for the next request of this process before it
goes back to the server (the most a slot stays idle while another process may want it)."""
MAX_POLL_SECONDS = 1.0
"""Longest wait between two asks for a slot another process holds (the server suggests one)."""
BUSY_RETRY_SECONDS = 60.0
"""How long a gate request is asked again while the server answers 503 (busy) before it fails."""
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
    A finished request's slot is kept for the next request of this process instead of going
    back to the server, for at most ``HANDOFF_SECONDS`` after it was taken from the server (so
    other processes get their turn): handed straight to a waiting request, else kept idle for
    ``LINGER_SECONDS`` (an agent's next turn usually comes sooner) and then released: on a
    busy server a round trip per request costs as much as the model call it guards. The
    process never holds more slots than its requests in flight plus the idle ones; a loop
    that ends releases its idle slots on the way out.
    """

    def __init__(
        self,
        name: str,
        size: int,
        client: PrefectClient,
        linger: float = LINGER_SECONDS,
        turn: float = HANDOFF_SECONDS,
    ) -> None:
        """Queue for ``name`` (a limit of ``size`` slots), talking to the server with ``client``.

        ``linger``: seconds an idle slot waits for the next request before it is released;
        ``turn``: seconds a slot taken from the server is passed on in this process.
        """
        self.name = name
        self.client = client
        self.linger = linger
        self.turn = turn
        self.queue = asyncio.Semaphore(size)
        self.idle: list[tuple[Lease, asyncio.Task[None]]] = []
        self.waiting = 0
        self.in_flight = 0
        self.releasing: set[asyncio.Future[None]] = set()  # releases of this pool on the wire
        # Releases of slots whose turn ended, each owed to the request the slot was handed on
        # to (the next one out of ``queue``): it asks the server once that release has landed.
        self.turned: list[asyncio.Future[None]] = []
        self.taken = 0  # slots taken from the server (for benches and tests)
        self.refused = 0  # asks the server refused (423: all held)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot (from a finished request of this process, or from the server)."""
        self.waiting += 1
        try:
            await self.queue.acquire()
        finally:
            self.waiting -= 1
        try:
            self.in_flight += 1
            try:
                lease = self._take_idle()
                if lease is None and self.turned:
                    # The slot handed on to this request ended its turn: its release is on the
                    # wire. Asking before it lands would be refused (423) and wait a poll
                    # interval; waiting for the other slots' releases too would keep this one
                    # idle for the slowest of them.
                    await asyncio.wait({self.turned.pop(0)})
                elif lease is None and self.releasing:
                    # A slot this process is giving back is still held on the server: asking
                    # now would be refused (423) and wait a poll interval while it comes free.
                    await asyncio.wait(set(self.releasing))
                if lease is None:
                    lease = await _acquire(self.client, self.name, self._count_refusal)
                    self.taken += lease is not None
            except BaseException:  # refused or cancelled while asking: nothing is in flight
                self.in_flight -= 1
                raise
            renewing = asyncio.create_task(_renew(self.client, lease)) if lease else None
            done = False
            try:
                yield
                done = True
            finally:
                self.in_flight -= 1
                if renewing is not None:
                    renewing.cancel()
                if lease is not None and done:
                    self._put_back(lease)
                elif lease is not None:
                    # A cancelled or failed request may still be in the provider's hands for a
                    # moment: its slot goes back through the server rather than straight on.
                    await asyncio.shield(self._release(lease))
        finally:
            self.queue.release()

    def _put_back(self, lease: Lease) -> None:
        """Keep a finished request's slot for this process while it is fresh, else release it.

        A slot whose turn ended goes back to the server without holding up the request that
        finished with it; a request waiting in this process asks the server again once that
        release has landed (``turned``).
        """
        if time.monotonic() - lease.acquired_at < self.turn:
            self.idle.append((lease, asyncio.create_task(self._release_later(lease))))
        elif self.waiting:
            self.turned.append(self._release(lease))
        else:
            self._release(lease)

    def _count_refusal(self) -> None:
        self.refused += 1

    def _take_idle(self) -> Lease | None:
        """An idle slot whose lease is surely still alive (at most half a lease since renewed)."""
        while self.idle:
            lease, releasing = self.idle.pop()
            releasing.cancel()
            if time.monotonic() - lease.renewed_at < LEASE_SECONDS / 2:
                return lease
        return None

    async def _release_later(self, lease: Lease) -> None:
        """Release an idle slot nobody took within ``linger`` seconds, or when the loop ends."""
        try:
            await asyncio.sleep(self.linger)
        finally:
            if any(held is lease for held, _ in self.idle):
                self.idle = [(held, task) for held, task in self.idle if held is not lease]
                await asyncio.shield(self._release(lease))

    async def release_idle(self) -> None:
        """Release every idle slot now, unless a request of this process is in flight or waits.

        The end of a run calls it, so a process that exits right after its last model call
        does not keep a slot from other processes until the lease ends. It also waits for the
        releases already on the wire (an idle slot whose linger ran out): an event loop that
        ends cancels every task, a release's too, and a slot whose release was cut off stays
        held on the server until its lease ends (``LEASE_SECONDS``), a slot fewer for every
        process sharing the limit.
        """
        if self.in_flight or self.waiting:
            return
        sent = set(self.releasing)
        idle, self.idle = self.idle, []
        for _, releasing in idle:
            releasing.cancel()
        await asyncio.gather(*(self._release(lease) for lease, _ in idle))
        if sent:
            await asyncio.wait(sent)

    def _release(self, lease: Lease) -> asyncio.Future[None]:
        """Give ``lease`` back to the server (a task, in ``releasing`` from this call on).

        A request of this pool that asks the server meanwhile waits for it, and so does
        :meth:`release_idle`.
        """
        sending = asyncio.ensure_future(self._send_release(lease))
        self.releasing.add(sending)
        sending.add_done_callback(self.releasing.discard)
        return sending

    async def _send_release(self, lease: Lease) -> None:
        try:
            await _without_backoff(
                self.client.release_concurrency_slots_with_lease, lease_id=lease.lease_id
            )
        except httpx.HTTPError as exc:  # the server frees it when the lease ends (LEASE_SECONDS)
            _logger().warning("could not release a model call slot of %s: %s", self.name, exc)


class PrefectCallGate:
    """A :class:`~glossogen.concurrency.CallGate` taking slots of ``llm:<provider>`` limits."""

    def __init__(
        self,
        say_waiting_after: float = SAY_WAITING_AFTER_SECONDS,
        linger_seconds: float = LINGER_SECONDS,
        turn_seconds: float = HANDOFF_SECONDS,
    ) -> None:
        """Start with nothing read.

        ``say_waiting_after``, ``linger_seconds`` (``LINGER_SECONDS``) and ``turn_seconds``
        (``HANDOFF_SECONDS``: how long a slot taken from the server passes from request to
        request of this process) are in seconds.
        """
        self.say_waiting_after = say_waiting_after
        self.linger_seconds = linger_seconds
        self.turn_seconds = turn_seconds
        self._limits: dict[str, LimitState] = {}
        self._pools: dict[tuple[str, int, int], SlotPool] = {}
        self._clients: dict[int, asyncio.Future[PrefectClient]] = {}
        self._reading: dict[tuple[str, int], asyncio.Future[LimitState]] = {}
        self.waits = 0  # requests that waited past ``say_waiting_after`` (for benches and tests)

    async def limit_state(self, provider: str) -> LimitState:
        """Return the state of ``llm:<provider>``, read from the server at most once a minute."""
        name = limit_name(provider)
        known = self._limits.get(name)
        if known is not None and time.monotonic() - known.read_at < RECHECK_SECONDS:
            return known
        # Calls that come while it is read wait for the same read (a sweep's first calls come
        # together: one read and one log line, not one each).
        key = (name, id(asyncio.get_running_loop()))
        reading = self._reading.get(key)
        if reading is None:
            reading = self._reading[key] = asyncio.ensure_future(self._read_limit(name, known))
            reading.add_done_callback(lambda done: _forget(self._reading, key, done, always=True))
        return await asyncio.shield(reading)

    async def _read_limit(self, name: str, known: LimitState | None) -> LimitState:
        """Read ``name`` from the server, log a change of whether it is enforced, keep it."""
        provider = name.removeprefix("llm:")
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

    async def _pool(self, state: LimitState) -> SlotPool:
        """This loop's one pool of ``state``'s limit.

        Many first calls come at once (a sweep starts its runs together): whichever finishes
        opening the client first makes the pool, and every other call gets that same pool. A
        second pool would be a second local queue of the full size, whose calls ask the server
        for slots the first holds and poll while those sit idle in the first's hands.
        """
        key = (state.name, state.size or 1, id(asyncio.get_running_loop()))
        pool = self._pools.get(key)
        if pool is None:
            client = await self._client()
            pool = self._pools.setdefault(
                key,
                SlotPool(
                    state.name, state.size or 1, client, self.linger_seconds, self.turn_seconds
                ),
            )
        return pool

    async def _client(self) -> PrefectClient:
        """One open API client per event loop (opening one costs more than a slot).

        Calls that come while it opens wait for the same opening (shielded: a cancelled call
        does not cancel it for the others).
        """
        key = id(asyncio.get_running_loop())
        opening = self._clients.get(key)
        if opening is None:
            opening = self._clients[key] = asyncio.ensure_future(get_client().__aenter__())
            opening.add_done_callback(lambda done: _forget(self._clients, key, done))
        return await asyncio.shield(opening)

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
            async with (await self._pool(state)).slot():
                waiting.cancel()
                if loop.time() - started >= self.say_waiting_after:
                    _logger().info("got a slot of %s after %.1f s", state.name,
                                   loop.time() - started)  # fmt: skip
                yield
        finally:
            waiting.cancel()

    def server_asks(self) -> tuple[int, int]:
        """Over its pools: slots taken from the server, asks it refused (423, all held)."""
        pools = self._pools.values()
        return sum(p.taken for p in pools), sum(p.refused for p in pools)

    async def release_idle(self) -> None:
        """Give back the idle slots of this loop's pools that no request uses or waits for."""
        loop = id(asyncio.get_running_loop())
        await asyncio.gather(*(p.release_idle() for k, p in self._pools.items() if k[2] == loop))

    def _say_waiting(self, state: LimitState) -> None:
        self.waits += 1
        _logger().info(
            "waiting for a slot of %s: all %d are held by model calls", state.name, state.size
        )


def _forget(
    shared: dict[Any, Any], key: Any, done: asyncio.Future[Any], always: bool = False
) -> None:
    """A done-callback of a shared future: drop it from ``shared`` when it failed (or ``always``).

    Its exception is read here, so one whose every waiter was cancelled is not reported as
    never retrieved; the next call starts afresh.
    """
    failed = done.cancelled() or done.exception() is not None
    if always or failed:
        shared.pop(key, None)


async def _acquire(
    client: PrefectClient, name: str, refused: Callable[[], None] | None = None
) -> Lease | None:
    """Take one slot of ``name`` with a lease; wait while the server answers 423 (all held).

    We call the client's lease endpoints directly rather than ``prefect.concurrency``'s
    ``concurrency()``: that helper starts a queue thread, a lease-renewal thread and events on
    every acquire and release, where the two requests are all a slot needs. Returns None when
    the limit vanished meanwhile (nothing held, nothing to release). ``refused`` is called
    on each 423.
    """
    while True:
        asking = asyncio.ensure_future(
            _without_backoff(
                client.increment_concurrency_slots_with_lease,
                names=[name],
                slots=1,
                mode="concurrency",
                lease_duration=LEASE_SECONDS,
            )
        )
        try:
            # Shielded: a call cancelled while its ask is on the wire (a round that ends) would
            # otherwise leave the slot the server grants held by nobody until its lease ends.
            response = await asyncio.shield(asking)
        except asyncio.CancelledError:
            asking.add_done_callback(lambda done: _give_back(client, done))
            raise
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 423:
                raise
            if refused is not None:
                refused()
            retry_after = float(exc.response.headers.get("Retry-After", 1.0))
            await asyncio.sleep(min(retry_after, MAX_POLL_SECONDS))
            continue
        body = response.json()
        if not body.get("limits"):
            return None
        now = time.monotonic()
        return Lease(UUID(body["lease_id"]), now, now)


async def _without_backoff(call: Callable[..., Awaitable[T]], **kwargs: Any) -> T:
    """Make one gate request, asking again soon (not after 2, 4, 8, 16 s) while the server is busy.

    Measured on a 40-run sweep, slot requests waited 2, 6, 14 and 30 s in the client's own
    backoff while slots sat free. Here a 503 is asked again after a jittered
    50-``MAX_POLL_SECONDS`` ms, for up to ``BUSY_RETRY_SECONDS``
    (:func:`orchestration.busy.ask_while_busy`); other errors pass through.
    """
    return await ask_while_busy(
        call, statuses={503}, seconds=BUSY_RETRY_SECONDS, longest_wait=MAX_POLL_SECONDS, **kwargs
    )


_GIVING_BACK: set[asyncio.Task[Any]] = set()


def _give_back(client: PrefectClient, asked: asyncio.Future[Any]) -> None:
    """Release the slot an abandoned ask was granted (a done-callback; nothing if refused)."""
    if asked.cancelled() or asked.exception() is not None:
        return
    body = asked.result().json()
    if body.get("limits"):
        task = asyncio.ensure_future(
            _without_backoff(
                client.release_concurrency_slots_with_lease, lease_id=UUID(body["lease_id"])
            )
        )
        _GIVING_BACK.add(task)
        task.add_done_callback(_GIVING_BACK.discard)


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
