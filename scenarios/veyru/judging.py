"""Ruling on a treatment: the facts a stage requires, and the deterministic (scripted) check.

The check is lenient on wording and exact on facts. An action passes when it names the right
procedure (any of its keywords) and no other procedure, names the round's face and no other face,
gives the hold time in seconds and the intensity level, and both numbers are the round's. The
LLM judge gets the same facts in plain words (``prompts/judge.j2``), never the manual's codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from glossogen.scenario import JudgeDecision
from scenarios.veyru.motifs import FACES, MOTIFS, Procedure

_UNIT = r"(?:s|sec|secs|second|seconds)\b"
_SECONDS = (
    re.compile(r"(\d+)\s*-?\s*" + _UNIT, re.IGNORECASE),
    re.compile(r"\b(?:hold(?:s|ing)?|held)\s+(?:it\s+)?(?:for\s+)?(\d+)\b", re.IGNORECASE),
)
_LEVEL = re.compile(
    r"\b(?:intensity|strength|force|pressure|power|level|lvl|lv|l)\s*(?:level\s*)?(?:of\s*|at\s*)?"
    r"[:=#]?\s*(\d+)\b",
    re.IGNORECASE,
)
_FACE = re.compile(r"\b(" + "|".join(FACES) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Requirement:
    """What one stage's treatment must be: a procedure and this round's parameters."""

    procedure: Procedure
    face: str
    hold_seconds: int
    intensity_level: int

    def steps(self) -> str:
        """Return the procedure's steps in plain words, with the round's face filled in."""
        return self.procedure.steps.format(face=self.face)


def procedures_named(action: str) -> list[str]:
    """Return the names of every procedure whose keywords ``action`` uses, in manual order."""
    return [m.procedure.name for m in MOTIFS if m.procedure.pattern().search(action)]


def faces_named(action: str) -> set[str]:
    """Return the face names ``action`` mentions (lower case)."""
    return {f.lower() for f in _FACE.findall(action)}


def seconds_named(action: str) -> set[int]:
    """Return every hold time ``action`` states: ``6s``, ``6 sec``, ``6-second``, ``hold 6``."""
    return {int(n) for pattern in _SECONDS for n in pattern.findall(action)}


def levels_named(action: str) -> set[int]:
    """Return every intensity level ``action`` states: ``level 2``, ``L2``, ``intensity 2``."""
    return {int(n) for n in _LEVEL.findall(action)}


def check_action(action: str, need: Requirement) -> JudgeDecision:
    """Rule on ``action`` against ``need`` deterministically.

    Args:
        action: The observer's free-text description of what it did.
        need: The stage's required procedure and the round's parameters.

    Returns:
        Success with a short confirmation, or failure naming the first fact that is wrong.
    """
    named = procedures_named(action)
    want = need.procedure.name
    if want not in named:
        return JudgeDecision(False, f"wrong procedure: the stage needed {want.lower()}")
    if len(named) > 1:
        others = ", ".join(n.lower() for n in named if n != want)
        return JudgeDecision(False, f"hedged between procedures ({want.lower()} and {others})")
    faces = faces_named(action)
    if faces != {need.face}:
        got = ", ".join(sorted(faces)) or "none"
        return JudgeDecision(False, f"wrong face: needed {need.face}, got {got}")
    seconds = seconds_named(action)
    if seconds != {need.hold_seconds}:
        return JudgeDecision(
            False, f"wrong hold: needed {need.hold_seconds} s, got {_join(seconds)}"
        )
    levels = levels_named(action)
    if levels != {need.intensity_level}:
        return JudgeDecision(
            False, f"wrong intensity: needed level {need.intensity_level}, got {_join(levels)}"
        )
    return JudgeDecision(
        True,
        f"{want.lower()} on the {need.face} face, {need.hold_seconds} s at level "
        f"{need.intensity_level}",
    )


def _join(numbers: set[int]) -> str:
    return ", ".join(str(n) for n in sorted(numbers)) or "none"
