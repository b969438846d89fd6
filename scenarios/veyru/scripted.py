"""The scripted policy of both seats: sensible, terse, and wrong on purpose in misplayed rounds.

Each policy rebuilds its state from what its agent was shown this phase (briefing data, messages,
world events, tool results) and returns one move. Good play: the observer sends its terse notes
on the stage's signs, waits, applies the engineer's one-line answer word for word, and repeats
per stage; the engineer matches the notes to a motif of the manual, applies the star's shift and
answers ``<verb> <face> <seconds>s L<level>``. A round's misplay is drawn from the seed and the
round, so both seats agree on it without talking:

- ``unmapped``: the engineer forgets the shift and sends the procedure of the motif it saw (in a
  veiled round, where that would be right, it misreads the hold time by one second instead);
- ``ramble``: the observer describes one stage at length and overruns the link budget;
- ``wrong_face``: the observer mixes up the face when applying one stage's treatment.

With ``attempts_per_stage`` above 1 a misplay can be recovered from: each mistake is made on the
stage's first attempt only, and after a failure the observer reports "no change" and retries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

from glossogen.scenario import ScriptedMove, ScriptedView, Seen, timeline
from glossogen.scenario import debrief_move as debrief
from scenarios.veyru.motifs import BY_ID, FACES, MOTIFS, STAR, Motif

OBSERVER = "field_observer"
ENGINEER = "stabilization_engineer"
LINK = "link"
POSTMORTEM = "postmortem"
ROUND_OVER_EVENTS = ("veyru_collapsed", "veyru_lost")

MisplayKind = Literal["unmapped", "ramble", "wrong_face"]
MISPLAY_KINDS: tuple[MisplayKind, ...] = ("unmapped", "ramble", "wrong_face")


@dataclass(frozen=True)
class Misplay:
    """The round's mistake: its kind and the stage (1-based) at which it happens."""

    kind: MisplayKind
    stage: int


def plan_misplay(seed: int, round_number: int, stages: int) -> Misplay:
    """Return the mistake of a misplayed round, the same for both seats."""
    rng = random.Random(f"{seed}:{round_number}:veyru-misplay")
    return Misplay(rng.choice(MISPLAY_KINDS), rng.randint(1, stages))


def _after_last(steps: list[Seen], kind: str) -> list[Seen]:
    last = max((i for i, s in enumerate(steps) if s.kind == kind), default=-1)
    return steps[last + 1 :]


def _from_partner(steps: list[Seen], me: str) -> list[str]:
    return [
        s.data.get("text", "")
        for s in steps
        if s.kind == "message"
        and s.data.get("channel_id") == LINK
        and s.data.get("sender_id") != me
    ]


def _round_over(steps: list[Seen]) -> bool:
    return any(s.kind == "event" and s.data.get("kind") in ROUND_OVER_EVENTS for s in steps) or any(
        s.kind == "treatment" and (s.data.get("round_lost") or s.data.get("all_stable"))
        for s in steps
    )


def _briefing(steps: list[Seen], key: str) -> dict[str, Any] | None:
    return next((s.data for s in steps if s.kind == "briefing" and key in s.data), None)


# -- field observer ---------------------------------------------------------------------------


def observer_move(view: ScriptedView, seed: int) -> ScriptedMove:
    """Return the field observer's next move in the main phase."""
    steps = timeline(view, "apply_treatment", "treatment")
    brief = _briefing(steps, "symptoms")
    if brief is None or _round_over(steps):
        return ScriptedMove.finish("Nothing more to do this round.")
    current: dict[str, Any] = brief
    for s in steps:
        if s.kind == "treatment" and s.data.get("next_stage"):
            current = s.data["next_stage"]
    stage = int(current["stage"])
    misplay = plan_misplay(seed, view.round_number, int(brief["stages"])) if view.misplay else None
    since = _after_last(steps, "treatment")
    orders = _from_partner(since, view.agent_id)
    if orders:
        action = f"As instructed: {orders[-1]}"
        first_try = not any(s.kind == "treatment" and s.data.get("stage") == stage for s in steps)
        if misplay and misplay.kind == "wrong_face" and misplay.stage == stage and first_try:
            action = _swap_face(action)
        return ScriptedMove.call("apply_treatment", action=action)
    if any(s.kind == "sent" for s in since):
        return ScriptedMove.call("wait_for_notifications")
    notes = ", ".join(current["cues"])
    treated = [s.data for s in steps if s.kind == "treatment"]
    retry = bool(treated) and treated[-1].get("status") == "failed"
    text = f"no change: {notes}" if retry else notes
    if misplay and misplay.kind == "ramble" and misplay.stage == stage and not retry:
        text = _ramble(str(current["symptoms"]), int(brief["budget_chars"]))
    return ScriptedMove.call("send_message", channel_id=LINK, text=text)


