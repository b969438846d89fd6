"""Knobs of orbital_anomaly: the link budget, the case's size, the cipher, easy rounds."""

from __future__ import annotations

from pydantic import Field, ValidationError, model_validator

from glossogen.knobs import BaseKnobs, JudgeModelSettings
from scenarios.orbital_anomaly.catalogue import OrbitalCase, check_case


def first_error(exc: ValidationError) -> str:
    """Return a validation error's first problem as ``<field path>: <message>``."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "payload"
    return f"{where}: {error['msg']}"


MAX_FAULTS = 5
"""Most faults one round's case can chain."""


class OrbitalAnomalyKnobs(BaseKnobs):
    """Knobs of orbital_anomaly. Units are in the names (seconds, characters, shares)."""

    max_round_duration_seconds: float = Field(
        default=600.0, gt=0, description="Main-phase time limit per round, seconds from its start."
    )
    postmortem_duration_seconds: float = Field(
        default=120.0, gt=0, description="Postmortem time limit, seconds from its start."
    )
    round_budget_chars: int = Field(
        default=600,
        ge=50,
        le=20_000,
        description="Characters the three seats may send on 'link' per round, together; one "
        "more and the vehicle is lost (round lost).",
    )
    budget_notice_share: float = Field(
        default=0.75,
        gt=0.0,
        lt=1.0,
        description="Share of the link budget at which every seat is warned, once per round.",
    )
    fault_count_weights: list[float] = Field(
        default_factory=lambda: [0.3, 0.3, 0.2, 0.12, 0.08],
        min_length=1,
        max_length=MAX_FAULTS,
        description="Weight of a case with 1, 2, ... faults (item i weighs i+1 faults); at most "
        f"{MAX_FAULTS} items, each >= 0, not all 0.",
    )
    min_hold_seconds: int = Field(
        default=10, ge=1, le=600, description="Shortest hold time telemetry can call for, seconds."
    )
    max_hold_seconds: int = Field(
        default=90, ge=1, le=600, description="Longest hold time telemetry can call for, seconds."
    )
    cipher_enabled: bool = Field(
        default=True,
        description="False forces procedure variant index 0 every round (the configuration "
        "table then gives every fault variant 0); the cases are otherwise the same.",
    )
    easy_round_numbers: list[int] = Field(
        default_factory=list,
        description="Rounds whose case is one low-priority fault. Each within 1..round_count.",
    )
    judge_model_settings: JudgeModelSettings = Field(
        default_factory=lambda: JudgeModelSettings(temperature=0.0),
        description="Settings sent to the in-run judge; temperature 0 for steady rulings.",
    )

    @model_validator(mode="after")
    def _orbital_cross_fields(self) -> OrbitalAnomalyKnobs:
        if any(w < 0 for w in self.fault_count_weights) or not any(self.fault_count_weights):
            raise ValueError(
                f"fault_count_weights {self.fault_count_weights}: every weight must be >= 0 "
                "and one must be > 0"
            )
        if self.min_hold_seconds > self.max_hold_seconds:
            raise ValueError(
                f"min_hold_seconds ({self.min_hold_seconds}) must not exceed max_hold_seconds "
                f"({self.max_hold_seconds})"
            )
        late = [r for r in self.easy_round_numbers if not 1 <= r <= self.round_count]
        if late:
            raise ValueError(
                f"easy_round_numbers: {late} outside 1..round_count ({self.round_count})"
            )
        for event in self.scheduled_events:
            if event.kind == "inject_case":
                try:
                    check_case(OrbitalCase.model_validate(event.payload))
                except ValidationError as exc:
                    raise ValueError(
                        f"inject_case at round {event.round}: {first_error(exc)}"
                    ) from None
                except ValueError as exc:
                    raise ValueError(f"inject_case at round {event.round}: {exc}") from None
        return self
