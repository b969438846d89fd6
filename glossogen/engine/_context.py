"""The scenario's context of a round (:class:`~glossogen.scenario.RoundContext`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import random

    from glossogen.engine._clock import Clock
    from glossogen.engine._judge import RunJudge
    from glossogen.engine._messaging import Channels
    from glossogen.engine._position import Position
    from glossogen.engine._seating import Seating
    from glossogen.eventlog import Event
    from glossogen.knobs import BaseKnobs
    from glossogen.scenario import ItemRuling, JudgeDecision


class EngineContext:
    """The :class:`~glossogen.scenario.RoundContext` the engine hands to its scenario.

    A round's view of the run as the scenario may use it: the round and phase as they were
    when it was made; briefings and notices through the channels; rulings by the run's judge,
    or the scenario's scripted check when the run has none.
    """

    def __init__(
        self,
        position: Position,
        knobs: BaseKnobs,
        channels: Channels,
        seating: Seating,
        judge: RunJudge | None,
        clock: Clock,
        emit: Callable[[Event], None],
        rng: Callable[..., random.Random],
    ) -> None:
        self.round_number = position.round_number
        self.phase: Literal["main", "postmortem"] = (
            "postmortem" if position.phase == "postmortem" else "main"
        )
        self.knobs = knobs
        self._channels, self._seating, self._judge, self._clock = channels, seating, judge, clock
        self.emit = emit
        self.rng = rng

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        self._channels.brief(agent_id, text, data)

    def notify(
        self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
    ) -> None:
        self._channels.notify(agent_id, kind, text, data)

    async def judge(
        self, question: str, instructions: str, scripted: Callable[[], JudgeDecision]
    ) -> JudgeDecision:
        if self._judge is None:
            return scripted()
        return await self._judge.rule(question, instructions, scripted)

    async def judge_items(
        self,
        question: str,
        instructions: str,
        scripted: Callable[[], ItemRuling],
        expected_items: int,
    ) -> ItemRuling:
        if self._judge is None:
            return scripted().within(expected_items)
        return await self._judge.rule_items(question, instructions, scripted, expected_items)

    def team_chars(self, team_id: str) -> int:
        return self._channels.team_chars.get(team_id, 0)

    def out_of_turns(self) -> list[str]:
        return self._seating.out_of_turns

    def now(self) -> float:
        return self._clock.now()
