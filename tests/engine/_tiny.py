"""A tiny purpose-built scenario whose agents follow a policy the test gives, and a player.

``play`` runs whole rounds in-process on a :class:`VirtualClock` (scripted provider, no judge)
and returns every event in order, so a test reads the log exactly as a user would.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import Field

from glossogen.engine import RoundSummary, RunEngine, RunSetup, VirtualClock, resolve_seats
from glossogen.eventlog import Event, Verdict
from glossogen.knobs import BaseKnobs
from glossogen.scenario import (
    AgentSpec,
    ChannelSpec,
    RoundContext,
    Scenario,
    ScriptedMove,
    ScriptedView,
    scenario_tool,
)

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

START = datetime(2026, 1, 1, tzinfo=UTC)
LATENCY = 1.0
"""Game seconds one scripted model call takes (the engine sleeps it on the virtual clock)."""

Policy = Callable[[ScriptedView], ScriptedMove]

CHANNELS = (
    ChannelSpec("link", metered=True),
    ChannelSpec("chat", metered=False),
    ChannelSpec("postmortem", metered=False, phase="postmortem"),
)


class TinyKnobs(BaseKnobs):
    """Base knobs with a short main phase."""

    max_round_duration_seconds: float = Field(default=60.0, gt=0)


class Tiny(Scenario):
    """Agents ``a`` and ``b`` (by default) on a metered ``link``, a free ``chat`` and a postmortem.

    The one scenario tool, ``declare``, records its caller; ``settle_when`` decides ``is_settled``
    from the scenario (default: never). Every view handed to the policy is kept in ``views``.
    """

    name = "tiny"
    description = "Test scenario: agents follow the policy the test gives."
    knobs_model = TinyKnobs
    scripted_latency_seconds = LATENCY

    def __init__(
        self,
        knobs: BaseKnobs,
        policy: Policy,
        *,
        seats: tuple[str, ...] = ("a", "b"),
        channels: tuple[ChannelSpec, ...] = CHANNELS,
        budget: int | None = None,
        settle_when: Callable[[Tiny], bool] = lambda s: False,
    ) -> None:
        super().__init__(knobs)
        self.policy = policy
        self.seats = seats
        self._channels = channels
        self.budget = budget
        self.settle_when = settle_when
        self.declared: list[str] = []
        self.exceeded: list[tuple[int, str, int]] = []
        self.views: list[ScriptedView] = []

    def agents(self) -> list[AgentSpec]:
        return [AgentSpec(s, "tester", s.upper(), tools=("declare",)) for s in self.seats]

    def channels(self) -> list[ChannelSpec]:
        return list(self._channels)

    def budget_chars(self) -> int | None:
        return self.budget

    def system_prompt(self, agent: AgentSpec) -> str:
        return f"You are {agent.display_name}."

    def tools(self) -> list[Tool[Any]]:
        async def declare(ctx: ToolContext) -> dict[str, Any]:
            """Declare the round done."""
            self.declared.append(ctx.deps.agent_id)
            return {"status": "declared"}

        return [scenario_tool(declare)]

    def start_round(self, ctx: RoundContext) -> None:
        self.declared = []
        for seat in self.seats:
            ctx.brief(seat, f"Round {ctx.round_number} begins.", {"round": ctx.round_number})

    def on_budget_exceeded(self, ctx: RoundContext, channel_id: str, used_chars: int) -> None:
        self.exceeded.append((ctx.round_number, channel_id, used_chars))

    def is_settled(self) -> bool:
        return self.settle_when(self)

    def verdicts(self, ctx: RoundContext) -> list[Verdict]:
        return [
            Verdict(
                team_id="team", success=bool(self.declared), reason=f"declared: {self.declared}"
            )
        ]

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        self.views.append(view)
        return self.policy(view)


@dataclass
class Played:
    """The outcome of :func:`play`: the engine, every event in order, one summary per round."""

    engine: RunEngine
    events: list[Event]
    summaries: list[RoundSummary]
    out_after_round: list[bool] = field(default_factory=list)

    def of(self, event_type: str, **match: Any) -> list[Event]:
        """Return the events of ``event_type`` whose attributes equal ``match``."""
        return [
            e
            for e in self.events
            if e.event_type == event_type and all(getattr(e, k) == v for k, v in match.items())
        ]

    def types(self, round_number: int | None = None) -> list[str]:
        """Return the event types in order (of one round when ``round_number`` is given)."""
        return [e.event_type for e in self.events if round_number in (None, e.round_number)]

    def per_agent(self, event_type: str, round_number: int | None = None) -> Counter[str]:
        """Count ``event_type`` events per ``agent_id``."""
        return Counter(
            e.agent_id  # type: ignore[attr-defined]  # the events of() selects carry agent_id
            for e in self.of(event_type)
            if round_number in (None, e.round_number)
        )

    def results(self, agent_id: str, tool_name: str) -> list[Any]:
        """Return what ``tool_name`` returned to ``agent_id``, in order."""
        return [
            e.result  # type: ignore[attr-defined]  # tool_result_received events carry result
            for e in self.of("tool_result_received", agent_id=agent_id, tool_name=tool_name)
        ]


def play(scenario: Tiny, rounds: int = 1, max_agent_turns: int = 200) -> Played:
    """Play rounds 1..``rounds`` of ``scenario`` with scripted seats on a virtual clock."""
    knobs = scenario.knobs
    seats = resolve_seats(scenario, knobs, "scripted", "scripted")
    events: list[Event] = []
    out: list[bool] = []

    async def main() -> tuple[RunEngine, list[RoundSummary]]:
        setup = RunSetup(
            "tiny/1", scenario, knobs, "scripted", "scripted", seats, None, max_agent_turns
        )
        engine = RunEngine(setup, events.append, VirtualClock(START))
        engine.start()
        summaries = []
        for n in range(1, rounds + 1):
            summaries.append(await engine.play_round(n))
            out.append(engine.every_agent_out)
        return engine, summaries

    engine, summaries = asyncio.run(main())
    return Played(engine, events, summaries, out)


def knobs(**values: Any) -> TinyKnobs:
    """Return :class:`TinyKnobs` with ``values`` (postmortem off unless asked for)."""
    return TinyKnobs(**{"postmortem_enabled": False, **values})


# -- policies --------------------------------------------------------------------------------


def finish(view: ScriptedView) -> ScriptedMove:
    """Stop at once, every cycle."""
    return ScriptedMove.finish()


def sends(*script: tuple[str, str], postmortem: tuple[tuple[str, str], ...] = ()) -> Policy:
    """Send each ``(channel_id, text)`` in turn (one per model call), then stop.

    ``script`` is played in the main phase, ``postmortem`` in the postmortem. Every reply counts
    as done (sent, conflict or error alike).
    """

    def policy(view: ScriptedView) -> ScriptedMove:
        steps = script if view.phase == "main" else postmortem
        done = len(view.tool_results("send_message"))
        if done < len(steps):
            channel_id, text = steps[done]
            return ScriptedMove.call("send_message", channel_id=channel_id, text=text)
        return ScriptedMove.finish()

    return policy


def by_agent(**policies: Policy) -> Policy:
    """Dispatch to ``policies[view.agent_id]``; agents not named stop at once."""
    return lambda view: policies.get(view.agent_id, finish)(view)
