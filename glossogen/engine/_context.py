"""The scenario's context of a round (:class:`~glossogen.scenario.RoundContext`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import random

    from glossogen.engine._engine import RunEngine
    from glossogen.eventlog import Event
    from glossogen.scenario import ItemRuling, JudgeDecision


class EngineContext:
    """The :class:`~glossogen.scenario.RoundContext` the engine hands to its scenario.

    A round's view of the run as the scenario may use it: the round and phase as they were
    when it was made, and the engine's scenario-facing calls.
    """

    def __init__(self, engine: RunEngine) -> None:
        self._engine = engine
        self.round_number = engine.round_number
        self.phase: Literal["main", "postmortem"] = (
            "postmortem" if engine.phase == "postmortem" else "main"
        )
        self.knobs = engine.knobs

    def emit(self, event: Event) -> None:
        self._engine.emit(event)

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        self._engine.brief(agent_id, text, data)

    def notify(
        self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
    ) -> None:
        self._engine.notify(agent_id, kind, text, data)

    async def judge(
        self, question: str, instructions: str, scripted: Callable[[], JudgeDecision]
    ) -> JudgeDecision:
        return await self._engine.rule(question, instructions, scripted)

    async def judge_items(
        self,
        question: str,
        instructions: str,
        scripted: Callable[[], ItemRuling],
        expected_items: int,
    ) -> ItemRuling:
        return await self._engine.rule_items(question, instructions, scripted, expected_items)

    def team_chars(self, team_id: str) -> int:
        return self._engine.channels.team_chars.get(team_id, 0)

    def rng(self, *key: object) -> random.Random:
        return self._engine.rng(*key)

    def out_of_turns(self) -> list[str]:
        return self._engine.seating.out_of_turns

    def now(self) -> float:
        return self._engine.clock.now()
