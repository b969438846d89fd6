"""Ruling on an actuation: what a stage requires, and the deterministic (scripted) check.

The check applies the naive-reader rule: it looks only for plain words. An action passes when it
names the stage's procedure variant (every keyword) and no other variant of the fault, names the
tripped unit and no other unit of its subsystem, names the unit's configuration and no other,
states the setting with its unit and no other value in that unit, and states the hold in seconds
and no other hold. A fault id, a variant number or a table key counts for nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from glossogen.scenario import JudgeDecision
from scenarios.orbital_anomaly.catalogue import (
    CONFIGURATIONS,
    SUBSYSTEM_BY_KEY,
    FaultStage,
    OrbitalCase,
    Variant,
)

_SECONDS = (
    re.compile(r"(\d+)\s*-?\s*(?:s|sec|secs|second|seconds)\b", re.IGNORECASE),
    re.compile(r"\bhold(?:s|ing)?\s+(?:it\s+|for\s+)*(\d+)\b(?!\s*[a-z%°])", re.IGNORECASE),
)
_UNIT_WORDS: dict[str, str] = {
    "percent": r"(?:percent|per cent|%|pct)",
    "kilopascals": r"(?:kilopascals?|kpa)",
    "amps": r"(?:amps?|amperes?|a)",
    "degrees": r"(?:degrees?|deg|°)",
    "volts": r"(?:volts?|v)",
    "rpm": r"(?:rpm|revolutions per minute)",
    "degrees per hour": r"(?:degrees? per hour|deg/h|°/h)",
    "degrees Celsius": r"(?:degrees? celsius|degrees? c|°c|c)",
    "kilohertz": r"(?:kilohertz|khz)",
}


def _word(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class Requirement:
    """What one stage's actuation must be: the variant and the stage's parameters."""

    stage: FaultStage
    variant: Variant

    @classmethod
    def of(cls, case: OrbitalCase, stage: int) -> Requirement:
        """Return the requirement of ``stage`` (1-based) of ``case``."""
        return cls(case.stages[stage - 1], case.variant(stage))

    def expected(self) -> str:
        """The fully filled procedure in plain words (what the judge reads)."""
        s = self.stage
        steps = self.variant.steps.format(setting=s.setting_text())
        return (
            f"On the {s.unit}, which is in its {s.configuration} configuration: {steps}; "
            f"hold for {s.hold_seconds} seconds."
        )


def settings_named(action: str, unit: str) -> set[int]:
    """Return every value ``action`` states in ``unit`` (``45 percent``, ``45%``)."""
    pattern = re.compile(r"(\d+)\s*" + _UNIT_WORDS[unit] + r"(?![a-z])", re.IGNORECASE)
    return {int(n) for n in pattern.findall(action)}


def seconds_named(action: str) -> set[int]:
    """Return every hold time ``action`` states: ``30 s``, ``30 seconds``, ``hold 30``."""
    return {int(n) for pattern in _SECONDS for n in pattern.findall(action)}


def check_action(action: str, need: Requirement) -> JudgeDecision:
    """Rule on ``action`` against ``need`` deterministically.

    Returns:
        Success with a short confirmation, or failure naming the first fact that is wrong.
    """
    s, fault = need.stage, need.stage.fault
    if not need.variant.named_in(action):
        return JudgeDecision(False, "the action is not this stage's procedure")
    others = [v for v in fault.variants if v is not need.variant and v.named_in(action)]
    if others:
        return JudgeDecision(False, "the action mixes in another procedure")
    units = [u for u in SUBSYSTEM_BY_KEY[fault.subsystem].units if _word(u).search(action)]
    if units != [s.unit]:
        return JudgeDecision(False, f"wrong unit: needed the {s.unit}, got {_join(units)}")
    configs = [c for c in CONFIGURATIONS if _word(c).search(action)]
    if configs != [s.configuration]:
        return JudgeDecision(
            False, f"wrong configuration: needed {s.configuration}, got {_join(configs)}"
        )
    values = settings_named(action, fault.setting_unit)
    if values != {s.setting}:
        got = _join([f"{v} {fault.setting_unit}" for v in sorted(values)])
        return JudgeDecision(False, f"wrong setting: needed {s.setting_text()}, got {got}")
    seconds = seconds_named(action)
    if seconds != {s.hold_seconds}:
        got = _join([f"{v} s" for v in sorted(seconds)])
        return JudgeDecision(False, f"wrong hold: needed {s.hold_seconds} s, got {got}")
    return JudgeDecision(
        True, f"procedure on the {s.unit} at {s.setting_text()}, held {s.hold_seconds} s"
    )


def _join(items: list[str]) -> str:
    return ", ".join(items) or "none"
