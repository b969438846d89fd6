"""What the staged scenarios' scripted policies share: the phase as a timeline, the debrief.

A scripted policy rebuilds its state from its :class:`~glossogen.scenario.ScriptedView` at every
move; :func:`timeline` flattens the view's observations into the steps such a policy walks:
briefings, messages and world events as they were handed over, its own sends, and the results
of the scenario's action tool. :func:`debrief_move` is a seat's postmortem: one line chosen by
how the round went (:func:`debrief_outcome`), then done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from glossogen.scenario._contract import ScriptedMove, ScriptedView


@dataclass(frozen=True)
class Seen:
    """One thing the seat saw, in order.

    Attributes:
        kind: ``briefing``, ``message``, ``event``, ``sent`` (its own send went out), or the
            kind a scenario names its action tool's results by (``service``, ``actuation``).
        data: The briefing's data, the message, the event, or the tool's result.
    """

    kind: str
    data: dict[str, Any]


def timeline(view: ScriptedView, action_tool: str, action_kind: str) -> list[Seen]:
    """Return what the seat saw this phase as one ordered list.

    Args:
        view: The seat's view.
        action_tool: The scenario tool whose results are steps of their own.
        action_kind: The :attr:`Seen.kind` of those results.
    """
    seen: list[Seen] = []

    def batch(data: dict[str, Any]) -> None:
        seen.extend(Seen("message", m) for m in data.get("messages", []))
        seen.extend(Seen("event", e) for e in data.get("events", []))

    for o in view.observations:
        if o.kind == "briefing":
            seen.append(Seen("briefing", o.data))
        elif o.kind == "notifications" or o.tool_name == "wait_for_notifications":
            batch(o.data)
        elif o.tool_name == "send_message":
            if o.data.get("status") == "sent":
                seen.append(Seen("sent", o.data))
            else:  # a conflict hands back the unread messages; nothing was sent
                batch(o.data)
        elif o.tool_name == action_tool:
            seen.append(Seen(action_kind, o.data))
    return seen


def debrief_outcome(view: ScriptedView, phrases: Mapping[str, str]) -> str:
    """Say how the round went, from the verdicts the postmortem's briefing carries.

    Args:
        view: The seat's postmortem view.
        phrases: Phrase -> outcome, tried in order against the verdicts' reasons.

    Returns:
        ``won`` when there are verdicts and each is a success, else the outcome of the first
        phrase the reasons contain, else ``other``.
    """
    verdicts: list[dict[str, Any]] = next(
        (b["verdicts"] for b in view.briefings() if b.get("verdicts")), []
    )
    reason = " ".join(str(v.get("reason", "")) for v in verdicts)
    if verdicts and all(v.get("success") for v in verdicts):
        return "won"
    return next((outcome for phrase, outcome in phrases.items() if phrase in reason), "other")


def debrief_move(
    view: ScriptedView,
    line: Callable[[str], str],
    phrases: Mapping[str, str],
    channel_id: str = "postmortem",
) -> ScriptedMove:
    """Send one line on ``channel_id`` (``line`` of :func:`debrief_outcome`), then finish."""
    if any(r.get("status") == "sent" for r in view.tool_results("send_message")):
        return ScriptedMove.finish("Noted.")
    text = line(debrief_outcome(view, phrases))
    return ScriptedMove.call("send_message", channel_id=channel_id, text=text)
