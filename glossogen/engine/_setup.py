"""A run's explicit dependencies: what the engine is built from, besides its sink and clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.models import Model

from glossogen.engine._roster import JudgeSeat, Seat
from glossogen.knobs import BaseKnobs
from glossogen.rejudge._cache import JudgeCache
from glossogen.scenario import Scenario
from glossogen.tracing import TracingHandle


@dataclass
class RunSetup:
    """Everything a run needs besides its event sink and clock."""

    run_id: str
    scenario: Scenario
    knobs: BaseKnobs
    model: str
    provider: str
    seats: list[Seat]
    judge: JudgeSeat | None
    max_agent_turns: int = 200
    run_timeout_seconds: float | None = None
    spend_cap_usd: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    lineage: dict[str, Any] | None = None
    group_slug: str = "local"
    tracing: TracingHandle | None = None
    """The Langfuse tracing handle when tracing is configured, else None."""
    agent_models: dict[str, Model] = field(default_factory=dict)
    """Seats played by a given pydantic-ai model (a scenario's tests: ``FunctionModel``s) in
    place of the one their provider builds; the seat's provider and model are logged as
    configured."""
    judge_model: Model | None = None
    """The in-run judge's model in place of the one its provider builds (a replay's)."""
    judge_cache: str | None = None
    """The judge cache folder the in-run judge asks first (``--judge-cache``), or None."""
    judge_answers: JudgeCache | None = None
    """A judge cache asked in place of ``judge_cache`` (a replay's: the recorded rulings)."""
