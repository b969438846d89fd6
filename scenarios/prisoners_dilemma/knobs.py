"""Knobs of the prisoners' dilemma: the round's time limit and the payoff table (points)."""

from __future__ import annotations

from pydantic import Field, model_validator

from glossogen.knobs import BaseKnobs


class PrisonersDilemmaKnobs(BaseKnobs):
    """Knobs of the prisoners' dilemma; payoffs are points per player per round."""

    max_round_duration_seconds: float = Field(default=120.0, gt=0)
    payoff_temptation: int = Field(default=5, description="T: defecting against a cooperator.")
    payoff_reward: int = Field(default=3, description="R: both cooperate.")
    payoff_punishment: int = Field(default=1, description="P: both defect.")
    payoff_sucker: int = Field(default=0, description="S: cooperating against a defector.")

    @model_validator(mode="after")
    def _dilemma_ordering(self) -> PrisonersDilemmaKnobs:
        t, r, p, s = (
            self.payoff_temptation,
            self.payoff_reward,
            self.payoff_punishment,
            self.payoff_sucker,
        )
        if not t > r > p > s:
            raise ValueError(
                "payoffs must satisfy temptation > reward > punishment > sucker "
                f"(got {t}, {r}, {p}, {s})"
            )
        if not 2 * r > t + s:
            raise ValueError(
                f"payoffs must satisfy 2*reward > temptation + sucker (got 2*{r} <= {t}+{s})"
            )
        return self
