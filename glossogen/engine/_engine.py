"""The run engine: one asyncio loop holding the agents, channels, budget and game clock.

This is the core loop of a run, so it is longer than most modules. A round goes: scheduled
events, ``round_started``, the scenario's briefings, the main phase until it is settled / every
agent is idle past the quiet floor / the time limit from phase start, ``round_ended``, the
verdicts, then the optional postmortem on the free channel.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models import Model

from glossogen.engine._clock import Clock
from glossogen.engine._judge import RunJudge
from glossogen.engine._messaging import Channels
from glossogen.engine._position import Position
from glossogen.engine._requests import RequestLedger
from glossogen.engine._roster import JudgeSeat, Seat, model_name
from glossogen.engine._runner import CycleDriver, seat_context
from glossogen.engine._seating import Seating
from glossogen.engine._spend import SpendReservations
from glossogen.engine._tools import core_tools
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    InjectionDelivered,
    PostmortemEnded,
    PostmortemStarted,
    RoundCompleted,
    RoundEnded,
    RoundResultRecorded,
    RoundStarted,
    ScheduledEventFired,
    SimulationStarted,
    Verdict,
)
from glossogen.knobs import BaseKnobs
from glossogen.rejudge._cache import JudgeCache
from glossogen.scenario import (
    AgentDeps,
    ItemRuling,
    JudgeDecision,
    Scenario,
)
from glossogen.tracing import TracingHandle, tracing_capabilities

if TYPE_CHECKING:
    from glossogen.engine._state import RunState

PhaseName = Literal["main", "postmortem"]
EndTrigger = Literal["settled", "all_idle", "timeout", "turn_limit", "agents_failed"]
RoundTrigger = EndTrigger | Literal["provider_failed", "judge_failed", "spend_cap"]
"""How a round's main phase ended, or why its verdicts were voided after it did (``spend_cap``:
the run's spend cap refused a judge call the verdict needed; ``turn_limit`` also when the phase
ended unsettled with a seat out of ``max_agent_turns``)."""
VOID_TRIGGERS = ("agents_failed", "turn_limit", "provider_failed", "judge_failed", "spend_cap")
"""A round that ended so was not played out: recorded void, never counted as a team's loss."""
LIMIT_TRIGGERS = ("turn_limit", "spend_cap")
"""Void for a limit the run was given, not for a failure: such a round does not make the run's
status ``error``."""


@dataclass
class RoundSummary:
    """What one round produced: verdicts, messages and characters sent (all channels)."""

    round_number: int
    verdicts: list[Verdict]
    trigger: str
    messages: int
    chars: int


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


