"""The run engine: one asyncio loop holding the agents, channels, budget and game clock.

:class:`RunEngine` builds a run's collaborators from its :class:`RunSetup` and hands each the
parts it needs: where the run is (``_position.py``), the seats (``_seating.py``), the channels
(``_messaging.py``), the round loop (``_rounds.py``), the request ledger, the spend cap and the
judge. It is what the scenario and the run session talk to: the scenario's round context, the
registrations, and the rounds.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ModelMessagesTypeAdapter

from glossogen.engine._clock import Clock
from glossogen.engine._context import EngineContext
from glossogen.engine._judge import RunJudge
from glossogen.engine._messaging import Channels
from glossogen.engine._position import Position
from glossogen.engine._requests import RequestLedger
from glossogen.engine._roster import JudgeSeat, Seat
from glossogen.engine._rounds import RoundLoop, RoundSummary
from glossogen.engine._runner import CycleDriver
from glossogen.engine._seating import Seating
from glossogen.engine._setup import RunSetup
from glossogen.engine._spend import SpendReservations
from glossogen.engine._tools import core_tools
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    Event,
    PostmortemEnded,
    PostmortemStarted,
    SimulationStarted,
)
from glossogen.rejudge._cache import JudgeCache
from glossogen.scenario import RoundContext
from glossogen.tracing import tracing_capabilities

if TYPE_CHECKING:
    from glossogen.engine._state import RunState


class RunEngine:
    """Plays one run. ``emit_sink`` receives every event (already stamped) in order.

    Its collaborators each own a part of the run and take what they need as explicit values:
    :class:`~glossogen.engine._position.Position` (where the run is),
    :class:`~glossogen.engine._seating.Seating` (the seats' agents and runners),
    :class:`~glossogen.engine._messaging.Channels` (channels, budgets and message counters, the
    tools' :class:`~glossogen.engine._messaging.Messaging`),
    :class:`~glossogen.engine._rounds.RoundLoop` (the rounds and their verdicts), the request
    ledger, the spend cap's reservations, the judge and the cycle driver. The engine stamps
    every event, makes the scenario's round context and is what the run session calls.
    """

    setup: RunSetup

    def __init__(
        self,
        setup: RunSetup,
        emit_sink: Callable[[Event], None],
        clock: Clock,
        state: RunState | None = None,
    ) -> None:
        """Build the channels and agents of ``setup``; nothing is logged until :meth:`start`.

        With ``state`` (a :class:`~glossogen.engine.RunState`, read from the log by
        :func:`glossogen.derive.read_state`) the run continues from the end of
        ``state.after_round``: histories, turn counts, seat models, verdicts and counters come
        from the log, not from a fresh start.
        """
        self._process_start = time.monotonic()
        self.setup = setup
        self.scenario = setup.scenario
        self.knobs = setup.knobs
        self.clock = clock
        self._sink = emit_sink
        self.emitted = 0
        """Events this engine (this process) has logged."""
        self.position = Position()
        self._changed = asyncio.Event()
        self.requests = RequestLedger(self.emit)
        """The billed model requests sent and not yet logged (agents' and the judge's)."""
        self.spend = SpendReservations(setup.spend_cap_usd, self.emit)
        """The spend cap's ledger: a billed request's worst case is reserved before it is sent."""
        self.seating = Seating(
            self.scenario,
            setup,
            self.position,
            clock,
            self.requests,
            self.spend,
            self.rng,
            state.tool_calls if state is not None else {},
        )
        self.specs = self.seating.specs
        self.runners = self.seating.runners
        self.channels = Channels(
            self.scenario,
            self.knobs,
            self.specs,
            tuple(s.agent_id for s in setup.seats),
            self.runners,
            self.position,
            self.emit,
            self.changed,
            self.rng,
            lambda: self.context,
        )
        self.judge = self._judge(setup.judge) if setup.judge else None
        self.driver = CycleDriver(
            self.emit,
            self.changed,
            setup.max_agent_turns,
            self.channels.mark_batch_read,
            clock.sleep,
            self.rng,
        )
        self.seating.seat([_as_logged(s, state) for s in setup.seats], core_tools(self.channels))
        self.rounds = RoundLoop(
            self.scenario,
            self.knobs,
            setup.seats,
            setup.provider,
            self.position,
            self.seating,
            self.channels,
            self.judge,
            self.driver,
            clock,
            self.emit,
            self._changed,
            lambda: self.context,
            lambda: self.process_seconds,
            self,
            lambda: self.emitted,
        )
        if state is not None:
            self._restore(state)

    def _judge(self, seat: JudgeSeat) -> RunJudge:
        """The in-run judge, its requests watched, capped and ledgered as a seat's are."""
        return RunJudge(
            seat.model,
            seat.provider,
            seat.model_settings,
            self.emit,
            [
                *tracing_capabilities(self.setup.tracing),
                Hooks[Any](model_request=self.seating.watched("judge", seat.model, seat.provider)),
                self.spend.hooks("judge", seat.provider, seat.model),
                self.requests.hooks(),  # innermost: logs model_request_sent before it goes
            ],
            self.clock.sleep,
            cache_key=f"{self.setup.run_id}:judge",
            model_override=self.setup.judge_model,
            answers=self.setup.judge_answers
            or (JudgeCache(self.setup.judge_cache) if self.setup.judge_cache else None),
        )

    @property
    def round_number(self) -> int:
        """The round being played (0 before round 1)."""
        return self.position.round_number

    @property
    def phase(self) -> Literal["setup", "main", "postmortem"]:
        """The phase being played."""
        return self.position.phase

    @property
    def process_seconds(self) -> float:
        """Wall-clock seconds since this engine was built (this process's share of the run)."""
        return round(time.monotonic() - self._process_start, 3)

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Stamp ``event`` (clock, round, phase), hand it to the sink and wake the monitor."""
        event.timestamp = self.clock.wall()
        event.round_number = self.position.round_number
        if not isinstance(event, (PostmortemStarted, PostmortemEnded)):
            event.phase = self.position.phase
        self._sink(event)
        self.emitted += 1
        self._changed.set()

    def changed(self) -> None:
        """Tell the round monitor that agent state moved."""
        self._changed.set()

    # -- agents -----------------------------------------------------------------------------

    def _restore(self, state: RunState) -> None:
        self.seating.restore(state)
        self.channels.restore(state)
        self.rounds.restore(state)

    def rng(self, *key: object) -> random.Random:
        """Return a random source seeded from the run's seed, the round and ``key``."""
        keys = (self.knobs.seed, self.position.round_number, *key)
        return random.Random(":".join(str(k) for k in keys))

    # -- run life ---------------------------------------------------------------------------

    @property
    def context(self) -> RoundContext:
        """The scenario-facing context of the current round."""
        return EngineContext(
            self.position,
            self.knobs,
            self.channels,
            self.seating,
            self.judge,
            self.clock,
            self.emit,
            self.rng,
        )

    def start(self) -> None:
        """Log ``simulation_started`` and one ``agent_registered`` per seat."""
        from glossogen.knobs import knobs_to_config

        s = self.setup
        self.emit(
            SimulationStarted(
                run_id=s.run_id,
                scenario_name=self.scenario.name,
                scenario_description=self.scenario.description,
                scenario_config=knobs_to_config(self.knobs),
                model=s.model,
                provider=s.provider,
                channel_ids=list(self.channels.channels),
                versions=s.versions,
                lineage=s.lineage,
                max_agent_turns=s.max_agent_turns,
                run_timeout_seconds=s.run_timeout_seconds,
                spend_cap_usd=s.spend_cap_usd,
                group_slug=s.group_slug,
                clock=self.clock.kind,
            )
        )
        for seat in s.seats:
            self._register(seat)

    def _register(self, seat: Seat) -> None:
        spec = self.specs[seat.agent_id]
        runner = self.runners[seat.agent_id]
        self.emit(
            AgentRegistered(
                agent_id=seat.agent_id,
                role=spec.role,
                display_name=spec.display_name,
                team_id=spec.team_id,
                model=seat.model,
                provider=seat.provider,
                model_settings=seat.model_settings,
                tools=sorted(t.name for t in runner.agent._function_toolset.tools.values()),  # noqa: SLF001
                channels=self.channels.channels_of(seat.agent_id),
            )
        )

    def register_anew(self) -> list[str]:
        """Register again each seat whose configured settings differ from what it sends.

        For a resume under a changed config (``--allow-config-change``): a seat keeps the
        model and provider its log last registered or swapped, and from now on sends the
        settings the config gives it. Each such seat gets ``agent_registered`` with those
        settings, then its history logged again from index 0 (a registration starts a fresh
        history in the ledger), so the log records what it sends.

        Returns:
            The seats registered again, in seat order.
        """
        changed: list[str] = []
        for configured in self.setup.seats:
            runner = self.runners[configured.agent_id]
            if configured.model_settings == runner.model_settings:
                continue
            runner.model_settings = dict(configured.model_settings)
            seat = Seat(
                agent_id=configured.agent_id,
                model=runner.model,
                provider=runner.provider,
                model_settings=runner.model_settings,
            )
            self._register(seat)
            if runner.history:
                self.emit(
                    AgentHistoryAppended(
                        agent_id=seat.agent_id,
                        messages=ModelMessagesTypeAdapter.dump_python(runner.history, mode="json"),
                        from_index=0,
                    )
                )
            changed.append(seat.agent_id)
        return changed

    @property
    def every_agent_out(self) -> bool:
        """True when no agent can take part any more (turn limit or repeated failures)."""
        return self.seating.every_agent_out

    async def play_round(self, round_number: int) -> RoundSummary:
        """Play round ``round_number``: main phase, verdicts, then the postmortem if enabled."""
        return await self.rounds.play_round(round_number)

    async def finish_round(self, round_number: int) -> RoundSummary:
        """Play only the postmortem of a round whose verdict is already recorded (resume)."""
        return await self.rounds.finish_round(round_number)


def _as_logged(seat: Seat, state: RunState | None) -> Seat:
    """The seat as the log last registered or swapped it (the ledger wins over the config)."""
    if state is None or seat.agent_id not in state.seats:
        return seat
    model, provider, settings = state.seats[seat.agent_id]
    return Seat(agent_id=seat.agent_id, model=model, provider=provider, model_settings=settings)
