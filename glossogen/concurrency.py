"""A process-wide gate around every model request: where a provider's concurrency limit plugs in.

The library imports no Prefect (docs/architecture.md), so it only declares the hook: a
:class:`CallGate` gives out one slot per model request for a provider, and the default gate
gives slots freely. The orchestration layer (``orchestration/gate.py``) installs a gate backed by
Prefect's global concurrency limit ``llm:<provider>`` when a server is configured and the limit
exists and is active. :func:`glossogen.models.build_model` wraps each hosted model in a
:class:`GatedModel`, so agents and judges in any process take a slot per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

__all__ = [
    "CallGate",
    "GatedModel",
    "OpenGate",
    "current_gate",
    "install_gate",
    "limit_name",
]


def limit_name(provider: str) -> str:
    """Return the name of ``provider``'s global concurrency limit: ``llm:<provider>``."""
    return f"llm:{provider}"


class CallGate(Protocol):
    """Hands out one slot of a provider's capacity for the length of one model request."""

    def slot(self, provider: str) -> AbstractAsyncContextManager[None]:
        """Return an async context manager held while one request to ``provider`` is in flight.

        Entering it may wait (another request holds the last slot); leaving it frees the slot,
        also when the request raised.
        """
        ...

    async def release_idle(self) -> None:
        """Give back at once any slot kept idle for a next request (a run ends)."""
        ...


class OpenGate:
    """The default gate: every request goes at once (no limit configured)."""

    @asynccontextmanager
    async def _free(self) -> AsyncIterator[None]:
        yield

    def slot(self, provider: str) -> AbstractAsyncContextManager[None]:
        """Return a context manager that never waits."""
        return self._free()

    async def release_idle(self) -> None:
        """Nothing is ever held."""


_gate: CallGate = OpenGate()
_NO_SLOT = OpenGate()._free


def current_gate() -> CallGate:
    """Return the gate model requests of this process go through."""
    return _gate


def install_gate(gate: CallGate | None) -> CallGate:
    """Make ``gate`` the process-wide gate (``None`` restores the open gate); return the old one."""
    global _gate
    previous, _gate = _gate, gate or OpenGate()
    return previous


class GatedModel(WrapperModel):
    """A pydantic-ai model whose every request (plain or streamed) holds a slot of its provider.

    The gate is looked up per request, so a gate installed after the agent was built applies.
    With ``at_transport``, the wrapped model's own HTTP client takes the slot for each HTTP
    request it sends (:mod:`glossogen.gated_transport`: the slot is not held while the request
    is built or its answer parsed), and this wrapper takes none.
    """

    def __init__(self, wrapped: Model, provider: str, at_transport: bool = False) -> None:
        """Wrap ``wrapped``, a model of ``provider`` (the name of its limit: ``llm:<provider>``)."""
        super().__init__(wrapped)
        self.gate_provider = provider
        self.at_transport = at_transport

    def _slot(self) -> AbstractAsyncContextManager[None]:
        if self.at_transport:
            return _NO_SLOT()
        return current_gate().slot(self.gate_provider)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send one request once a slot is free."""
        async with self._slot():
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Stream one response, holding the slot until the stream is closed."""
        async with (
            self._slot(),
            self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream,
        ):
            yield stream
