"""Knobs of signal_game: roles, the attribute space, targets, difficulty, budget, pass mark."""

from __future__ import annotations

from pydantic import Field, model_validator

from glossogen.knobs import BaseKnobs
from scenarios.signal_game.space import LABELS, MAX_ATTRIBUTES, MAX_VALUES, distractor_pool


class SignalGameKnobs(BaseKnobs):
    """Knobs of signal_game. Units are in the names (seconds, characters, shares)."""

    max_round_duration_seconds: float = Field(
        default=600.0, gt=0, description="Main-phase time limit per round, seconds from its start."
    )
    postmortem_duration_seconds: float = Field(
        default=120.0, gt=0, description="Postmortem time limit, seconds from its start."
    )
    role_swap_every: int = Field(
        default=1,
        ge=0,
        description="Rounds between role swaps (agent_a sends first); 0 = agent_a always sends.",
    )
    targets_per_round: int = Field(default=5, ge=1, le=50, description="Targets per round.")
    candidate_count: int = Field(
        default=8,
        ge=2,
        le=len(LABELS),
        description="Objects the receiver chooses among per target (the target included).",
    )
    attributes: int = Field(
        default=4, ge=1, le=MAX_ATTRIBUTES, description="Attributes of every object."
    )
    values_per_attribute: int = Field(
        default=4, ge=2, le=MAX_VALUES, description="Values each attribute can take."
    )
    distractor_overlap: int = Field(
        default=2,
        ge=0,
        description="Attributes every distractor shares with its target (the difficulty knob); "
        "below attributes.",
    )
    chars_per_target: int = Field(
        default=40,
        ge=1,
        le=2000,
        description="Link budget per target, characters; the round's budget is this times "
        "targets_per_round, and passing it ends the round lost.",
    )
    pass_share: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="Share of the round's targets chosen correctly for the round to be won.",
    )

    @property
    def round_budget_chars(self) -> int:
        """The round's link budget: ``chars_per_target * targets_per_round`` characters."""
        return self.chars_per_target * self.targets_per_round

    @model_validator(mode="after")
    def _signal_cross_fields(self) -> SignalGameKnobs:
        if self.distractor_overlap >= self.attributes:
            raise ValueError(
                f"distractor_overlap ({self.distractor_overlap}) must be below attributes "
                f"({self.attributes})"
            )
        pool = distractor_pool(self.attributes, self.values_per_attribute, self.distractor_overlap)
        if pool < self.candidate_count - 1:
            raise ValueError(
                f"candidate_count {self.candidate_count} needs {self.candidate_count - 1} "
                f"distractors sharing {self.distractor_overlap} "
                f"attribute{'' if self.distractor_overlap == 1 else 's'} with the target; the "
                f"space ({self.attributes} x {self.values_per_attribute}) has {pool}"
            )
        return self