class RunEngine:
    """Plays one run. ``emit_sink`` receives every event (already stamped) in order.

    The round loop; its collaborators each own a part of the run and take what they need as
    explicit values: :class:`~glossogen.engine._position.Position` (where the run is),
    :class:`~glossogen.engine._seating.Seating` (the seats' agents and runners),
    :class:`~glossogen.engine._messaging.Channels` (channels, budgets and message counters, the
    tools' :class:`~glossogen.engine._messaging.Messaging`), the request ledger, the spend cap's
    reservations, the judge and the cycle driver.
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
        self.position = Position()
        self._changed = asyncio.Event()
        self.postmortem_enabled = self.knobs.postmortem_enabled
        self.void_rounds: list[int] = []
        """Rounds made void by failing provider calls (agents or judge)."""
        self.recorded: dict[int, tuple[list[Verdict], bool]] = {}
        """Verdicts per round as recorded, and whether the round was void."""
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
            state.tool_calls if state is not None else None,
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
            answers=JudgeCache(self.setup.judge_cache) if self.setup.judge_cache else None,
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
    def total_messages(self) -> int:
        """Messages sent in the run (every process of it)."""
        return self.channels.total_messages

    @property
    def total_chars(self) -> int:
        """Characters of those messages."""
        return self.channels.total_chars

    @property
    def postmortem_messages(self) -> int:
        """Of :attr:`total_messages`, those sent in a postmortem."""
        return self.channels.postmortem_messages

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
        self._changed.set()

    def changed(self) -> None:
        """Tell the round monitor that agent state moved."""
        self._changed.set()

    # -- agents -----------------------------------------------------------------------------

    def _restore(self, state: RunState) -> None:
        for agent_id, runner in self.runners.items():
            runner.history = list(state.histories.get(agent_id, []))
            runner.logged = list(runner.history)
            runner.turns = state.turns.get(agent_id, 0)
            runner.made = max(runner.turns, state.made.get(agent_id, 0))
            runner.out = runner.made >= self.setup.max_agent_turns
        self.recorded = dict(state.recorded)
        channels = self.channels
        channels.total_messages, channels.total_chars = state.total_messages, state.total_chars
        channels.postmortem_messages = state.postmortem_messages
        channels.seq = state.message_seq
        self.position.round_number = state.after_round
        through = state.after_round + (1 if state.pending_verdicts else 0)
        for event in self.knobs.scheduled_events:
            if event.kind == "set_postmortem" and event.round <= through:
                self.postmortem_enabled = bool(event.enabled)

    def rng(self, *key: object) -> random.Random:
        """Return a random source seeded from the run's seed, the round and ``key``."""
        keys = (self.knobs.seed, self.position.round_number, *key)
        return random.Random(":".join(str(k) for k in keys))

    # -- what the scenario calls --------------------------------------------------------------

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        """Log a private briefing and queue it as the agent's next prompt."""
        self.emit(InjectionDelivered(agent_id=agent_id, text=text, data=data or {}))
        runner = self.runners[agent_id]
        runner.prompts.append((text, data or {}))
        runner.idle = False
        runner.wake.set()

    def notify(
        self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
    ) -> None:
        """Log a world event for one agent and put it in its inbox."""
        self.channels.notify(agent_id, kind, text, data)

    async def rule(
        self, question: str, instructions: str, scripted: Callable[[], JudgeDecision]
    ) -> JudgeDecision:
        """Ask the run's judge; a scenario without a judge falls back to its scripted check."""
        if self.judge is None:
            return scripted()
        return await self.judge.rule(question, instructions, scripted)

    async def rule_items(
        self,
        question: str,
        instructions: str,
        scripted: Callable[[], ItemRuling],
        expected_items: int,
    ) -> ItemRuling:
        """Ask the run's judge for an item ruling; without a judge the scripted check decides."""
        if self.judge is None:
            return scripted().within(expected_items)
        return await self.judge.rule_items(question, instructions, scripted, expected_items)

    # -- run life ---------------------------------------------------------------------------

    @property
    def context(self) -> _RoundContext:
        """The scenario-facing context of the current round."""
        return _RoundContext(self)

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
        from pydantic_ai.messages import ModelMessagesTypeAdapter

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
    def rounds_won(self) -> int:
        """Rounds recorded as won by every team (void rounds never count)."""
        return sum(
            1 for v, void in self.recorded.values() if v and not void and all(x.success for x in v)
        )

    @property
    def any_agent_failed(self) -> bool:
        """True when some agent was taken out by failures (not by its turn limit)."""
        return any(r.out and r.failures for r in self.runners.values())

    @property
    def out_of_turns(self) -> list[str]:
        """Seats taken out by ``max_agent_turns`` (they make no more requests in this run)."""
        limit = self.setup.max_agent_turns
        return [r.spec.agent_id for r in self.runners.values() if r.out and r.made >= limit]

    @property
    def every_agent_out(self) -> bool:
        """True when no agent can take part any more (turn limit or repeated failures)."""
        return all(r.out for r in self.runners.values())

    async def play_round(self, round_number: int) -> RoundSummary:
        """Play round ``round_number``: main phase, verdicts, then the postmortem if enabled."""
        messages_before, chars_before = self.total_messages, self.total_chars
        self.position.round_number = round_number
        self.position.phase = "main"
        if self.judge is not None:
            self.judge.failed_in_round = self.judge.capped_in_round = False
        self._fire_scheduled(round_number)
        self.channels.open_round()
        self._open_phase()
        self.emit(RoundStarted())
        self.scenario.start_round(self.context)
        ended, elapsed = await self._run_phase("main", self.knobs.max_round_duration_seconds)
        self.emit(RoundEnded(trigger=ended, elapsed_seconds=elapsed))
        trigger: RoundTrigger = ended
        verdicts = self.scenario.verdicts(self.context)
        silent = [
            r.spec.agent_id
            for r in self.runners.values()
            if r.phase_failures and not r.phase_answers
        ]
        if self.judge is not None and self.judge.capped_in_round:
            trigger = "spend_cap"
        elif self.judge is not None and self.judge.failed_in_round:
            trigger = "judge_failed"
        elif silent and trigger not in ("agents_failed", "turn_limit"):
            trigger = "provider_failed"
        elif ended != "settled" and self.out_of_turns:
            # A seat its turn limit took out did not play the round to its end: what it did
            # not do is the cap, not a move (a missing move is never scored as one).
            trigger = "turn_limit"
        void = trigger in VOID_TRIGGERS
        if void and trigger not in LIMIT_TRIGGERS:
            self.void_rounds.append(round_number)
        for verdict in verdicts:
            self.emit(
                RoundResultRecorded(
                    team_id=verdict.team_id,
                    success=verdict.success and not void,
                    reason=f"void ({trigger}): {verdict.reason}" if void else verdict.reason,
                    void=void,
                )
            )
        self.recorded[round_number] = (verdicts, void)
        self.scenario.reveal_results(self.context, verdicts)
        await self._postmortem(verdicts)
        self.emit(RoundCompleted(process_seconds=self.process_seconds))
        return RoundSummary(
            round_number,
            verdicts,
            trigger,
            self.total_messages - messages_before,
            self.total_chars - chars_before,
        )

    async def finish_round(self, round_number: int) -> RoundSummary:
        """Play only the postmortem of a round whose verdict is already recorded (resume)."""
        messages_before, chars_before = self.total_messages, self.total_chars
        self.position.round_number = round_number
        verdicts, _ = self.recorded[round_number]
        await self._postmortem(verdicts)
        self.emit(RoundCompleted(process_seconds=self.process_seconds))
        return RoundSummary(
            round_number,
            verdicts,
            "reopened",
            self.total_messages - messages_before,
            self.total_chars - chars_before,
        )

    async def _postmortem(self, verdicts: list[Verdict]) -> None:
        postmortem = self.channels.postmortem_channels()
        if self.postmortem_enabled and postmortem and not self.every_agent_out:
            self.position.phase = "postmortem"
            self._open_phase()
            self.emit(PostmortemStarted(channel_id=postmortem[0]))
            for seat in self.setup.seats:
                self.brief(
                    seat.agent_id,
                    self.scenario.postmortem_briefing(
                        self.specs[seat.agent_id], verdicts, self.position.round_number
                    ),
                    {"verdicts": [v.model_dump() for v in verdicts]},
                )
            pm_trigger, pm_elapsed = await self._run_phase(
                "postmortem", self.knobs.postmortem_duration_seconds
            )
            self.emit(PostmortemEnded(trigger=pm_trigger, elapsed_seconds=pm_elapsed))

    def _fire_scheduled(self, round_number: int) -> None:
        for event in self.knobs.scheduled_events:
            if event.round != round_number:
                continue
            self.emit(
                ScheduledEventFired(kind=event.kind, detail=event.model_dump(exclude_defaults=True))
            )
            if event.kind == "set_postmortem":
                self.postmortem_enabled = bool(event.enabled)
            elif event.kind == "swap_agent" and event.agent_id and event.model:
                runner = self.runners[event.agent_id]
                provider = event.provider or self.setup.provider
                model = model_name(provider, event.model)  # checked at launch
                self.emit(
                    AgentSwappedMidRun(
                        agent_id=event.agent_id,
                        old_model=runner.model,
                        old_provider=runner.provider,
                        model=model,
                        provider=provider,
                    )
                )
                self.seating.swap(event.agent_id, provider, model)
            elif event.kind == "inject_case":
                self.scenario.on_scheduled_case(event.payload)

    def _open_phase(self) -> None:
        self.channels.open_phase()
        for runner in self.runners.values():
            runner.new_phase()
            runner.inbox.clear()
            runner.prompts.clear()

    def _all_idle(self) -> bool:
        # An agent that is out never drains what is queued for it, so it counts as idle as is.
        return all(
            r.out or (r.idle and not r.prompts and not r.inbox) for r in self.runners.values()
        )

    async def _run_phase(self, phase: PhaseName, limit_seconds: float) -> tuple[EndTrigger, float]:
        start = self.clock.now()
        tasks = [
            asyncio.create_task(
                self.driver.run_phase(r, AgentDeps(r.spec.agent_id, self.context, self)),
                context=seat_context(r.spec.agent_id),
            )
            for r in self.runners.values()
            if not r.out
        ]
        trigger: EndTrigger
        try:
            while True:
                self._changed.clear()
                if phase == "main" and self.scenario.is_settled():
                    trigger = "settled"
                    break
                if self.every_agent_out:
                    failed = any(r.failures for r in self.runners.values())
                    trigger = "agents_failed" if failed else "turn_limit"
                    break
                if self.clock.now() - start >= limit_seconds:
                    trigger = "timeout"
                    break
                if self._all_idle():
                    await self.clock.sleep(self.knobs.idle_floor_seconds)
                    if self._all_idle() and not self._changed.is_set():
                        trigger = "all_idle"
                        break
                    continue
                await self.clock.wait(self._changed, start + limit_seconds - self.clock.now())
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._checkpoint()
        return trigger, round(self.clock.now() - start, 3)

    def _checkpoint(self) -> None:
        """Log what each agent's history gained this phase (the basis of resume and forks)."""
        for runner in self.runners.values():
            # Log from the first message that is not the very object logged before: pydantic-ai
            # may rebuild a logged message (it merges a new prompt into a trailing request).
            logged, history = runner.logged, runner.history
            start = 0
            while start < min(len(logged), len(history)) and history[start] is logged[start]:
                start += 1
            if start == len(history) == len(logged):
                continue
            new = history[start:]
            if new:
                self.emit(
                    AgentHistoryAppended(
                        agent_id=runner.spec.agent_id,
                        messages=ModelMessagesTypeAdapter.dump_python(new, mode="json"),
                        from_index=start,
                    )
                )
            runner.logged = list(history)


def _as_logged(seat: Seat, state: RunState | None) -> Seat:
    """The seat as the log last registered or swapped it (the ledger wins over the config)."""
    if state is None or seat.agent_id not in state.seats:
        return seat
    model, provider, settings = state.seats[seat.agent_id]
    return Seat(agent_id=seat.agent_id, model=model, provider=provider, model_settings=settings)


class _RoundContext:
    """The :class:`~glossogen.scenario.RoundContext` the engine hands to its scenario."""

    def __init__(self, engine: RunEngine) -> None:
        self._engine = engine
        self.round_number = engine.round_number
        self.phase: PhaseName = "postmortem" if engine.phase == "postmortem" else "main"
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
        return self._engine.out_of_turns

    def now(self) -> float:
        return self._engine.clock.now()
