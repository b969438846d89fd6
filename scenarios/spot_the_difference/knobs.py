"""Knobs of spot_the_difference: teams and the link, the scenes, the differences, submissions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from glossogen.knobs import BaseKnobs, JudgeModelSettings
from scenarios.spot_the_difference.scene import KINDS, Kind

ObjectCount = Literal[12, 15, 18]
OBJECT_COUNTS: tuple[ObjectCount, ...] = (12, 15, 18)
"""How many objects a scene A may hold."""
DIFFERENCE_COUNTS = (2, 3, 4)
"""How many differences an ordinary round plants (weighted by ``difference_count_weights``)."""


class SpotTheDifferenceKnobs(BaseKnobs):
    """Knobs of spot_the_difference. Units are in the names (seconds, characters, cells)."""

    max_round_duration_seconds: float = Field(
        default=600.0, gt=0, description="Main-phase time limit per round, seconds from its start."
    )
    postmortem_duration_seconds: float = Field(
        default=120.0, gt=0, description="Postmortem time limit, seconds from its start."
    )
    team_count: Literal[1, 2] = Field(
        default=2,
        description="1: one team (viewer_left, viewer_right); 2: teams a and b on the same "
        "scenes (viewer_left_a, viewer_right_a, viewer_left_b, viewer_right_b).",
    )
    shared_link: bool = Field(
        default=False,
        description="True: both teams talk on one 'link' both can read, each team charged only "
        "for its own members' characters; needs team_count 2. False: each team its own link.",
    )
    round_budget_chars: int = Field(
        default=-1,
        ge=-1,
        le=20_000,
        description="Characters each team may send on its link per round; -1 means no cap, "
        "0 is refused (no team could ever be eligible). A team over its cap is not eligible "
        "that round.",
    )
    all_must_submit: bool = Field(
        default=True,
        description="True: both teammates submit and both answers must be the full set; "
        "False: the first submission is the team's answer and locks it.",
    )
    grid_size: int = Field(
        default=12, ge=3, le=40, description="Cells per side of the square scene grid."
    )
    object_counts: list[ObjectCount] = Field(
        default_factory=lambda: list(OBJECT_COUNTS),
        min_length=1,
        description="How many objects scene A may hold; each round draws one of these.",
    )
    difference_count_weights: list[float] = Field(
        default_factory=lambda: [0.4, 0.4, 0.2],
        description="Weights of 2, 3 and 4 differences in a round (exactly 3 items, each >= 0, "
        "not all 0).",
    )
    difference_kinds: list[Kind] = Field(
        default_factory=lambda: list(KINDS),
        min_length=1,
        description="Kinds of difference planted: attribute, moved, added, removed.",
    )
    kind_weights: list[float] | None = Field(
        default=None,
        description="Weight of each enabled kind, item for item with difference_kinds "
        "(None: equal weights).",
    )
    easy_round_numbers: list[int] = Field(
        default_factory=list,
        description="Rounds with exactly one difference. Each within 1..round_count, each "
        "listed once.",
    )
    judge_model_settings: JudgeModelSettings = Field(
        default_factory=lambda: JudgeModelSettings(temperature=0.0),
        description="Settings sent to the in-run judge; temperature 0 for steady rulings.",
    )

    @property
    def weights_of_kinds(self) -> list[float]:
        """The weight of each enabled kind (equal when ``kind_weights`` is None)."""
        return self.kind_weights or [1.0] * len(self.difference_kinds)

    @model_validator(mode="after")
    def _spot_cross_fields(self) -> SpotTheDifferenceKnobs:
        if self.shared_link and self.team_count != 2:
            raise ValueError(f"shared_link needs two teams (team_count is {self.team_count})")
        if len(set(self.difference_kinds)) != len(self.difference_kinds):
            raise ValueError(f"difference_kinds {self.difference_kinds}: a kind is listed twice")
        w = self.difference_count_weights
        if len(w) != len(DIFFERENCE_COUNTS) or any(x < 0 for x in w) or not any(w):
            raise ValueError(
                f"difference_count_weights {w}: need 3 weights (for 2, 3, 4 differences), "
                "each >= 0, not all 0"
            )
        kw = self.kind_weights
        bad_kw = kw is not None and (
            len(kw) != len(self.difference_kinds) or any(x < 0 for x in kw) or not any(kw)
        )
        if bad_kw:
            raise ValueError(
                f"kind_weights {kw}: need one weight >= 0 per kind of difference_kinds "
                f"({len(self.difference_kinds)}), not all 0"
            )
        most = max(self.object_counts) + max(DIFFERENCE_COUNTS)
        if self.grid_size**2 < 2 * most:
            raise ValueError(
                f"grid_size {self.grid_size} is too small for {max(self.object_counts)} objects: "
                f"needs at least {2 * most} cells, has {self.grid_size**2}"
            )
        if self.round_budget_chars == 0:
            raise ValueError(
                "round_budget_chars 0: every team would be over budget every round; "
                "use -1 for no cap or a positive number of characters"
            )
        twice = sorted({r for r in self.easy_round_numbers if self.easy_round_numbers.count(r) > 1})
        if twice:
            raise ValueError(
                f"easy_round_numbers {self.easy_round_numbers}: round(s) {twice} listed twice"
            )
        late = [r for r in self.easy_round_numbers if not 1 <= r <= self.round_count]
        if late:
            raise ValueError(
                f"easy_round_numbers: {late} outside 1..round_count ({self.round_count})"
            )
        return self
