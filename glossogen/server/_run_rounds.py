"""The run page's rounds: each event the page lays out as an item, in log order, one round apart.

Who said what on which channel, which tool was called and what it returned, the judge's and the
scenario's rulings, failed cycles, and where a round, a postmortem, a swap or a resume begins
(:class:`Item`); a round's case as a table (:func:`case_rows`); each round's columns, tools and
notes (:class:`RoundRow`). The scenario's own hooks say which of its events is the case and which
a ruling (:func:`event_roles`), and which of its channels are the postmortem's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glossogen.eventlog import (
    AgentRunCycleFailed,
    AgentSwappedMidRun,
    Event,
    JudgeCalled,
    MessageSent,
    PostmortemStarted,
    RoundStarted,
    RunResumed,
    ToolCallInvoked,
    ToolResultReceived,
)

if TYPE_CHECKING:
    from glossogen.scenario import TeamOutcome

EVERY_COLUMN = "*"
"""The channel of an item shown in every column (a round, postmortem, swap or fork divider)."""

ACTIVITY = "activity"
"""The column of tool calls, their results, judge rulings and failed cycles."""


@dataclass
class Item:
    """One thing the page shows, in log order.

    Attributes:
        kind: ``message``, ``tool_call``, ``tool_result``, ``judge``, ``failure`` or
            ``divider``.
        column: The channel id, :data:`ACTIVITY`, or :data:`EVERY_COLUMN`.
        round_number: The event's round; phase its phase.
        fields: What the template shows (texts are raw: the template escapes them).
    """

    kind: str
    column: str
    round_number: int
    phase: str
    fields: dict[str, Any]
    event_id: str = ""


@dataclass
class ToolRow:
    """One tool call of a round, with its result (folded on the page)."""

    agent: str
    tool: str
    args: str
    result: str | None = None
    refused: bool = False
    event_id: str = ""


@dataclass
class RoundRow:
    """One round: verdicts (per team), void, trigger, the case, and what was said and done.

    Attributes:
        verdicts: Each team's outcome (``won``, ``eligible``, ``lost``, ``void``) as
            :func:`glossogen.launch.team_outcomes` reads it for MCP's ``get_run``, the export
            and the console: the page cannot say another.
        messages: Main-phase messages per channel (every channel of the run, in order).
        postmortem: Postmortem messages per channel (channels that held one).
        tools: Tool calls in log order, each with its result.
        notes: Judge rulings, failed cycles, swaps and resumes, in log order.
        case: The round's case as table rows (the answer key), or None.
        void_cause: Why a void round is void (``turn_limit``, ``spend_cap``,
            ``provider_failed``...), which its main phase's end (``trigger``) may not say.
    """

    round_number: int
    verdicts: list[TeamOutcome]
    void: bool
    won: bool
    trigger: str | None = None
    void_cause: str | None = None
    case: list[CaseField] | None = None
    messages: dict[str, list[Item]] = field(default_factory=dict)
    postmortem: dict[str, list[Item]] = field(default_factory=dict)
    tools: list[ToolRow] = field(default_factory=list)
    notes: list[Item] = field(default_factory=list)

    @property
    def recorded(self) -> bool:
        """True once the round's verdict is in the log."""
        return bool(self.verdicts) or self.void

    @property
    def outcome(self) -> str:
        """``won``, ``lost``, ``void`` or ``playing`` (the picker's colour)."""
        if self.void:
            return "void"
        if not self.verdicts:
            return "playing"
        return "won" if self.won else "lost"

    @property
    def ranked_winner(self) -> str | None:
        """The team(s) that won a multi-team round (``a``, ``a, b`` when tied), else None."""
        if len(self.verdicts) < 2:
            return None
        return ", ".join(v.team_id for v in self.verdicts if v.outcome == "won") or None


def _message(event: MessageSent, models: dict[str, str]) -> Item:
    fields = {
        "sender": event.sender_id,
        "model": models.get(event.sender_id, ""),
        "text": event.text,
        "delivered": event.delivered_text if event.delivered_text != event.text else None,
        "chars": event.chars,
    }
    return Item("message", event.channel_id, event.round_number, event.phase, fields)


