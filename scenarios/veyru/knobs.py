"""Knobs of the veyru scenario: budget, case size, attempts, the star's parameter ranges."""

from __future__ import annotations

from pydantic import Field, model_validator

from glossogen.knobs import BaseKnobs, JudgeModelSettings

MAX_STAGES = 3
"""Most motifs one round's case can chain."""


class VeyruKnobs(BaseKnobs):
    """Knobs of the veyru scenario. Units are in the names (seconds, characters)."""

    max_round_duration_seconds: float = Field(
        default=300.0, gt=0, description="Main-phase time limit per round, seconds from its start."
    )
    round_budget_chars: int = Field(
        default=150,
        ge=20,
        le=10_000,
        description="Characters both agents may send on 'link' per round, together; one more "
        "and the veyru collapses (round lost).",
    )
    min_stages: int = Field(
        default=1, ge=1, le=MAX_STAGES, description="Fewest motifs a round's case chains."
    )
    max_stages: int = Field(
        default=3, ge=1, le=MAX_STAGES, description="Most motifs a round's case chains."
    )
    attempts_per_stage: int = Field(
        default=1,
        ge=1,
        le=5,
        description="Treatments the observer may try per stage; the last failed one loses the "
        "round.",
    )
    min_hold_seconds: int = Field(
        default=3, ge=1, le=120, description="Shortest hold time the star can set, seconds."
    )
    max_hold_seconds: int = Field(
        default=12, ge=1, le=120, description="Longest hold time the star can set, seconds."
    )
    intensity_levels: int = Field(
        default=5, ge=2, le=9, description="Highest intensity level the star can set (from 1)."
    )
    calm_rounds: list[int] = Field(
        default_factory=list,
        description="Rounds in which the star is veiled: one stage, no remap (the manual "
        "applies as written). Each must be within 1..round_count.",
    )
    postmortem_after_swap: bool = Field(
        default=True,
        description="Once a scheduled swap_agent has brought a new model into a seat, every "
        "later postmortem tells both agents so, and asks them to re-agree their shorthand. "
        "Needs postmortem_enabled.",
    )
    judge_model_settings: JudgeModelSettings = Field(
        default_factory=lambda: JudgeModelSettings(temperature=0.0),
        description="Settings sent to the in-run judge; temperature 0 for steady rulings.",
    )

    @model_validator(mode="after")
    def _veyru_cross_fields(self) -> VeyruKnobs:
        if self.min_stages > self.max_stages:
            raise ValueError(
                f"min_stages ({self.min_stages}) must not exceed max_stages ({self.max_stages})"
            )
        if self.min_hold_seconds > self.max_hold_seconds:
            raise ValueError(
                f"min_hold_seconds ({self.min_hold_seconds}) must not exceed max_hold_seconds "
                f"({self.max_hold_seconds})"
            )
        if self.postmortem_after_swap and not self.postmortem_enabled:
            raise ValueError(
                "postmortem_after_swap=true requires postmortem_enabled=true "
                "(set postmortem_after_swap=false to run without postmortems)"
            )
        late = [r for r in self.calm_rounds if not 1 <= r <= self.round_count]
        if late:
            raise ValueError(f"calm_rounds: {late} outside 1..round_count ({self.round_count})")
        return self