def _swap_face(action: str) -> str:
    for i, face in enumerate(FACES):
        if face in action:
            return action.replace(face, FACES[(i + 1) % len(FACES)])
    return action


def _ramble(symptoms: str, budget_chars: int) -> str:
    text = (
        f"Writing down everything I see, to be safe. {symptoms} I can't tell which part of this "
        "matters, so you get all of it, and I will keep watching it closely."
    )
    while len(text) <= budget_chars:
        text += f" Again, to be sure: {symptoms}"
    return text


# -- stabilization engineer -------------------------------------------------------------------


def identify(text: str) -> Motif | None:
    """Return the manual's motif whose cues ``text`` mentions most (None when none match)."""
    lowered = text.lower()
    scored = [(sum(c in lowered for c in m.cues), i) for i, m in enumerate(MOTIFS)]
    best, index = max(scored, key=lambda pair: (pair[0], -pair[1]))
    return MOTIFS[index] if best else None


def engineer_move(view: ScriptedView, seed: int) -> ScriptedMove:
    """Return the stabilization engineer's next move in the main phase."""
    steps = timeline(view, "apply_treatment", "treatment")
    reading = _briefing(steps, "remap")
    if reading is None or _round_over(steps):
        return ScriptedMove.finish("Nothing more to do this round.")
    events = [s.data for s in steps if s.kind == "event"]
    stage = 1 + sum(e.get("kind") == "stage_stabilized" for e in events)
    attempt = 1 + sum(
        e.get("kind") == "treatment_failed" and e.get("data", {}).get("stage") == stage
        for e in events
    )
    pending = _from_partner(_after_last(steps, "sent"), view.agent_id)
    if not pending:
        return ScriptedMove.call("wait_for_notifications")
    motif = next((m for m in map(identify, reversed(pending)) if m is not None), None)
    if motif is None:
        return ScriptedMove.call("send_message", channel_id=LINK, text="signs again, short?")
    cure = BY_ID[reading["remap"][motif.motif_id]]
    seconds = int(reading["hold_seconds"])
    misplay = plan_misplay(seed, view.round_number, int(reading["stages"]))
    slip = view.misplay and misplay.kind == "unmapped" and misplay.stage == stage
    if slip and attempt == 1:
        if reading["veiled"]:
            seconds += 1
        else:
            cure = motif
    text = f"{cure.procedure.verb} {reading['face']} {seconds}s L{reading['intensity_level']}"
    return ScriptedMove.call("send_message", channel_id=LINK, text=text)


# -- postmortem -------------------------------------------------------------------------------

_DEBRIEF = {
    ("won", OBSERVER): "Worked well: two-word signs, one-line answer. Same again next round.",
    ("won", ENGINEER): "Good round. Keep it: signs as short notes, answer as verb face secs level.",
    ("budget", OBSERVER): "My fault, I wrote far too much. Short notes only from now on.",
    ("budget", ENGINEER): "We overran the link. Signs in a few words, please; I will stay terse.",
    ("treatment", OBSERVER): "Treatment missed. I will copy your line exactly; check it twice.",
    ("treatment", ENGINEER): f"I will recheck the {STAR} shift and face before I send.",
    ("other", OBSERVER): "We ran out of time; I will describe the moment I see the signs.",
    ("other", ENGINEER): "We ran out of time; I will answer as soon as the signs arrive.",
}


def debrief_move(view: ScriptedView) -> ScriptedMove:
    """Send one short line on the postmortem channel, then finish."""
    role = OBSERVER if view.agent_id == OBSERVER else ENGINEER
    return debrief(
        view,
        lambda outcome: _DEBRIEF[(outcome, role)],
        {"budget exceeded": "budget", "wrong treatment": "treatment"},
        POSTMORTEM,
    )
