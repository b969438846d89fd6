"""Ruling on a replacement: what a fault requires, and the deterministic (scripted) check.

Strict on every parameter and on the order of the steps, lenient on wording, and a naive
reader: only plain words count, a part code counts for nothing. An action passes when it names
the module and the component (and no other), has every step of the component's class in the
class's order (and no step the class lacks), and states exactly the sheet's fastener count and
kind, pattern, tool, torque in N·m, passes, calibration routine and hold in seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from glossogen.scenario import JudgeDecision
from scenarios.drive_module_repair.catalogue import (
    CLASSES,
    COMPONENTS,
    MODULE_NAMES,
    PATTERNS,
    ROUTINES,
    Replacement,
    Stage,
    StepKind,
)

VERBS: dict[StepKind, re.Pattern[str]] = {
    "unfasten": re.compile(r"\b(?:remov|unfasten|undo|undid|loosen|take out|took out)", re.I),
    "fit": re.compile(r"\b(?:fit|install|mount)", re.I),
    "torque": re.compile(r"\b(?:torqu|tighten)", re.I),
    "calibrate": re.compile(r"\bcalibrat", re.I),
    "hold": re.compile(r"\b(?:hold|held|wait|discharg|leak-check|dwell)", re.I),
}
"""How each step kind reads in an action (any of the words, from a word start)."""

_FASTENED = re.compile(r"(\d+)\s*(bolts?|screws?)\b", re.I)
_TORQUE = re.compile(r"(\d+)\s*(?:N·m|N\.m|Nm|N m|newton[- ]metres?|newton[- ]meters?)", re.I)
_PASSES = re.compile(r"(\d+)\s*pass(?:es)?\b", re.I)
_SECONDS = re.compile(r"(\d+)\s*-?\s*(?:s|sec|secs|second|seconds)\b", re.I)
TOOLS: tuple[str, ...] = tuple(sorted({t for c in CLASSES for t in c.tools}))


def _named(options: tuple[str, ...] | list[str], text: str) -> list[str]:
    return [o for o in options if re.search(r"(?<!\w)" + re.escape(o) + r"(?!\w)", text, re.I)]


@dataclass(frozen=True)
class Requirement:
    """What one fault's replacement must be: the module and the sheet's procedure."""

    module: str
    replacement: Replacement

    @classmethod
    def of(cls, stage: Stage) -> Requirement:
        """Return the requirement of ``stage``."""
        return cls(stage.module.module, stage.replacement)

    def expected(self) -> str:
        """The expected replacement in plain words, every step and parameter in order."""
        steps = "; ".join(
            f"({n}) {text}" for n, text in enumerate(self.replacement.step_texts(), start=1)
        )
        return (
            f"Drive module {self.module}: replace the {self.replacement.component}. Steps, in "
            f"this order: {steps}."
        )


def check_action(action: str, need: Requirement) -> JudgeDecision:
    """Rule on ``action`` against ``need`` deterministically.

    Returns:
        Success with a short confirmation, or failure naming the first fact that is wrong.
    """
    r, c = need.replacement, need.replacement.service_class
    modules = _named(MODULE_NAMES, action)
    if modules != [need.module]:
        return JudgeDecision(False, f"wrong module: needed {need.module}, got {_join(modules)}")
    parts = _named([p.name for p in COMPONENTS], action)
    if parts != [r.component]:
        return JudgeDecision(False, f"wrong component: needed {r.component}, got {_join(parts)}")
    found = {kind: pattern.search(action) for kind, pattern in VERBS.items()}
    missing = [kind for kind in c.steps if found[kind] is None]
    if missing:
        return JudgeDecision(False, f"missing step: {missing[0]}")
    extra = [kind for kind, m in found.items() if m is not None and kind not in c.steps]
    if extra:
        return JudgeDecision(False, f"a step this component does not take: {extra[0]}")
    starts = [found[kind].start() for kind in c.steps]  # type: ignore[union-attr]  # every kind was found above
    if starts != sorted(starts):
        return JudgeDecision(False, "steps out of order")
    fastened = {(int(n), kind.lower().rstrip("s") + "s") for n, kind in _FASTENED.findall(action)}
    if fastened != {(r.fasteners, c.fastener)}:
        got = _join([f"{n} {k}" for n, k in sorted(fastened)])
        return JudgeDecision(
            False, f"wrong fasteners: needed {r.fasteners} {c.fastener}, got {got}"
        )
    checks: list[tuple[str, list[str], list[str]]] = [
        ("pattern", _named(PATTERNS, action), [r.pattern]),
        ("tool", _named(TOOLS, action), [r.tool]),
        ("torque", sorted(set(_TORQUE.findall(action))), [str(r.torque_nm)]),
        ("passes", sorted(set(_PASSES.findall(action))), [str(r.passes)]),
        ("routine", _named(ROUTINES, action), [r.routine] if r.routine else []),
        ("hold", sorted(set(_SECONDS.findall(action))),
         [str(r.hold_seconds)] if r.hold_seconds else []),
    ]  # fmt: skip
    for name, stated, want in checks:
        if stated != want:
            return JudgeDecision(False, f"wrong {name}: needed {_join(want)}, got {_join(stated)}")
    return JudgeDecision(True, f"{r.component} on {need.module} replaced as the sheet says")


def _join(items: list[str]) -> str:
    return ", ".join(items) or "none"
