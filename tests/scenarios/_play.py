"""Scripted plays of a scenario through the real engine on a virtual clock, for scenario tests."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from types import SimpleNamespace
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


_PLAYED: dict[tuple[type[Scenario], str], Play] = {}


def played(cls: type[Scenario], knobs: Any) -> Play:
    """:func:`play`, once per scenario and knobs in a test process: for tests that only read it."""
    key = (cls, knobs.model_dump_json())
    if key not in _PLAYED:
        _PLAYED[key] = play(cls, knobs)
    return _PLAYED[key]


class Round:
    """The scenario contract's round context for rules tests: it records what a scenario emits,
    briefs and notifies, and its judge applies the scenario's own scripted check.

    ``while_judging``, when set, is awaited inside each judge call, before the ruling: what
    happens on the link while an action is being ruled on (a second call, the budget passed).
    """

    def __init__(self, round_number: int = 1, phase: str = "main") -> None:
        self.round_number = round_number
        self.phase = phase
        self.events: list[Any] = []
        self.briefed: list[tuple[str, str]] = []
        self.notified: list[tuple[str, str, str]] = []  # (agent_id, kind, text)
        self.while_judging: Callable[[], Awaitable[None]] | None = None

    def now(self) -> float:
        return 0.0

    def emit(self, event: Any) -> None:
        self.events.append(event)

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        self.briefed.append((agent_id, text))

    def notify(self, agent_id: str, kind: str, text: str, data: Any = None) -> None:
        self.notified.append((agent_id, kind, text))

    async def judge(self, question: str, instructions: str, scripted: Callable[[], Any]) -> Any:
        if self.while_judging is not None:
            await self.while_judging()
        return scripted()

    def rng(self, *key: object) -> random.Random:
        return random.Random(str(key))

    def out_of_turns(self) -> list[str]:
        return []

    def tool_ctx(self, agent_id: str) -> Any:
        """The ``ctx`` a scenario tool receives when ``agent_id`` calls it this round."""
        return SimpleNamespace(deps=SimpleNamespace(agent_id=agent_id, round=self))


def call(scenario: Scenario, ctx: Round, agent_id: str, **args: Any) -> Any:
    """Call ``scenario``'s one tool as ``agent_id`` in round ``ctx`` and return its reply."""
    (tool,) = scenario.tools()
    return asyncio.run(tool.function(ctx.tool_ctx(agent_id), **args))  # type: ignore[call-arg]  # a tool's function is typed by its own signature, called here as pydantic-ai does
