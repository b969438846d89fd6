"""Events of the veyru scenario: the round's ground truth, and each judged treatment."""

from __future__ import annotations

from typing import Literal

from glossogen.eventlog import Event


class VeyruCaseStarted(Event):
    """A round's case was drawn: its answer key, logged for analysis (no agent sees this).

    Attributes:
        stages: One entry per stage, in order: ``stage``, ``motif_id``, ``motif_name`` (what
            the observer sees), ``cure_motif_id`` and ``procedure`` (what cures it this round).
        remap: The star's table, motif id -> motif id whose procedure cures it.
        face: The round's starting face.
        hold_seconds: The round's hold time, seconds.
        intensity_level: The round's intensity level.
        veiled: True in a calm round (identity remap, one stage).
        budget_chars: The link's budget this round, characters.
        attempts_per_stage: Treatments allowed per stage.
    """

    event_type: Literal["veyru_case_started"] = "veyru_case_started"
    stages: list[dict[str, str | int]]
    remap: dict[str, str]
    face: str
    hold_seconds: int
    intensity_level: int
    veiled: bool
    budget_chars: int
    attempts_per_stage: int


class VeyruStabilizationJudged(Event):
    """The judge ruled on one ``apply_treatment`` call.

    Attributes:
        stage: The stage treated (1-based).
        attempt: Which attempt at this stage it was (1-based).
        action: The observer's action text, as sent.
        success: True when the treatment stabilized the stage.
        reason: The judge's one-line reason.
        round_lost: True when this failure used the stage's last attempt.
    """

    event_type: Literal["veyru_stabilization_judged"] = "veyru_stabilization_judged"
    stage: int
    attempt: int
    action: str
    success: bool
    reason: str
    round_lost: bool = False
