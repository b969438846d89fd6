"""Rebuild a run's state at a round boundary from its event log (the ledger).

A log may hold superseded events: a round cut off by a crash is played again after a
``run_resumed`` event, and what the cut-off attempt logged (after the last ``round_completed``)
no longer counts. :func:`read_state` keeps only the events that count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    LlmResponseReceived,
    MessageSent,
    RoundCompleted,
    RoundResultRecorded,
    Verdict,
    split_attempts,
)


class DeriveError(ValueError):
    """A run that cannot be resumed or derived as asked; one line naming the reason."""

    def __init__(self, message: str, exit_code: int = 65) -> None:
        """Keep the one-line message and the exit code (65 refused, 66 unreadable)."""
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class RunState:
    """What a run had at the end of round ``after_round`` (0: before round 1).

    Attributes:
        after_round: The last completed round.
        events: The events that count up to the boundary, in log order.
        histories: Each agent's exact pydantic-ai message history.
        turns: Model requests per agent (``max_agent_turns`` counts these).
        tool_calls: Tool calls per agent (continues the scripted models' call ids).
        seats: Each agent's current ``(model, provider, model_settings)``.
        recorded: Verdicts per round and whether the round was void.
        total_messages: Messages sent; ``total_chars`` their characters.
        message_seq: Messages ever sent (noise draws are keyed on it).
        pending_round: The round cut off after the boundary, if any.
        pending_verdicts: True when that round's verdict was recorded (only its postmortem
            is missing).
        ended: True when the log holds a ``simulation_ended`` that finished the run
            (``completed`` or ``incomplete``); one with status ``error`` or ``interrupted``
            can be resumed.
    """

    after_round: int = 0
    events: list[Event] = field(default_factory=list)
    histories: dict[str, list[ModelMessage]] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    tool_calls: dict[str, int] = field(default_factory=dict)
    seats: dict[str, tuple[str, str, dict[str, Any]]] = field(default_factory=dict)
    recorded: dict[int, tuple[list[Verdict], bool]] = field(default_factory=dict)
    total_messages: int = 0
    total_chars: int = 0
    message_seq: int = 0
    pending_round: int | None = None
    pending_verdicts: bool = False
    ended: bool = False
    last_timestamp: datetime | None = None
    """The latest timestamp in the whole log (a resumed game clock continues from it)."""


def read_state(events: list[Event], after_round: int | None = None) -> RunState:
    """Return the state at the last completed round, or at ``after_round`` when given.

    Raises:
        DeriveError: ``after_round`` is below 0 or beyond the last completed round.
    """
    kept, pending, ended = split_attempts(events)
    completed = [e.round_number for e in kept if isinstance(e, RoundCompleted)]
    last = max(completed, default=0)
    if after_round is not None:
        if after_round < 1 or after_round > last:
            raise DeriveError(
                f"--after-round {after_round}: the run's completed rounds are 1..{last}"
                if last
                else f"--after-round {after_round}: the run has no completed round"
            )
        cut = next(
            i
            for i, e in enumerate(kept)
            if isinstance(e, RoundCompleted) and e.round_number == after_round
        )
        kept, pending, ended, last = kept[: cut + 1], [], False, after_round
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
    return state


def _fold(state: RunState, events: list[Event]) -> None:
    """Accumulate the counters, histories, seats and verdicts of ``events`` into ``state``."""
    for event in events:
        if isinstance(event, AgentRegistered):
            state.histories[event.agent_id] = []  # a (re-)registration starts a fresh history
            state.seats[event.agent_id] = (event.model, event.provider, dict(event.model_settings))
            state.turns.setdefault(event.agent_id, 0)
            state.tool_calls.setdefault(event.agent_id, 0)
        elif isinstance(event, AgentHistoryAppended):
            messages = ModelMessagesTypeAdapter.validate_python(event.messages)
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
