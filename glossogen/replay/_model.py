"""The ``replay`` provider: a pydantic-ai model that answers each call from a run's tape.

One :class:`ReplayModel` plays one seat (or the judge): its n-th request gets the n-th call
of that seat on the tape (:class:`~glossogen.eventlog.Tape`), as the recorded run got it: the
same parts (text, thinking, tool calls with their ids and arguments), the same token usage
(so the run's own pricing logs the same cost), or the same failure (an exception of the
recorded kind whose text is the recorded error). No network, no key, nothing billed.

A scripted seat's recorded answers came after the scenario's ``scripted_latency_seconds`` on
the game clock; its replay waits as long (``pause``), so the seats interleave as they did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from glossogen.engine._faults import _KINDS  # noqa: PLC2701 (the one map of failure kinds)
from glossogen.eventlog import TOKEN_FIELDS, Tape, TapeCall


class TapeExhausted(RuntimeError):
    """The replayed seat made a call the recorded run did not make."""


def _failure(call: TapeCall) -> BaseException:
    """An exception of the recorded kind whose text is the recorded error.

    :func:`~glossogen.engine._faults.classify` files it under the recorded kind, and
    ``f"{type(exc).__name__}: {exc}"`` is the recorded error text.
    """
    name, _, text = (call.error or "").partition(": ")
    base: type[BaseException] = RuntimeError
    for cls, kind, _retryable in _KINDS:
        if kind == call.error_kind:
            base = cls
            break

    def init(self: BaseException, message: str) -> None:
        BaseException.__init__(self, message)
        # attr-defined: the SDKs' errors carry .message, which the classifier reads; a class
        # made at run time by type() has no declared attribute for mypy to see
        self.message = message  # type: ignore[attr-defined]

    def text_of(self: BaseException) -> str:
        return str(self.args[0])

    replayed = type(name or base.__name__, (base,), {"__init__": init, "__str__": text_of})
    return replayed(text)


def response_of(call: TapeCall) -> ModelResponse:
    """The answer ``call`` recorded, as a pydantic-ai response."""
    parts: list[Any] = []
    if call.thinking:
        parts.append(ThinkingPart(call.thinking))
    if call.text or not call.tool_calls:
        parts.append(TextPart(call.text))
    for tool_call in call.tool_calls:
        parts.append(
            ToolCallPart(
                tool_call["tool_name"], tool_call["args"], tool_call_id=tool_call["tool_call_id"]
            )
        )
    return ModelResponse(parts=parts, model_name=call.model, usage=_usage(call))


def _usage(call: TapeCall) -> RequestUsage:
    """The call's logged token counts as pydantic-ai's usage (priced again as they were)."""
    return RequestUsage(**{name: getattr(call.tokens, name) for name in TOKEN_FIELDS})


def _ruling_answer(call: TapeCall, info: AgentInfo, made: int) -> ModelResponse:
    """The judge's answer, rebuilt from its logged ruling as a call of its output tool.

    ``judge_called`` logs the ruling, not the raw output: the arguments are the output
    schema's fields, read from the ruling (``success``, ``reason``) and its ``detail``.
    """
    ruling = call.ruling or {}
    known = {**ruling.get("detail", {}), **ruling}
    tool = info.output_tools[0]
    fields = tool.parameters_json_schema.get("properties", {})
    args = {name: known[name] for name in fields if name in known}
    part = ToolCallPart(tool.name, args, tool_call_id=f"judge-{made}")
    return ModelResponse(parts=[part], model_name=call.model, usage=_usage(call))


STALL_YIELDS = 200
"""How many turns of the event loop in a row an answer waits for its place with no new event
logged before it is handed over anyway (a replay that diverged may never reach its place)."""


class Pacing:
    """What a replay's answers wait on: the run's clock, and how many events its log holds.

    Set once the replay's session is open (:meth:`bind`); each process of a resumed run binds
    anew.
    """

    def __init__(self) -> None:
        self.pause: Callable[[float], Awaitable[None]] | None = None
        self.logged: Callable[[], int] = lambda: 0
        self.calls: dict[str, int] = {}
        """Each seat's calls made so far: its next call is answered with the tape's next one.
        A replay of a run stopped mid-round sets it anew at each resume from the replay's
        log (a call the stop cut off before its answer was logged is not on the tape)."""

    def bind(self, pause: Callable[[float], Awaitable[None]], logged: Callable[[], int]) -> None:
        """Wait on ``pause`` (the game clock) and count the log's events with ``logged``."""
        self.pause, self.logged = pause, logged

    async def in_turn(self, line: int) -> None:
        """Return once the log holds ``line`` events: the answer's event is the next one.

        An answer is handed over where the recorded run got it, between the same two events,
        so the seats interleave as they did (over HTTP, who was answered first is the
        network's doing). Turns of the event loop, not time, bound the wait.
        """
        stalled, seen = 0, self.logged()
        while seen < line and stalled < STALL_YIELDS:
            await asyncio.sleep(0)
            now = self.logged()
            stalled, seen = (stalled + 1, now) if now == seen else (0, now)


def replay_model(
    tape: Tape,
    seat: str,
    model_name: str,
    pacing: Pacing,
    latency: float = 0.0,
    paced: bool = True,
) -> FunctionModel:
    """Return the replay model of ``seat``, paced by ``pacing`` when ``paced``.

    A seat on this machine (scripted, local) is not paced: its answers came on the game
    clock's turn (a scripted seat's after ``latency``), which the replay plays again as is.

    pydantic-ai's ``FunctionModel`` is the ``Model`` subclass that takes an answer function;
    the function here reads the tape (kept over a hand-written ``Model``: the request path,
    usage and streaming are pydantic-ai's own).
    """

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = pacing.calls[seat] = pacing.calls.get(seat, 0) + 1
        call = tape.call(seat, made)
        if latency and pacing.pause is not None:
            await pacing.pause(latency)
        if call is not None and paced:
            await pacing.in_turn(call.line)
        if call is None:
            raise TapeExhausted(f"{seat} made call {made}; the recorded run made {made - 1}")
        if call.outcome == "failed" or (call.outcome == "abandoned" and not call.answered):
            raise _failure(call)
        if call.outcome == "ruled":
            return _ruling_answer(call, info, made)
        return response_of(call)

    return FunctionModel(answer, model_name=model_name)


__all__ = ["Pacing", "TapeExhausted", "replay_model", "response_of"]
