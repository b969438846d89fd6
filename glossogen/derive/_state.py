"""Rebuild a run's state at a round boundary from its event log (the ledger).

A log may hold superseded events: a round cut off by a crash is played again after a
``run_resumed`` event, and what the cut-off attempt logged (after the last ``round_completed``)
no longer counts. :func:`read_state` keeps only the events that count.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from glossogen.engine._state import RunState
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    LlmResponseReceived,
    MessageSent,
    ModelRequestSent,
    RoundCompleted,
    RoundResultRecorded,
    RunResumed,
    Verdict,
    split_attempts,
)
from glossogen.refusals import Refusal


class DeriveError(ValueError):
    """A run that cannot be resumed or derived as asked; one line naming the reason."""

    def __init__(
        self, message: str = "", exit_code: int = 65, refusal: Refusal | None = None
    ) -> None:
        """Keep the one-line message and the exit code (65 refused, 66 unreadable).

        A ``refusal`` (a request value refused) words the message when none is given; each
        surface words it again with its own name for the field (``exc.refusal``).
        """
        super().__init__(message or (refusal.worded() if refusal else ""))
        self.exit_code = exit_code
        self.refusal = refusal


class HistoryUnreadable(DeriveError):
    """An ``agent_history_appended`` whose messages no upcast makes readable (exit 65).

    Attributes:
        event_id: The event's id, so a reader holding the log can name its line.
        agent_id: The agent whose history it is.
        reason: The first validation problem, one line.
    """

    def __init__(self, event_id: str, agent_id: str, reason: str, where: str = "") -> None:
        """Build the one-line refusal; ``where`` is ``"<log> line <n>: "`` when known."""
        super().__init__(
            f"{where}agent_history_appended {event_id} (agent {agent_id}) holds a history "
            f"that cannot be read: {reason}",
            65,
        )
        self.event_id, self.agent_id, self.reason = event_id, agent_id, reason


_RESPONSE_ONLY = ("model_name", "usage", "finish_reason", "provider_response_id")


def _request_part_kind(part: dict[str, Any]) -> str | None:
    if "tool_call_id" in part and "tool_name" in part:
        content = part.get("content")
        errors = isinstance(content, list) and all(
            isinstance(c, dict) and "msg" in c for c in content
        )
        return "retry-prompt" if errors and content else "tool-return"
    if "dynamic_ref" in part:
        return "system-prompt"
    if "content" in part:
        return "user-prompt"
    return None


def _response_part_kind(part: dict[str, Any]) -> str | None:
    if "tool_name" in part and "args" in part:
        return "tool-call"
    if "signature" in part and "content" in part:
        return "thinking"
    if "content" in part:
        return "text"
    return None


def upcast_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return logged pydantic-ai messages in the shapes pydantic-ai reads today (new dicts).

    What is upcast, as :mod:`glossogen.eventlog`'s other readers tolerate it:

    - a message without ``kind``: ``response`` when it carries a response's own fields
      (``model_name``, ``usage``, ...) or a tool call, else ``request``;
    - a part without ``part_kind``, inferred from its fields: in a request a part with
      ``tool_name`` and ``tool_call_id`` is a ``retry-prompt`` when its content is a list of
      validation errors, else a ``tool-return``; one with ``dynamic_ref`` a ``system-prompt``;
      else a ``user-prompt``. In a response ``tool_name`` and ``args`` make a ``tool-call``,
      ``signature`` a ``thinking`` part, else ``text``;
    - a legacy ``retry-prompt`` whose validation errors lack ``input`` (written before
      pydantic-ai required it): ``input`` null.

    A part whose kind cannot be told is left as is (validation then names it).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(message)
            continue
        message = dict(message)
        parts = message.get("parts")
        if "kind" not in message and isinstance(parts, list):
            response = any(k in message for k in _RESPONSE_ONLY) or any(
                isinstance(p, dict) and "args" in p for p in parts
            )
            message["kind"] = "response" if response else "request"
        if isinstance(parts, list):
            infer = _response_part_kind if message.get("kind") == "response" else _request_part_kind
            fixed: list[Any] = []
            for part in parts:
                if isinstance(part, dict):
                    part = dict(part)
                    if "part_kind" not in part and (kind := infer(part)) is not None:
                        part["part_kind"] = kind
                    if part.get("part_kind") == "retry-prompt" and isinstance(
                        part.get("content"), list
                    ):
                        part["content"] = [
                            {"input": None, **c} if isinstance(c, dict) else c
                            for c in part["content"]
                        ]
                fixed.append(part)
            message["parts"] = fixed
        out.append(message)
    return out


def _first_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"message {where}: {first['msg']}" if where else first["msg"]


def read_history(event: AgentHistoryAppended, where: str = "") -> list[ModelMessage]:
    """Return the event's messages as pydantic-ai objects, upcast first (:func:`upcast_history`).

    Args:
        event: The ``agent_history_appended`` event.
        where: ``"<log> line <n>: "`` naming the event's line, put before the message.

    Raises:
        HistoryUnreadable: (65) the messages do not validate even upcast; one line naming the
            event, its agent and the first problem.
    """
    messages = upcast_history(event.messages)
    for i, message in enumerate(messages):
        parts = message.get("parts") if isinstance(message, dict) else None
        for j, part in enumerate(parts if isinstance(parts, list) else []):
            if isinstance(part, dict) and "part_kind" not in part:
                fields = ", ".join(sorted(part)) or "none"
                reason = (
                    f"message {i} part {j} has no part_kind and its fields ({fields}) "
                    "do not tell one"
                )
                raise HistoryUnreadable(event.event_id, event.agent_id, reason, where)
    try:
        return list(ModelMessagesTypeAdapter.validate_python(messages))
    except ValidationError as exc:
        reason = _first_problem(exc)
        raise HistoryUnreadable(event.event_id, event.agent_id, reason, where) from None


def read_state(events: list[Event], after_round: int | None = None) -> RunState:
    """Return the state at the last completed round, or at ``after_round`` when given.

    Histories are read tolerantly (:func:`read_history`).

    Raises:
        DeriveError: ``after_round`` is below 0 or beyond the last completed round.
        HistoryUnreadable: (65) a history cannot be read even upcast.
    """
    kept, pending, ended = split_attempts(events)
    completed = [e.round_number for e in kept if isinstance(e, RoundCompleted)]
    last = max(completed, default=0)
    if after_round is not None:
        if after_round < 1 or after_round > last:
            raise DeriveError(
                refusal=Refusal(
                    field="after_round",
                    value=str(after_round),
                    reason=f"the run's completed rounds are 1..{last}"
                    if last
                    else "the run has no completed round",
                )
            )
        cut = next(
            i
            for i, e in enumerate(kept)
            if isinstance(e, RoundCompleted) and e.round_number == after_round
        )
        cut += 1
        while cut < len(kept) and _at_boundary(kept[cut], after_round):
            cut += 1
        kept, pending, ended, last = kept[:cut], [], False, after_round
    state = RunState(after_round=last, ended=ended)
    state.last_timestamp = max((e.timestamp for e in events), default=None)
    if pending:
        state.pending_round = last + 1
        state.pending_verdicts = any(
            isinstance(e, RoundResultRecorded) and e.round_number == last + 1 for e in pending
        )
        if state.pending_verdicts:
            cut = max(i for i, e in enumerate(pending) if isinstance(e, RoundResultRecorded))
            kept = kept + pending[: cut + 1]
    state.events = kept
    _fold(state, kept)
    if after_round is None:  # a resume: the run's own requests, the cut-off round's too
        state.made = requests_made(events)
    return state


def requests_made(events: list[Event]) -> dict[str, int]:
    """Model requests each seat made in the whole log, all its processes (``max_agent_turns``).

    A billed request is counted by its ``model_request_sent`` (written before it is sent, so a
    request that failed, was abandoned or was cut off with its round counts too); an unbilled
    one (scripted, local), which has no sent event, by its ``llm_response_received``. The
    requests of a round a kill or a stop cut off count: they were made (and billed) although
    the resume plays that round again. A fork starts from its boundary instead
    (:func:`read_state` with ``after_round``): the source's later requests are not its own.
    """
    made: Counter[str] = Counter()
    sent: set[str] = set()
    for event in events:
        if isinstance(event, ModelRequestSent):
            made[event.agent_id] += 1
            sent.add(event.request_id)
    for event in events:
        if isinstance(event, LlmResponseReceived) and event.request_id not in sent:
            made[event.agent_id] += 1
    return dict(made)


def _at_boundary(event: Event, after_round: int) -> bool:
    """Whether ``event`` was logged at the boundary after ``after_round``, before the next round.

    A derived run registers its seats anew there (and logs their histories again), and a
    resume logs ``run_resumed`` there, then registers anew the seats whose settings it changed:
    what the run played round ``after_round + 1`` with, so a fork at that round keeps it.
    """
    if isinstance(event, RunResumed):
        return event.after_round == after_round
    return event.phase == "setup" and event.round_number == after_round


def _fold(state: RunState, events: list[Event]) -> None:
    """Accumulate the counters, histories, seats and verdicts of ``events`` into ``state``."""
    for event in events:
        if isinstance(event, AgentRegistered):
            state.histories[event.agent_id] = []  # a (re-)registration starts a fresh history
            state.seats[event.agent_id] = (event.model, event.provider, dict(event.model_settings))
            state.turns.setdefault(event.agent_id, 0)
            state.tool_calls.setdefault(event.agent_id, 0)
        elif isinstance(event, AgentHistoryAppended):
            messages = read_history(event)
            history = state.histories.setdefault(event.agent_id, [])
            start = len(history) if event.from_index is None else event.from_index
            state.histories[event.agent_id] = history[:start] + list(messages)
        elif isinstance(event, LlmResponseReceived):
            state.turns[event.agent_id] = state.turns.get(event.agent_id, 0) + 1
            state.tool_calls[event.agent_id] = state.tool_calls.get(event.agent_id, 0) + len(
                event.tool_calls
            )
        elif isinstance(event, AgentSwappedMidRun):
            _, _, settings = state.seats[event.agent_id]
            state.seats[event.agent_id] = (event.model, event.provider, settings)
        elif isinstance(event, MessageSent):
            state.total_messages += 1
            state.total_chars += event.chars
            state.postmortem_messages += event.phase == "postmortem"
            state.message_seq += 1
        elif isinstance(event, RoundResultRecorded):
            verdicts, void = state.recorded.get(event.round_number, ([], False))
            reason = (
                event.reason.split(": ", 1)[1]
                if event.void and ": " in event.reason
                else event.reason
            )
            verdict = Verdict(team_id=event.team_id, success=event.success, reason=reason)
            state.recorded[event.round_number] = ([*verdicts, verdict], void or event.void)
