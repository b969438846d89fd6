"""The ``replay`` provider: a pydantic-ai model that answers each call from a run's tape.

One :class:`ReplayModel` plays one seat (or the judge): its n-th request gets the n-th call
of that seat on the tape (:class:`~glossogen.eventlog.Tape`), as the recorded run got it: the
same parts (text, thinking, tool calls with their ids and arguments), the same token usage
(so the run's own pricing logs the same cost), or the same failure (an exception of the
recorded kind whose text is the recorded error). No network, no key, nothing billed.

A scripted seat's recorded answers came after the scenario's ``scripted_latency_seconds`` on
the game clock; its replay waits as long (``pause``). Every answer is handed over at once: the
seats take it up in the recorded order by the replay's sequencer
(:mod:`glossogen.replay._sequencer`).
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
from glossogen.engine._requests import sending
from glossogen.eventlog import TOKEN_FIELDS, Tape, TapeCall
from glossogen.rejudge._cache import JudgeCache


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


class Pacing:
    """What a replay's answers wait on: the run's clock (a scripted seat's latency).

    Set once the replay's session is open (:meth:`bind`); each process of a resumed run binds
    anew. Where each answer is taken up is the sequencer's doing
    (:mod:`glossogen.replay._sequencer`): the seats step in the recorded order.
    """

    def __init__(self) -> None:
        self.pause: Callable[[float], Awaitable[None]] | None = None
        self.reached: Callable[[int, Callable[[], bool]], Awaitable[None]] | None = None
        """Waits until the replay's log holds as many events as the record's did and a
        condition holds (the sequencer's :meth:`~glossogen.replay._sequencer.Sequencer.reached`)."""
        self.place: Callable[[TapeCall], int] = lambda call: call.line
        """Where in the recorded log the event that settled a call sits."""

        self.calls: dict[str, int] = {}
        """Each seat's calls made so far: its next call is answered with the tape's next one.
        A replay of a run stopped mid-round sets it anew at each resume from the replay's
        log (a call the stop cut off before its answer was logged is not on the tape)."""
        self.ordered = False
        """Whether the seats step in the recorded order (the sequencer orders this process):
        an unbilled seat's answer then waits for its place in the log (:func:`replay_model`)."""

    def bind(
        self,
        pause: Callable[[float], Awaitable[None]],
        reached: Callable[[int, Callable[[], bool]], Awaitable[None]] | None = None,
    ) -> None:
        """Wait on ``pause`` (the game clock) and ``reached`` (a place in the log)."""
        self.pause = pause
        self.reached = reached


def _always() -> bool:
    return True


async def _abandoned(call: TapeCall, pacing: Pacing) -> None:
    """Wait, for a call the record logged abandoned, until it ended in the record.

    A phase end (or a stop) cut its asker off and the ledger logged the request when it ended:
    answered, or failed, once the log held the events before it. Handed over at once, the
    replay's ledger would log it earlier. One the record gave up on unanswered (its cost
    unknown) never answers: the run's end gives it up again.
    """
    sent = sending()  # the ledger's request: its asker's end hands it over (``watched``)
    if pacing.reached is not None:
        await pacing.reached(pacing.place(call), lambda: sent is None or sent.watched)
    if not call.answered and call.cost_usd is None:
        await asyncio.Event().wait()  # given up at the run's end: cancelled there, as it was


def replay_model(
    tape: Tape,
    seat: str,
    model_name: str,
    pacing: Pacing,
    latency: float = 0.0,
    unbilled: bool = False,
) -> FunctionModel:
    """Return the replay model of ``seat``: each call answered at once from ``tape``.

    A scripted seat's answer waits ``latency`` on the game clock first, as it did. An
    ``unbilled`` seat's (scripted, local) logs nothing until its answer came: one a phase end
    or a stop cut off before it did is on no tape. So where the seats step in the recorded
    order (``Pacing.ordered``), its answer waits until the replay's log holds what the
    record's held before the answer was logged; a call cancelled before then (cut off, as in
    the record) leaves its answer on the tape for the seat's next call. A call past the seat's
    last answer on the tape waits until it is cut off: the record's was, before its answer came
    (a phase its time limit ended before the seat's first answer).

    pydantic-ai's ``FunctionModel`` is the ``Model`` subclass that takes an answer function;
    the function here reads the tape (kept over a hand-written ``Model``: the request path,
    usage and streaming are pydantic-ai's own).
    """

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = pacing.calls[seat] = pacing.calls.get(seat, 0) + 1
        call = tape.call(seat, made)
        try:
            if latency and pacing.pause is not None:
                await pacing.pause(latency)
            if unbilled and pacing.ordered and pacing.reached is not None:
                if call is None:  # past its last answer: the record cut it off before it came
                    await asyncio.Event().wait()
                else:
                    await pacing.reached(pacing.place(call), _always)
        except asyncio.CancelledError:
            pacing.calls[seat] = made - 1  # cut off before its answer came: not on the tape
            raise
        if call is None:
            raise TapeExhausted(f"{seat} made call {made}; the recorded run made {made - 1}")
        if call.outcome == "abandoned":
            await _abandoned(call, pacing)
        if call.outcome == "failed" or (call.outcome == "abandoned" and not call.answered):
            raise _failure(call)
        if call.outcome == "ruled":
            return _ruling_answer(call, info, made)
        return response_of(call)

    return FunctionModel(answer, model_name=model_name)


class TapeAnswers(JudgeCache):
    """The judge cache of a replay: the recorded run's cached rulings, from its tape.

    The judge's next call on the tape (its calls counted with :class:`Pacing`'s, so a ruling
    asked of the model and one the cache answered keep their recorded places) is answered
    here when the record's cache answered it (a ``cached`` call): the recorded ruling,
    found under the key the replay asked with, which the replay logs as the record logged its
    own (``judge_called.cache_key``) and the comparison checks as a request's fingerprint.
    Any other call is a miss (the judge asks its replay model). Nothing is written.
    """

    def __init__(self, tape: Tape, pacing: Pacing) -> None:
        super().__init__(url="")
        self.tape, self.pacing = tape, pacing

    def get(
        self, key: str, accept: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any] | None:
        """The recorded cached ruling when the record's cache answered this call, else None.

        ``accept`` is not asked: the record's cache answered the call, so its answer was taken.
        """
        made = self.pacing.calls.get("judge", 0) + 1
        call = self.tape.call("judge", made)
        if call is None or call.outcome != "cached":
            return None
        self.pacing.calls["judge"] = made
        ruling = call.ruling or {}
        return {"output": {**ruling.get("detail", {}), **ruling}}

    def put(self, key: str, output: dict[str, Any], model: str, provider: str) -> None:
        """Keep nothing: a replay's answers are the record's."""


__all__ = ["Pacing", "TapeAnswers", "TapeExhausted", "replay_model", "response_of"]
