"""Knobs of drive_module_repair: the bay budget, the workload's size, the judge's votes."""

from __future__ import annotations

from pydantic import Field, ValidationError, model_validator

from glossogen.knobs import BaseKnobs, JudgeModelSettings
from scenarios.drive_module_repair.catalogue import DriveCase, check_case

MAX_MODULES = 3
"""Most faulty modules one round's case can hold."""

MAX_FAULTS_PER_MODULE = 4
"""Most faulty components one module can hold."""


def _check_weights(name: str, weights: list[float]) -> None:
    if any(w < 0 for w in weights) or not any(weights):
        raise ValueError(f"{name} {weights}: every weight must be >= 0 and one must be > 0")


class DriveModuleRepairKnobs(BaseKnobs):
    """Knobs of drive_module_repair. Units are in the names (seconds, characters)."""

    max_round_duration_seconds: float = Field(
        default=2700.0, gt=0, description="Main-phase time limit per round, seconds from its start."
    )
    postmortem_duration_seconds: float = Field(
        default=900.0, gt=0, description="Postmortem time limit, seconds from its start."
    )
    round_budget_chars: int = Field(
        default=900,
        ge=50,
        le=50_000,
        description="Characters the three seats may send on 'bay' per round, together; one "
        "more and the round is lost.",
    )
    module_count_weights: list[float] = Field(
        default_factory=lambda: [0.5, 0.35, 0.15],
        min_length=1,
        max_length=MAX_MODULES,
        description="Weight of a case with 1, 2, ... faulty modules (item i weighs i+1 "
        f"modules); at most {MAX_MODULES} items, each >= 0, not all 0.",
    )
    fault_count_weights: list[float] = Field(
        default_factory=lambda: [0.4, 0.3, 0.2, 0.1],
        min_length=1,
        max_length=MAX_FAULTS_PER_MODULE,
        description="Weight of 1, 2, ... faulty components in a module (item i weighs i+1); at "
        f"most {MAX_FAULTS_PER_MODULE} items, each >= 0, not all 0.",
    )
    judge_votes: int = Field(
        default=3,
        ge=1,
        le=9,
        description="Judge calls per replacement; the majority rules. Odd.",
    )
    judge_model_settings: JudgeModelSettings = Field(
        default_factory=lambda: JudgeModelSettings(temperature=0.0),
        description="Settings sent to the in-run judge; temperature 0 for steady rulings.",
    )

    @model_validator(mode="after")
    def _drive_cross_fields(self) -> DriveModuleRepairKnobs:
        _check_weights("module_count_weights", self.module_count_weights)
        _check_weights("fault_count_weights", self.fault_count_weights)
        if self.judge_votes % 2 == 0:
            raise ValueError(f"judge_votes ({self.judge_votes}) must be odd, so a majority exists")
        for event in self.scheduled_events:
            if event.kind == "inject_case":
                try:
                    check_case(DriveCase.model_validate(event.payload))
                except ValidationError as exc:
                    error = exc.errors()[0]
                    where = ".".join(str(part) for part in error["loc"]) or "payload"
                    raise ValueError(
                        f"inject_case at round {event.round}: {where}: {error['msg']}"
                    ) from None
                except ValueError as exc:
                    raise ValueError(f"inject_case at round {event.round}: {exc}") from None
        return self
