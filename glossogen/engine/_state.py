"""The run's state at a round boundary: what an engine continues from (a resume, a fork).

Read from a run's event log by :func:`glossogen.derive.read_state`; the engine takes it whole
(:class:`~glossogen.engine.RunEngine`'s ``state``) and never reads a log itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic_ai.messages import ModelMessage

from glossogen.eventlog import Event, Verdict


@dataclass
class RunState:
    """What a run had at the end of round ``after_round`` (0: before round 1).

    Attributes:
        after_round: The last completed round.
        events: The events that count up to the boundary, in log order.
        histories: Each agent's exact pydantic-ai message history.
        turns: Model requests per agent up to the boundary (each seat's next cycle number).
        made: For a resume, the model requests each agent made in the whole log, those of a
            round cut off after the boundary included: what ``max_agent_turns`` caps (a resume
            plays that round again, but its requests were made and billed). Empty for a fork,
            whose source's later requests are not its own: there ``turns`` is what it made.
        tool_calls: Tool calls per agent (continues the scripted models' call ids).
        seats: Each agent's current ``(model, provider, model_settings)``.
        recorded: Verdicts per round and whether the round was void.
        total_messages: Messages sent; ``total_chars`` their characters;
            ``postmortem_messages`` those of them sent in a postmortem.
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
    made: dict[str, int] = field(default_factory=dict)
    tool_calls: dict[str, int] = field(default_factory=dict)
    seats: dict[str, tuple[str, str, dict[str, Any]]] = field(default_factory=dict)
    recorded: dict[int, tuple[list[Verdict], bool]] = field(default_factory=dict)
    total_messages: int = 0
    total_chars: int = 0
    postmortem_messages: int = 0
    message_seq: int = 0
    pending_round: int | None = None
    pending_verdicts: bool = False
    ended: bool = False
    last_timestamp: datetime | None = None
    """The latest timestamp in the whole log (a resumed game clock continues from it)."""
