"""The scripted policy of signal_game: a compositional code, read back by the receiver.

The sender names the target's value on every attribute, in attribute order, separated by
spaces (``ochre dotted loop waxen``); the receiver chooses the candidate whose values the
message names, the first in its order when several fit. In a misplayed round the sender names
only the first two attributes, so a distractor sharing them can be chosen instead.
"""

from __future__ import annotations

from typing import Any

from glossogen.scenario import ScriptedMove, ScriptedView

LINK = "link"


def _sent(view: ScriptedView) -> int:
    return sum(r.get("status") == "sent" for r in view.tool_results("send_message"))


def sender_move(view: ScriptedView) -> ScriptedMove:
    """Send one message per target shown, then wait for the next target."""
    shown: list[dict[str, Any]] = [
        b["target_attributes"] for b in view.briefings() if "target_attributes" in b
    ]
    for event in view.world_events():
        if event.get("kind") == "next_target":
            shown.append(event["data"]["target_attributes"])
        if event.get("kind") == "round_over":
            return ScriptedMove.finish("Round over.")
    if _sent(view) >= len(shown):
        return ScriptedMove.call("wait_for_notifications")
    values = list(shown[_sent(view)].values())
    if view.misplay:
        values = values[:2]
    return ScriptedMove.call("send_message", channel_id=LINK, text=" ".join(values))


def receiver_move(view: ScriptedView) -> ScriptedMove:
    """Choose once per message heard, from the candidates of the current target."""
    chosen = view.tool_results("choose")
    if any(r.get("round_over") for r in chosen):
        return ScriptedMove.finish("Round over.")
    heard = [m for m in view.received_messages() if m.get("channel_id") == LINK]
    done = sum(r.get("status") == "chosen" for r in chosen)
    if len(heard) <= done:
        return ScriptedMove.call("wait_for_notifications")
    brief = next(b for b in view.briefings() if "candidates" in b)
    candidates = brief["candidates"]
    for r in chosen:
        if r.get("next"):
            candidates = r["next"]["candidates"]
    said = set(str(heard[done]["text"]).split())
    fits = [c for c in candidates if said <= set(c["attributes"].values())]
    label = (fits or candidates)[0]["label"]
    return ScriptedMove.call("choose", label=label)


def debrief_move(view: ScriptedView) -> ScriptedMove:
    """One line on the postmortem channel, then stop."""
    if _sent(view):
        return ScriptedMove.finish("Noted.")
    return ScriptedMove.call(
        "send_message", channel_id="postmortem", text="Keep naming every attribute in order."
    )
