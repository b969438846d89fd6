"""The scripted policy of the viewers: list scene A, decode the differences, submit them.

Good play, per team: the left viewer posts scene A on its link as one listing (``A:`` then one
item per object); the right viewer reads its teammate's listing, decodes the differences
against its own scene B and posts them (``diffs:`` then the lines), then submits them; the left
viewer submits the same lines when both must submit (else the right viewer's answer is the
team's and the left viewer stops). Each team writes its listing ``terse`` (``s teal comb TL``)
or ``plain`` (``small teal comb top left``), drawn from the seed, the round and the team, so
teams tie in some rounds and not in others. In a misplayed round one team, drawn the same way,
leaves its last difference out.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from glossogen.scenario import ScriptedMove, ScriptedView
from scenarios.spot_the_difference.scene import REGIONS, Operation, Token, decode

Style = Literal["terse", "plain"]
SHORT_REGION = dict(
    zip(REGIONS, ("TL", "TC", "TR", "ML", "C", "MR", "BL", "BC", "BR"), strict=True)
)
LONG_REGION = {v: k for k, v in SHORT_REGION.items()}
SHORT_SIZE = {"small": "s", "large": "l"}
LONG_SIZE = {v: k for k, v in SHORT_SIZE.items()}


def style_of(seed: int, round_number: int, team_id: str) -> Style:
    """Return how ``team_id`` writes its listing in ``round_number``."""
    return random.Random(f"{seed}:{round_number}:{team_id}:spot-style").choice(("terse", "plain"))


def sloppy_team(seed: int, round_number: int, teams: list[str]) -> str:
    """Return the team that leaves a difference out in a misplayed round."""
    return random.Random(f"{seed}:{round_number}:spot-misplay").choice(sorted(teams))


def listing(tokens: list[Token], style: Style) -> str:
    """Return scene A as the left viewer posts it."""
    if style == "terse":
        items = [f"{SHORT_SIZE[s]} {c} {h} {SHORT_REGION[r]}" for s, c, h, r in tokens]
    else:
        items = [f"{s} {c} {h} {r}" for s, c, h, r in tokens]
    return "A: " + "; ".join(items)


def parse_listing(text: str) -> list[Token]:
    """Read a listing back into tokens (either style)."""
    found: list[Token] = []
    for item in text.removeprefix("A: ").split("; "):
        words = item.split(" ")
        size, colour, shape, region = words[0], words[1], words[2], " ".join(words[3:])
        found.append((LONG_SIZE.get(size, size), colour, shape, LONG_REGION.get(region, region)))
    return found


def line_of(op: Operation) -> str:
    """Write one decoded difference in plain words (what the right viewer submits)."""
    if op.kind == "added":
        assert op.after is not None
        s, c, h, r = op.after
        return f"a {s} {c} {h} was added in the {r}"
    assert op.before is not None
    s, c, h, r = op.before
    if op.kind == "removed":
        return f"the {s} {c} {h} in the {r} was removed"
    assert op.after is not None
    if op.kind == "moved":
        return f"the {s} {c} {h} moved from the {r} to the {op.after[3]}"
    changed = next(i for i in range(3) if op.before[i] != op.after[i])
    return f"in the {r}, the {s} {c} {h} is now {op.after[changed]}"


def _sent(view: ScriptedView, tool: str) -> bool:
    return any(r.get("status") in ("sent", "submitted") for r in view.tool_results(tool))


def _from(view: ScriptedView, sender: str, prefix: str) -> str | None:
    return next(
        (
            str(m["text"])
            for m in view.received_messages()
            if m.get("sender_id") == sender and str(m.get("text", "")).startswith(prefix)
        ),
        None,
    )


def left_move(view: ScriptedView, brief: dict[str, Any]) -> ScriptedMove:
    """The left viewer (scene A): post the listing, then submit the teammate's lines."""
    if view.tool_results("submit_differences"):
        return ScriptedMove.finish("Submitted.")
    if not _sent(view, "send_message"):
        text = listing([tuple(t) for t in brief["tokens"]], brief["style"])
        return ScriptedMove.call("send_message", channel_id=brief["link"], text=text)
    diffs = _from(view, brief["partner"], "diffs: ")
    if diffs is None:
        return ScriptedMove.call("wait_for_notifications")
    if not brief["all_must_submit"]:
        return ScriptedMove.finish("My teammate's answer is ours.")
    lines = diffs.removeprefix("diffs: ").split(" | ")
    return ScriptedMove.call("submit_differences", differences=lines)


def right_move(view: ScriptedView, brief: dict[str, Any]) -> ScriptedMove:
    """The right viewer (scene B): decode the teammate's listing, post and submit the lines."""
    if view.tool_results("submit_differences"):
        return ScriptedMove.finish("Submitted.")
    heard = _from(view, brief["partner"], "A: ")
    if heard is None:
        return ScriptedMove.call("wait_for_notifications")
    mine: list[Token] = [tuple(t) for t in brief["tokens"]]
    solutions = decode(parse_listing(heard), mine)
    lines = [line_of(op) for op in solutions[0]] if solutions else []
    if brief["sloppy"] and len(lines) > 1:
        lines = lines[:-1]
    if not _sent(view, "send_message"):
        text = "diffs: " + " | ".join(lines)
        return ScriptedMove.call("send_message", channel_id=brief["link"], text=text)
    return ScriptedMove.call("submit_differences", differences=lines)


def debrief_move(view: ScriptedView, channel_id: str) -> ScriptedMove:
    """Send one short line on the team's postmortem channel, then finish."""
    if _sent(view, "send_message"):
        return ScriptedMove.finish("Noted.")
    verdicts: list[dict[str, Any]] = next(
        (b["verdicts"] for b in view.briefings() if b.get("verdicts")), []
    )
    won = all(v.get("success") for v in verdicts) and bool(verdicts)
    text = (
        "Listing then diffs worked; keep it short."
        if won
        else "Check every line before submitting."
    )
    return ScriptedMove.call("send_message", channel_id=channel_id, text=text)
