"""The scripted policy of the three seats: terse, complete, and wrong on purpose when misplayed.

Good play, per fault: the technician posts ``<module>: <symptom>``; the diagnostics engineer
looks the symptom up in that module's tree and posts ``<module>: <component>``; the spec
engineer posts ``<module> <component>: <steps>`` from that module's sheet; the technician
carries the steps out in that order. After a rejection the technician posts ``rejected, recheck
<module>`` and the spec engineer sends its steps again. A misplayed round's mistake is drawn from
the seed and the round, so every seat agrees on it without talking:

- ``order_swap``: the spec engineer's first answer for one fault swaps its first two steps;
- ``wrong_torque``: the technician's first attempt at one fault is 1 N·m off the torque;
- ``ramble``: the technician describes one fault at length and overruns the budget.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from glossogen.scenario import ScriptedMove, ScriptedView, Seen, timeline
from glossogen.scenario import debrief_move as debrief
from scenarios.drive_module_repair.catalogue import MODULE_NAMES, Replacement

TECHNICIAN = "field_technician"
DIAGNOSTICS = "diagnostics_engineer"
SPEC = "spec_engineer"
BAY = "bay"
POSTMORTEM = "postmortem"
ROUND_OVER = ("round_lost", "all_fixed")

MisplayKind = Literal["order_swap", "wrong_torque", "ramble"]
MISPLAY_KINDS: tuple[MisplayKind, ...] = ("order_swap", "wrong_torque", "ramble")
_MODULES = "|".join(MODULE_NAMES)
_REPORT = re.compile(rf"^(?P<module>{_MODULES}): (?P<what>[a-z -]+)$")
_STEPS = re.compile(rf"^(?P<module>{_MODULES}) (?P<component>[a-z ]+): (?P<steps>.+)$")
_TORQUE = re.compile(r"torque (\d+) Nm")


@dataclass(frozen=True)
class Misplay:
    """The round's mistake: its kind and the fault (1-based, in order met) where it happens."""

    kind: MisplayKind
    step: int


def plan_misplay(seed: int, round_number: int) -> Misplay:
    """Return the mistake of a misplayed round, the same for every seat (fault 1 or 2)."""
    rng = random.Random(f"{seed}:{round_number}:drive-misplay")
    return Misplay(rng.choice(MISPLAY_KINDS), rng.randint(1, 2))


def _after(seen: list[Seen], test: Any) -> list[Seen]:
    last = max((i for i, s in enumerate(seen) if test(s)), default=-1)
    return seen[last + 1 :]


def _texts(seen: list[Seen], sender: str) -> list[str]:
    return [
        str(s.data.get("text", ""))
        for s in seen
        if s.kind == "message"
        and s.data.get("channel_id") == BAY
        and s.data.get("sender_id") == sender
    ]


def _round_over(seen: list[Seen]) -> bool:
    return any(s.kind == "event" and s.data.get("kind") in ROUND_OVER for s in seen)


def _briefing(seen: list[Seen]) -> dict[str, Any] | None:
    return next((s.data for s in seen if s.kind == "briefing"), None)


def _opened(seen: list[Seen], key: str) -> dict[str, Any]:
    """Every module pushed to this seat so far (briefing, then ``module_opened``): name -> data."""
    found: dict[str, Any] = {}
    for s in seen:
        data = s.data if s.kind == "briefing" else s.data.get("data", {})
        if (s.kind == "briefing" or s.data.get("kind") == "module_opened") and key in data:
            found[data["module"]] = data[key]
    return found


# -- field technician -------------------------------------------------------------------------