def event_item(event: Event, models: dict[str, str], rulings: frozenset[str]) -> Item | None:
    """The page item of one event, or None for an event the page does not lay out."""
    r, p = event.round_number, event.phase
    fields: dict[str, Any]
    if isinstance(event, MessageSent):
        return _message(event, models)
    if isinstance(event, ToolCallInvoked):
        args = json.dumps(event.args, ensure_ascii=False)
        fields = {"agent": event.agent_id, "tool": event.tool_name, "args": args}
        return Item("tool_call", ACTIVITY, r, p, fields)
    if isinstance(event, ToolResultReceived):
        result = event.refused or json.dumps(event.result, ensure_ascii=False, default=str)
        fields = {
            "agent": event.agent_id,
            "tool": event.tool_name,
            "result": result,
            "refused": event.refused is not None,
        }
        return Item("tool_result", ACTIVITY, r, p, fields)
    if isinstance(event, JudgeCalled):
        fields = {"success": event.success, "reason": event.reason, "model": event.model}
        return Item("judge", ACTIVITY, r, p, fields)
    if isinstance(event, AgentRunCycleFailed):
        fields = {"agent": event.agent_id, "kind": event.error_kind, "error": event.error}
        return Item("failure", ACTIVITY, r, p, fields)
    if isinstance(event, RoundStarted) and p == "main":
        return Item("divider", EVERY_COLUMN, r, p, {"label": f"round {r}"})
    if isinstance(event, PostmortemStarted):
        return Item("divider", EVERY_COLUMN, r, p, {"label": f"round {r} postmortem"})
    if isinstance(event, AgentSwappedMidRun):
        label = f"{event.agent_id} swapped to {event.provider}:{event.model}"
        return Item("divider", EVERY_COLUMN, r, p, {"label": label})
    if isinstance(event, RunResumed):
        label = f"resumed after round {event.after_round}"
        return Item("divider", EVERY_COLUMN, r, p, {"label": label})
    if getattr(event, "event_type", "") in rulings:  # the scenario's own rulings (its hook)
        data = event.model_dump(mode="json", exclude=set(Event.model_fields))
        fields = {"success": data.get("success"), "reason": data.get("reason"), "model": None}
        return Item("judge", ACTIVITY, r, p, fields)
    return None


@dataclass
class CaseField:
    """One field of a round's case as the page's table shows it.

    Attributes:
        name: The field (nested objects by dotted name).
        text: Its value as one line (empty when ``rows`` holds it).
        header: A list of objects' keys, the columns of its own small table.
        rows: That table's rows, one per object (values as text).
    """

    name: str
    text: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        return " ".join(f"{k}={_plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def case_rows(case: dict[str, Any]) -> list[CaseField]:
    """A round's case as table rows, readable in the page rather than raw JSON.

    A nested object is listed by dotted field; a list of objects becomes a small table (a row
    per object, a column per key, a nested value written ``key=value``); anything else is one
    line of text.
    """
    rows: list[CaseField] = []

    def walk(value: Any, name: str) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(inner, f"{name}.{key}" if name else str(key))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            header = list(dict.fromkeys(k for v in value for k in v))
            table = [[_plain(v.get(k)) for k in header] for v in value]
            rows.append(CaseField(name, header=header, rows=table))
        else:
            rows.append(CaseField(name, text=_plain(value)))

    walk(case, "")
    return rows


def tool_rows(items: list[Item]) -> list[ToolRow]:
    """Each tool call of a round with the result that answered it (by order, per seat/tool)."""
    rows: list[ToolRow] = []
    open_calls: list[ToolRow] = []
    for item in items:
        f = item.fields
        if item.kind == "tool_call":
            row = ToolRow(f["agent"], f["tool"], f["args"], event_id=item.event_id)
            rows.append(row)
            open_calls.append(row)
        elif item.kind == "tool_result":
            match = next(
                (r for r in open_calls if (r.agent, r.tool) == (f["agent"], f["tool"])), None
            )
            if match is None:  # a result whose call the page did not see (a resumed round)
                match = ToolRow(f["agent"], f["tool"], "", event_id=item.event_id)
                rows.append(match)
            else:
                open_calls.remove(match)
            match.result, match.refused = f["result"], bool(f.get("refused"))
    return rows


def event_roles(scenario: str) -> tuple[str | None, frozenset[str]]:
    """The ``event_type`` of the scenario's case event and of its rulings (its own hooks).

    ``Scenario.case_event`` and ``Scenario.ruling_events``; none when it is not installed.
    """
    from glossogen.scenario import UnknownScenarioError, load_scenario

    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError:
        return None, frozenset()
    return cls.case_type(), cls.ruling_types()


def postmortem_channels(scenario: str, config: dict[str, Any]) -> set[str]:
    """The scenario's postmortem-phase channels for the recorded knobs.

    None when the scenario is not installed.
    """
    from glossogen.evaluation import scenario_instance
    from glossogen.scenario import UnknownScenarioError, load_scenario

    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError:
        return set()
    instance, _ = scenario_instance(cls, config)
    return {c.channel_id for c in instance.channels() if c.phase == "postmortem"}


def place_items(row: RoundRow, own: list[Item]) -> None:
    """Lay out a round's items: messages in their columns, the rest among its notes.

    The notes are its judge calls, failures and dividers, but for its own opening divider and
    the postmortem's.
    """
    for i in own:
        if i.kind == "message":
            place = row.postmortem if i.phase == "postmortem" else row.messages
            place.setdefault(i.column, []).append(i)
        elif i.kind in ("judge", "failure") or (
            i.kind == "divider" and "postmortem" not in i.fields["label"]
        ):
            if not (i.kind == "divider" and i.fields["label"] == f"round {row.round_number}"):
                row.notes.append(i)
