"""The scripted policy of the three seats: terse, correct, and wrong on purpose in misplayed rounds.

Each policy rebuilds its state from what its seat was shown this phase and returns one move.
Good play, per stage: the astronaut posts the alarm, unit and configuration; the telemetry
officer posts the signature's name, the setting and the hold; the systems engineer reads the
name in its handbook, looks the variant up in the round's table and posts the variant's
keywords; the astronaut then actuates in plain words. After a rejection the astronaut posts
"rejected, check" and the engineer answers again. A misplayed round's mistake is drawn from the
seed and the round, so all seats agree on it without talking:

- ``stale_table``: the engineer's first answer at one stage uses the wrong variant;
- ``slip``: the astronaut's first actuation at one stage is one step off the setting;
- ``ramble``: the astronaut describes one stage's panel at length and overruns the budget.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from glossogen.scenario import ScriptedMove, ScriptedView, Seen, timeline
from glossogen.scenario import debrief_move as debrief
from scenarios.orbital_anomaly.catalogue import FAULT_BY_NAME, VARIANTS

ASTRONAUT = "astronaut"
TELEMETRY = "telemetry_officer"
ENGINEER = "systems_engineer"
LINK = "link"
POSTMORTEM = "postmortem"
ROUND_OVER = ("vehicle_lost", "all_clear")

MisplayKind = Literal["stale_table", "slip", "ramble"]
MISPLAY_KINDS: tuple[MisplayKind, ...] = ("stale_table", "slip", "ramble")
_TELEMETRY = re.compile(
    r"^(?P<name>[a-z ]+); set (?P<setting>\d+ [A-Za-z ]+); hold (?P<hold>\d+)s$"
)


@dataclass(frozen=True)
class Misplay:
    """The round's mistake: its kind and the stage (1-based) at which it happens."""

    kind: MisplayKind
    stage: int


def plan_misplay(seed: int, round_number: int) -> Misplay:
    """Return the mistake of a misplayed round, the same for every seat.

    The stage is drawn from 1..2; in a one-stage case a stage-2 mistake never comes up, so
    the round is played well.
    """
    rng = random.Random(f"{seed}:{round_number}:orbital-misplay")
    return Misplay(rng.choice(MISPLAY_KINDS), rng.randint(1, 2))


def _after_last(steps: list[Seen], *kinds: str) -> list[Seen]:
    last = max((i for i, s in enumerate(steps) if _is(s, kinds)), default=-1)
    return steps[last + 1 :]


def _is(step: Seen, kinds: tuple[str, ...]) -> bool:
    if step.kind == "event":
        return f"event:{step.data.get('kind')}" in kinds
    if step.kind == "actuation":
        return "actuation" in kinds or f"actuation:{step.data.get('status')}" in kinds
    return step.kind in kinds


def _texts(steps: list[Seen], sender: str) -> list[str]:
    return [
        str(s.data.get("text", ""))
        for s in steps
        if s.kind == "message"
        and s.data.get("channel_id") == LINK
        and s.data.get("sender_id") == sender
    ]


def _round_over(steps: list[Seen]) -> bool:
    return any(s.kind == "event" and s.data.get("kind") in ROUND_OVER for s in steps) or any(
        s.kind == "actuation" and s.data.get("all_clear") for s in steps
    )


def _briefing(steps: list[Seen]) -> dict[str, Any] | None:
    return next((s.data for s in steps if s.kind == "briefing"), None)


# -- astronaut --------------------------------------------------------------------------------


def astronaut_move(view: ScriptedView, seed: int) -> ScriptedMove:
    """Return the astronaut's next move in the main phase."""
    steps = timeline(view, "actuate_panel", "actuation")
    brief = _briefing(steps)
    if brief is None or _round_over(steps):
        return ScriptedMove.finish("Nothing more to do this round.")
    panel: dict[str, Any] = brief
    for s in steps:
        if s.kind == "actuation" and s.data.get("next_panel"):
            panel = s.data["next_panel"]
    stage = int(panel["stage"])
    misplay = plan_misplay(seed, view.round_number) if view.misplay else None
    this_stage = _after_last(steps, "actuation:accepted")
    if not any(s.kind == "sent" for s in this_stage):
        text = f"{panel['alarm']}: {panel['unit']}, {panel['configuration']}"
        if misplay and misplay.kind == "ramble" and misplay.stage == stage:
            text = _ramble(panel, int(brief["budget_chars"]))
        return ScriptedMove.call("send_message", channel_id=LINK, text=text)
    tries = [s for s in this_stage if s.kind == "actuation"]
    since_try = _after_last(this_stage, "actuation")
    if tries and not any(s.kind == "sent" for s in since_try):
        return ScriptedMove.call("send_message", channel_id=LINK, text="rejected, check")
    readings = [m for m in map(_TELEMETRY.match, _texts(this_stage, TELEMETRY)) if m]
    orders = _texts(since_try, ENGINEER)
    if not readings or not orders:
        return ScriptedMove.call("wait_for_notifications")
    reading = readings[-1]
    setting = reading["setting"]
    if misplay and misplay.kind == "slip" and misplay.stage == stage and not tries:
        value, unit = setting.split(" ", 1)
        setting = f"{int(value) + 1} {unit}"
    words = orders[-1].removeprefix("do: ").replace(", ", " and ")
    action = (
        f"{words} on the {panel['unit']} ({panel['configuration']}), set to {setting}, "
        f"hold {reading['hold']} seconds"
    )
    return ScriptedMove.call("actuate_panel", action=action)


