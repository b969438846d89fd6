"""The call gate at the HTTP transport: a provider slot held only while a request is on the wire.

A model request first builds its HTTP request (the SDK walks the whole message history), then
sends it and reads the answer, then turns the answer into a ``ModelResponse``. Only the middle
part uses the provider's capacity. :class:`GatedTransport` wraps the transport of the SDK's HTTP
client and holds one slot of the process's call gate (:mod:`glossogen.concurrency`) per HTTP
request: from sending it until the last byte of the answer is read. The answer is read in full
inside the slot (a streamed answer too) and handed on from memory, so the slot goes back as soon
as the provider is done, not when a busy event loop gets round to parsing each chunk.

An HTTP request that fails or is cancelled after it was sent leaves its slot through the gate's
failure path (released through the server, not handed on); an SDK retry asks for a slot again.
"""

from __future__ import annotations

from typing import Any

import httpx2

from glossogen.concurrency import current_gate

__all__ = ["GatedTransport", "gate_http_client"]


class GatedTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport whose every request holds a slot of ``provider``'s limit."""

    def __init__(self, wrapped: httpx2.AsyncBaseTransport, provider: str) -> None:
        """Send through ``wrapped``; take slots of ``llm:<provider>`` from the current gate."""
        self.wrapped = wrapped
        self.provider = provider
        self.asked = 0  # requests that asked for a slot, built and ready to send (for tests)
        self.sent = 0  # requests sent holding a slot (for benches and tests)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` and read its whole answer while holding one slot."""
        self.asked += 1
        async with current_gate().slot(self.provider):
            self.sent += 1
            response = await self.wrapped.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx2.ByteStream(body),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the wrapped transport (its connection pool)."""
        await self.wrapped.aclose()


def gate_http_client(client: Any, provider: str) -> bool:
    """Make every request of ``client`` (an ``httpx2.AsyncClient``) hold a slot of ``provider``.

    Wraps the client's transport and its proxy transports in place, so what the client was built
    with (timeouts, pool limits, proxies from the environment, event hooks) stays as it was.
    Returns False, changing nothing, when ``client`` is not an ``httpx2`` client of the layout
    this knows (the caller then gates the whole model request instead).
    """
    transport = getattr(client, "_transport", None)
    mounts = getattr(client, "_mounts", None)
    if not isinstance(transport, httpx2.AsyncBaseTransport) or not isinstance(mounts, dict):
        return False
    client._transport = GatedTransport(transport, provider)
    for pattern, mounted in mounts.items():
        if isinstance(mounted, httpx2.AsyncBaseTransport):
            mounts[pattern] = GatedTransport(mounted, provider)
    return True
