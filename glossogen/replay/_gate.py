"""A replay task's coroutine whose every step first asks the sequencer, and its refused steps' wait.

The sequencer (:mod:`glossogen.replay._sequencer`) wraps the coroutine of every task a round
starts in a :class:`Gated` (through the event loop's task factory); a step it refuses waits on
a :class:`Turn`, resolved when the log moves on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any

from glossogen.engine import SEAT

if TYPE_CHECKING:
    from glossogen.replay._sequencer import Sequencer


class Turn(asyncio.Future[None]):
    """What a task whose step was refused waits on: its turn, resolved when the log moves.

    A turn that holds a refused cancellation (``holds_cancellation``) is not cancelled by
    another: the task keeps that cancellation (asyncio's task takes it when its turn comes,
    :meth:`asyncio.Task.cancel`), and asks with it again then. Cancelled, it would wake the task
    only to be refused again, and an anyio cancel scope, which cancels each of its tasks
    at every turn of the loop until it ends, would do that for ever.
    """

    holds_cancellation = False

    def cancel(self, msg: Any | None = None) -> bool:
        """Cancel the wait, unless the task's cancellation is already held."""
        if self.holds_cancellation:
            return False
        return super().cancel(msg=msg)


class Gated(Coroutine[Any, Any, Any]):
    """A task's coroutine whose every step first asks the :class:`Sequencer`.

    The task drives it as it drives any coroutine (``send``/``throw``); a step the sequencer
    refuses yields a future that resolves when the log moves on, and is asked again then.
    """

    def __init__(self, inner: Coroutine[Any, Any, Any], sequencer: Sequencer) -> None:
        self._inner = inner
        self._sequencer = sequencer
        self.__qualname__ = getattr(inner, "__qualname__", type(inner).__name__)
        self.__name__ = getattr(inner, "__name__", self.__qualname__)
        self.held: BaseException | None = None
        """The cancellation (or error) its refused step was to receive, kept for its turn."""
        self._gate: asyncio.Future[None] | None = None
        self.cancelled = False
        """True once a cancellation reached the coroutine (it then goes on unasked)."""
        self.seat: str | None = None
        """The seat whose task this is (:data:`~glossogen.engine.SEAT`), once it first steps."""

    @property
    def due(self) -> bool:
        """Whether the step it waits to take is a plain one (no cancellation, no error)."""
        return self._gate is not None and self.held is None and not self.cancelled

    def send(self, value: Any) -> Any:
        if self._gate is not None:  # the gate's future resolved: ask again
            self._gate = None
            return self._step(self.held)
        return self._step(None)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:  # noqa: ARG002
        exc = typ if isinstance(typ, BaseException) else typ(val)
        if self._gate is not None:  # cancelled (or the gate's future failed) while waiting
            self._gate = None
        return self._step(exc)

    def close(self) -> None:
        self._inner.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._inner.__await__()

    def _step(self, exc: BaseException | None) -> Any:
        sequencer = self._sequencer
        self.seat = SEAT.get()
        if not sequencer.may_step(self, exc):
            self.held = exc
            gate = sequencer.wait_turn(self)
            self._gate = gate
            gate._asyncio_future_blocking = True  # what a task awaits it on (Future.__await__)
            return gate
        sequencer.stepped(self)
        self.held = None
        if exc is None:
            return self._inner.send(None)
        if isinstance(exc, asyncio.CancelledError):
            self.cancelled = True
        return self._inner.throw(exc)


__all__ = ["Gated", "Turn"]
