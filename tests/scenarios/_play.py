"""Scripted plays of a scenario through the real engine on a virtual clock, for scenario tests."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from glossogen.engine import RunEngine, RunSetup, VirtualClock, resolve_judge, resolve_seats
from glossogen.scenario import Scenario, scenario_dir

START = datetime(2026, 1, 1, tzinfo=UTC)


def preset(cls: type[Scenario], name: str = "knobs_default", **overrides: Any) -> Any:
    """The scenario's preset ``name`` with ``overrides``, validated by its knobs model."""
    base = json.loads((scenario_dir(cls) / f"{name}.json").read_text())
    return cls.knobs_model.model_validate({**base, **overrides})


class Play:
    """One finished run: its round summaries and every event it logged."""

    def __init__(self, cls: type[Scenario], knobs: Any) -> None:
        self.knobs = knobs
        self.scenario = cls(knobs)
        self.events: list[Any] = []
        self.summaries: list[Any] = []

    async def run(self) -> Play:
        seats = resolve_seats(self.scenario, self.knobs, "scripted", "scripted")
        judge = resolve_judge(self.scenario, self.knobs, seats, "scripted")
        setup = RunSetup(
            f"{self.scenario.name}/test", self.scenario, self.knobs, "scripted", "scripted",
            seats, judge,
        )  # fmt: skip
        engine = RunEngine(setup, self.events.append, VirtualClock(START))
        engine.start()
        for n in range(1, self.knobs.round_count + 1):
            self.summaries.append(await engine.play_round(n))
        return self

    def verdicts(self) -> list[tuple[bool, str]]:
        return [(s.verdicts[0].success, s.verdicts[0].reason) for s in self.summaries]

    def of(self, cls: type, round_number: int | None = None) -> list[Any]:
        return [
            e for e in self.events if isinstance(e, cls) and round_number in (None, e.round_number)
        ]


def play(cls: type[Scenario], knobs: Any) -> Play:
    """Play ``knobs.round_count`` rounds of ``cls`` with scripted seats and judge."""
    return asyncio.run(Play(cls, knobs).run())
