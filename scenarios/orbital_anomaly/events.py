"""Events of orbital_anomaly: the round's answer key, and each judged actuation."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from glossogen.eventlog import Event
from glossogen.scenario import Code


class OrbitalAnomalyCaseStarted(Event):
    """A round's case was drawn or injected: its whole answer key (no seat sees this).

    Attributes:
        stages: One entry per stage, in order: ``stage``, ``fault_id``, ``fault_name``,
            ``subsystem``, ``alarm``, ``unit``, ``configuration``, ``hold_seconds``, ``setting``
            (with its unit), ``variant`` (index) and ``expected`` (the filled procedure).
        variant_index: The round's secret variant index (0 when the cipher is off).
        table: The configuration table: fault id -> variant index, every fault.
        budget_chars: The link's budget this round, characters.
        injected: True when the case came from a scheduled ``inject_case``.
    """

    event_type: Literal["orbital_anomaly_case_started"] = "orbital_anomaly_case_started"
    stages: list[dict[str, Any]]
    variant_index: Annotated[int, Code("variant {}")]
    table: Annotated[dict[str, int], Code()]
    """Hidden fields (:class:`~glossogen.scenario.Code`): ``check-scenario`` refuses a judge prompt
    holding the variant or a fault id of the table."""
    budget_chars: int
    injected: bool = False


class OrbitalAnomalyActuationJudged(Event):
    """The judge ruled on one ``actuate_panel`` call.

    Attributes:
        stage: The stage acted on (1-based).
        attempt: Which attempt at this stage it was (1-based).
        expected: The stage's procedure, fully filled, as the judge saw it.
        action: The astronaut's action, as sent.
        match: True when the action clears the stage.
        reason: The judge's one-line reason.
    """

    event_type: Literal["orbital_anomaly_actuation_judged"] = "orbital_anomaly_actuation_judged"
    stage: int
    attempt: int
    expected: str
    action: str
    match: bool
    reason: str
