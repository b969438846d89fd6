"""Events of drive_module_repair: the round's answer key, and each judged replacement."""

from __future__ import annotations

from typing import Any, Literal

from glossogen.eventlog import Event


class DriveModuleRepairCaseStarted(Event):
    """A round's case was drawn or injected: its whole answer key (no seat sees this).

    Attributes:
        modules: The case's modules as data (``DriveCase.model_dump()["modules"]``).
        stages: One entry per fault in the order they are met: ``stage``, ``module``,
            ``component``, ``symptom``, ``expected`` (the filled steps).
        budget_chars: The bay's budget this round, characters.
        judge_votes: Judge calls per replacement.
        injected: True when the case came from a scheduled ``inject_case``.
    """

    event_type: Literal["drive_module_repair_case_started"] = "drive_module_repair_case_started"
    modules: list[dict[str, Any]]
    stages: list[dict[str, Any]]
    budget_chars: int
    judge_votes: int
    injected: bool = False


class DriveModuleRepairReplacementJudged(Event):
    """The judge ruled on one ``service_component`` call, by majority of its votes.

    Attributes:
        step: The fault worked on (1-based, in the order faults are met).
        attempt: Which attempt at this fault it was (1-based).
        expected: The replacement as the judge saw it: module, component, ordered steps.
        action: The technician's action, as sent.
        votes: Each call's ruling, in order: ``{"success": bool, "reason": str}``.
        match: The majority's ruling.
        reason: The reason of a call on the majority side.
    """

    event_type: Literal["drive_module_repair_replacement_judged"] = (
        "drive_module_repair_replacement_judged"
    )
    step: int
    attempt: int
    expected: str
    action: str
    votes: list[dict[str, Any]]
    match: bool
    reason: str