def _ramble(panel: dict[str, Any], budget_chars: int) -> str:
    text = (
        f"Full panel readout so nothing is missed: {panel['alarm']} is lit, {panel['unit']} "
        f"tripped while {panel['configuration']}."
    )
    while len(text) <= budget_chars:
        text += f" Repeating for safety: {panel['alarm']} on {panel['unit']}."
    return text


# -- telemetry officer ------------------------------------------------------------------------


def telemetry_move(view: ScriptedView) -> ScriptedMove:
    """Return the telemetry officer's next move in the main phase."""
    steps = timeline(view, "actuate_panel", "actuation")
    brief = _briefing(steps)
    if brief is None or _round_over(steps):
        return ScriptedMove.finish("Nothing more to do this round.")
    reading: dict[str, Any] = brief
    for s in steps:
        if s.kind == "event" and s.data.get("kind") == "stage_resolved":
            reading = s.data.get("data", {}).get("telemetry") or reading
    if any(s.kind == "sent" for s in _after_last(steps, "event:stage_resolved")):
        return ScriptedMove.call("wait_for_notifications")
    text = f"{reading['name']}; set {reading['setting']}; hold {reading['hold_seconds']}s"
    return ScriptedMove.call("send_message", channel_id=LINK, text=text)


# -- systems engineer -------------------------------------------------------------------------


def engineer_move(view: ScriptedView, seed: int) -> ScriptedMove:
    """Return the systems engineer's next move in the main phase."""
    steps = timeline(view, "actuate_panel", "actuation")
    brief = _briefing(steps)
    if brief is None or _round_over(steps):
        return ScriptedMove.finish("Nothing more to do this round.")
    pending = _texts(_after_last(steps, "sent"), TELEMETRY) + _texts(
        _after_last(steps, "sent"), ASTRONAUT
    )
    if not pending:
        return ScriptedMove.call("wait_for_notifications")
    heard = [m["name"] for m in map(_TELEMETRY.match, _texts(steps, TELEMETRY)) if m]
    this_stage = _after_last(steps, "event:stage_resolved")
    fresh = [m for m in map(_TELEMETRY.match, _texts(_after_last(steps, "sent"), TELEMETRY)) if m]
    asked = any(t.startswith("rejected") for t in _texts(_after_last(steps, "sent"), ASTRONAUT))
    if not (fresh or asked) or not heard or heard[-1] not in FAULT_BY_NAME:
        return ScriptedMove.call("wait_for_notifications")
    fault = FAULT_BY_NAME[heard[-1]]
    table: dict[str, int] = brief["table"]
    variant = table[fault.fault_id]
    stage = 1 + sum(s.kind == "event" and s.data.get("kind") == "stage_resolved" for s in steps)
    misplay = plan_misplay(seed, view.round_number)
    first = not any(s.kind == "sent" for s in this_stage)
    if view.misplay and misplay.kind == "stale_table" and misplay.stage == stage and first:
        variant = (variant + 1) % VARIANTS
    words = ", ".join(fault.variants[variant].keywords)
    return ScriptedMove.call("send_message", channel_id=LINK, text=f"do: {words}")


# -- postmortem -------------------------------------------------------------------------------

_DEBRIEF = {
    "won": "Good round: alarm and unit, then name, setting, hold, then the procedure words.",
    "budget": "We ran the link dry. Panel in one short line from now on.",
    "other": "We ran out of time; post the moment you have your piece.",
}


def debrief_move(view: ScriptedView) -> ScriptedMove:
    """Send one short line on the postmortem channel, then finish."""
    return debrief(view, _DEBRIEF.__getitem__, {"budget": "budget"}, POSTMORTEM)