def technician_move(view: ScriptedView, seed: int) -> ScriptedMove:
    """Return the field technician's next move in the main phase."""
    seen = timeline(view, "service_component", "service")
    brief = _briefing(seen)
    if brief is None or _round_over(seen):
        return ScriptedMove.finish("Nothing more to do this round.")
    fault: dict[str, Any] = brief
    for s in seen:
        if s.kind == "service" and s.data.get("next_fault"):
            fault = s.data["next_fault"]
    module, step = str(fault["module"]), int(fault["step"])
    misplay = plan_misplay(seed, view.round_number) if view.misplay else None
    this_fault = _after(seen, lambda s: s.kind == "service" and s.data.get("status") == "fixed")
    if not any(s.kind == "sent" for s in this_fault):
        text = f"{module}: {fault['symptom']}"
        if misplay and misplay.kind == "ramble" and misplay.step == step:
            text = _ramble(module, str(fault["symptom"]), int(brief["budget_chars"]))
        return ScriptedMove.call("send_message", channel_id=BAY, text=text)
    tries = [s for s in this_fault if s.kind == "service"]
    since_try = _after(this_fault, lambda s: s.kind == "service")
    if tries and not any(s.kind == "sent" for s in since_try):
        return ScriptedMove.call("send_message", channel_id=BAY, text=f"rejected, recheck {module}")
    answers = [m for m in map(_STEPS.match, _texts(since_try, SPEC)) if m and m["module"] == module]
    if not answers:
        return ScriptedMove.call("wait_for_notifications")
    answer = answers[-1]
    steps = answer["steps"]
    if misplay and misplay.kind == "wrong_torque" and misplay.step == step and not tries:
        steps = _TORQUE.sub(lambda m: f"torque {int(m[1]) + 1} Nm", steps)
    action = f"Drive module {module}, {answer['component']}: {steps}"
    return ScriptedMove.call("service_component", action=action)


def _ramble(module: str, symptom: str, budget_chars: int) -> str:
    text = f"Long report on {module} so nothing is lost: {symptom}, and it keeps going."
    while len(text) <= budget_chars:
        text += f" Once more on {module}: {symptom}."
    return text


# -- diagnostics engineer ---------------------------------------------------------------------


def diagnostics_move(view: ScriptedView) -> ScriptedMove:
    """Return the diagnostics engineer's next move in the main phase."""
    seen = timeline(view, "service_component", "service")
    if _briefing(seen) is None or _round_over(seen):
        return ScriptedMove.finish("Nothing more to do this round.")
    trees = _opened(seen, "tree")
    heard = _texts(_after(seen, lambda s: s.kind == "sent"), TECHNICIAN)
    reports = [m for m in map(_REPORT.match, heard) if m]
    known = [m for m in reports if m["what"] in trees.get(m["module"], {})]
    if not known:
        return ScriptedMove.call("wait_for_notifications")
    report = known[-1]
    component = trees[report["module"]][report["what"]]
    return ScriptedMove.call(
        "send_message", channel_id=BAY, text=f"{report['module']}: {component}"
    )


# -- spec engineer ----------------------------------------------------------------------------


def spec_move(view: ScriptedView, seed: int) -> ScriptedMove:
    """Return the spec engineer's next move in the main phase."""
    seen = timeline(view, "service_component", "service")
    if _briefing(seen) is None or _round_over(seen):
        return ScriptedMove.finish("Nothing more to do this round.")
    sheets = _opened(seen, "sheet")
    pending = _after(seen, lambda s: s.kind == "sent")
    asked = [m for m in map(_REPORT.match, _texts(pending, DIAGNOSTICS)) if m]
    recheck = any(t.startswith("rejected") for t in _texts(pending, TECHNICIAN))
    if not asked and not recheck:
        return ScriptedMove.call("wait_for_notifications")
    # A send's result does not echo its text, so the parts asked for so far stand for the
    # answers given: every diagnostics line is answered as it arrives.
    named = [(m["module"], m["what"]) for m in map(_REPORT.match, _texts(seen, DIAGNOSTICS)) if m]
    if not named:
        return ScriptedMove.call("wait_for_notifications")
    module, component = named[-1]
    order = list(dict.fromkeys(named))
    step = order.index((module, component)) + 1
    first = bool(asked)
    entry = next((r for r in sheets.get(module, []) if r["component"] == component), None)
    if entry is None:
        return ScriptedMove.call("wait_for_notifications")
    parts = Replacement.model_validate(entry).compact().split("; ")
    misplay = plan_misplay(seed, view.round_number)
    if view.misplay and misplay.kind == "order_swap" and misplay.step == step and first:
        parts[0], parts[1] = parts[1], parts[0]
    text = f"{module} {component}: {'; '.join(parts)}"
    return ScriptedMove.call("send_message", channel_id=BAY, text=text)


# -- postmortem -------------------------------------------------------------------------------

_DEBRIEF = {
    "won": "Good: module and symptom, then the part, then the steps in order. Keep it.",
    "budget": "We spent the bay's budget. Fewer words per step from now on.",
    "other": "We ran out of time; answer as soon as the part is named.",
}


def debrief_move(view: ScriptedView) -> ScriptedMove:
    """Send one short line on the postmortem channel, then finish."""
    return debrief(view, _DEBRIEF.__getitem__, {"budget": "budget"}, POSTMORTEM)
