"""The round loop: a round's phases, its ending, its verdicts and the postmortem.

A round goes: scheduled events, ``round_started``, the scenario's briefings, the main phase
until it is settled / every agent is idle past the quiet floor / the time limit from phase
start, ``round_ended``, the verdicts, then the optional postmortem on the free channel.
:class:`RoundLoop` owns what the rounds recorded (verdicts, void rounds, whether postmortems
are held) and takes the rest of the run as explicit values: the scenario and knobs, where the
run is, the seats, the channels, the judge, the cycle driver, the clock and the event sink.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic_ai.messages import ModelMessagesTypeAdapter

from glossogen.engine._roster import model_name
from glossogen.engine._runner import seat_context
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentSwappedMidRun,
    Event,
    PostmortemEnded,
    PostmortemStarted,
    RoundCompleted,
    RoundEnded,
    RoundResultRecorded,
    RoundStarted,
    ScheduledEventFired,
    Verdict,
)
from glossogen.scenario import AgentDeps

if TYPE_CHECKING:
    from glossogen.engine._agent import AgentRunner
    from glossogen.engine._clock import Clock
    from glossogen.engine._judge import RunJudge
    from glossogen.engine._messaging import Channels
    from glossogen.engine._position import Position
    from glossogen.engine._roster import Seat
    from glossogen.engine._runner import CycleDriver
    from glossogen.engine._seating import Seating
    from glossogen.engine._state import RunState
    from glossogen.knobs import BaseKnobs
    from glossogen.scenario import RoundContext, Scenario

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


@dataclass(eq=False)
class RoundLoop:
    """Plays a run's rounds, phase by phase, and records their verdicts.

    Built from the run's parts; it owns ``postmortem_enabled``, ``void_rounds`` and
    ``recorded``.
    """

    scenario: Scenario
    knobs: BaseKnobs
    seats: list[Seat]
    default_provider: str
    """The provider of a scheduled swap that names none."""
    position: Position
    seating: Seating
    channels: Channels
    judge: RunJudge | None
    driver: CycleDriver
    clock: Clock
    emit: Callable[[Event], None]
    changed: asyncio.Event
    """Set whenever the run's state moves (every event): the phase monitor wakes on it."""
    context: Callable[[], RoundContext]
    """The scenario's context of the current round."""
    process_seconds: Callable[[], float]
    services: object
    """What each seat's tools get as :attr:`AgentDeps.services`."""
    emitted: Callable[[], int] = field(default=lambda: 0)
    """How many events this process has logged (the engine's count)."""
    stopped_at: int | None = field(init=False, default=None)
    """``emitted`` when a cancellation of the round (a stop) cut a phase's seats off, or None:
    logged with the process's end (``simulation_ended.stopped_after_events``) for a replay to
    cut at the same place (what the stop found is not in the events before it)."""
    postmortem_enabled: bool = field(init=False)
    void_rounds: list[int] = field(init=False, default_factory=list)
    """Rounds made void by failing provider calls (agents or judge)."""
    recorded: dict[int, tuple[list[Verdict], bool]] = field(init=False, default_factory=dict)
    """Verdicts per round as recorded, and whether the round was void."""

    def __post_init__(self) -> None:
        """Hold postmortems as the knobs say until a scheduled event says otherwise."""
        self.postmortem_enabled = self.knobs.postmortem_enabled

    @property
    def runners(self) -> dict[str, AgentRunner]:
        """The seats' runners, by agent id."""
        return self.seating.runners

    def restore(self, state: RunState) -> None:
        """Continue from ``state``: the verdicts recorded, postmortems held or not."""
        self.recorded = dict(state.recorded)
        self.position.round_number = state.after_round
        through = state.after_round + (1 if state.pending_verdicts else 0)
        for event in self.knobs.scheduled_events:
            if event.kind == "set_postmortem" and event.round <= through:
                self.postmortem_enabled = bool(event.enabled)

    @property
    def rounds_won(self) -> int:
        """Rounds recorded as won by every team (void rounds never count)."""
        return sum(
            1 for v, void in self.recorded.values() if v and not void and all(x.success for x in v)
        )

    async def play_round(self, round_number: int) -> RoundSummary:
        """Play round ``round_number``: main phase, verdicts, then the postmortem if enabled."""
        channels = self.channels
        messages_before, chars_before = channels.total_messages, channels.total_chars
        self.position.round_number = round_number
        self.position.phase = "main"
        if self.judge is not None:
            self.judge.failed_in_round = self.judge.capped_in_round = False
        self._fire_scheduled(round_number)
        channels.open_round()
        self._open_phase()
        self.emit(RoundStarted())
        self.scenario.start_round(self.context())
        ended, elapsed = await self._run_phase("main", self.knobs.max_round_duration_seconds)
        self.emit(RoundEnded(trigger=ended, elapsed_seconds=elapsed))
        verdicts = self.scenario.verdicts(self.context())
        trigger = self._trigger(ended)
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
        self.scenario.reveal_results(self.context(), verdicts)
        await self._postmortem(verdicts)
        self.emit(RoundCompleted(process_seconds=self.process_seconds()))
        return RoundSummary(
            round_number,
            verdicts,
            trigger,
            channels.total_messages - messages_before,
            channels.total_chars - chars_before,
        )

    def _trigger(self, ended: EndTrigger) -> RoundTrigger:
        """Why the round's verdicts stand or are void: how its main phase ended, or worse."""
        silent = [
            r.spec.agent_id
            for r in self.runners.values()
            if r.phase_failures and not r.phase_answers
        ]
        if self.judge is not None and self.judge.capped_in_round:
            return "spend_cap"
        if self.judge is not None and self.judge.failed_in_round:
            return "judge_failed"
        if silent and ended not in ("agents_failed", "turn_limit"):
            return "provider_failed"
        if ended != "settled" and self.seating.out_of_turns:
            # A seat its turn limit took out did not play the round to its end: what it did
            # not do is the cap, not a move (a missing move is never scored as one).
            return "turn_limit"
        return ended

    async def finish_round(self, round_number: int) -> RoundSummary:
        """Play only the postmortem of a round whose verdict is already recorded (resume)."""
        channels = self.channels
        messages_before, chars_before = channels.total_messages, channels.total_chars
        self.position.round_number = round_number
        verdicts, _ = self.recorded[round_number]
        await self._postmortem(verdicts)
        self.emit(RoundCompleted(process_seconds=self.process_seconds()))
        return RoundSummary(
            round_number,
            verdicts,
            "reopened",
            channels.total_messages - messages_before,
            channels.total_chars - chars_before,
        )

    async def _postmortem(self, verdicts: list[Verdict]) -> None:
        postmortem = self.channels.postmortem_channels()
        if self.postmortem_enabled and postmortem and not self.seating.every_agent_out:
            self.position.phase = "postmortem"
            self._open_phase()
            self.emit(PostmortemStarted(channel_id=postmortem[0]))
            for seat in self.seats:
                self.channels.brief(
                    seat.agent_id,
                    self.scenario.postmortem_briefing(
                        self.seating.specs[seat.agent_id], verdicts, self.position.round_number
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
                provider = event.provider or self.default_provider
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
                self.driver.run_phase(r, AgentDeps(r.spec.agent_id, self.context(), self.services)),
                context=seat_context(r.spec.agent_id),
            )
            for r in self.runners.values()
            if not r.out
        ]
        try:
            trigger = await self._watch(phase, start, limit_seconds)
        except asyncio.CancelledError:
            self.stopped_at = self.emitted()  # the seats are cut off here, as they stand
            raise
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._checkpoint()
        return trigger, round(self.clock.now() - start, 3)

    async def _watch(self, phase: PhaseName, start: float, limit_seconds: float) -> EndTrigger:
        """Wait until the phase ends; return why it did."""
        while True:
            self.changed.clear()
            if phase == "main" and self.scenario.is_settled():
                return "settled"
            if self.seating.every_agent_out:
                failed = any(r.failures for r in self.runners.values())
                return "agents_failed" if failed else "turn_limit"
            if self.clock.now() - start >= limit_seconds:
                return "timeout"
            if self._all_idle():
                await self.clock.sleep(self.knobs.idle_floor_seconds)
                if self._all_idle() and not self.changed.is_set():
                    return "all_idle"
                continue
            await self.clock.wait(self.changed, start + limit_seconds - self.clock.now())

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
