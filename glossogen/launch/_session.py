"""A run in progress: its folder, event log writer, engine and clock, and how it ends.

The simulate flow drives a :class:`RunSession` one task per step; tests and benchmarks drive
the same object directly. Spend is summed back from the event log, the ledger
(``_spend.price_spend``); the run's folder was claimed before (``_claim.py``) and the
session opened by ``_open.open_session``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from pydantic import BaseModel, Field

from glossogen.engine import (
    SETTLE_SECONDS,
    RoundSummary,
    RunEngine,
)
from glossogen.eventlog import (
    EndStatus,
    EventLogWriter,
    SimulationEnded,
    Tokens,
)
from glossogen.launch._plan import RunConfig
from glossogen.launch._spend import RunSpend, price_spend
from glossogen.refusals import LimitReached
from glossogen.storage import (
    RunFolder,
    RunLock,
)


class RunResult(BaseModel):
    """How a run ended: what ``simulation_ended`` says, plus where the run lives."""

    run_id: str
    run_url: str
    status: str
    rounds_played: int
    rounds_won: int
    total_messages: int
    total_chars: int
    total_cost_usd: float | None
    duration_seconds: float
    error: str | None = None
    model_errors: dict[str, int] = {}
    cost_note: str | None = None
    postmortem_messages: int = 0
    """Of ``total_messages``, those sent in a postmortem (0: the run held none, or none spoke)."""
    spend_capped: bool = False
    """True when the run ended ``incomplete`` because its spend cap was reached (exit 20)."""
    tokens: Tokens = Field(default_factory=Tokens)
    """Tokens of the run's own calls, agents and judge (:class:`RunSpend`)."""
    limit: LimitReached | None = None
    """The limit the run reached, when that is why it ended (``error`` words it)."""


@dataclass
class RunSession:
    """The live objects of one run (one asyncio loop)."""

    config: RunConfig
    folder: RunFolder
    writer: EventLogWriter
    engine: RunEngine
    started: float
    lock: RunLock | None = None
    first_round: int = 1
    """The first round this session plays (after the last completed one, on resume)."""
    earlier_seconds: float = 0.0
    """Seconds the processes before this one played the run (a resumed run's duration goes on)."""
    earlier_events: int = 0
    """Events the log held before this process (a resumed run's); its own follow."""

    @property
    def spend_capped(self) -> bool:
        """True once the run's spend cap refused a request, or its spend has reached the cap."""
        return self.config.limits.spend_cap_usd is not None and self.engine.spend.capped

    def spend_cap_reason(self, after_round: int, last_round: int) -> LimitReached:
        """The one-line reason a capped run ended, naming spend, cap and round.

        When a request was refused: its worst case (USD) and the spend settled and reserved
        when it was; else (a resumed run that had already spent its cap) the spend settled.
        """
        ledger = self.engine.spend
        cap = self.config.limits.spend_cap_usd or 0.0
        refused = ledger.refused
        if refused is None:
            spent = f"${ledger.spent:.6f} logged of"
        else:
            worst = refused.worst_case_usd
            spent = (
                f"${refused.spent_usd:.6f} spent + ${refused.reserved_usd:.6f} in flight + "
                + ("an unpriced" if worst is None else f"${worst:.6f}")
                + f" worst case of {refused.agent_id}'s next request would pass"
            )
        return LimitReached(
            kind="spend",
            field="spend_cap_usd",
            limit=cap,
            before=f"spend cap reached: {spent}",
            after=f"after round {after_round} of {last_round}",
        )

    def ended_early(self) -> tuple[EndStatus, str | LimitReached] | None:
        """How the run ends when it cannot go on after a round, or None if it can.

        ``error`` when every agent is out and one was taken out by model errors,
        ``incomplete`` when every agent reached its turn limit; the reason is
        :attr:`stopped_early`.
        """
        reason = self.stopped_early
        if reason is None:
            return None
        return ("error" if self.engine.seating.any_agent_failed else "incomplete"), reason

    def void_rounds_error(self) -> str | None:
        """Why a run that played every round still ends ``error``: void rounds, or None."""
        if not self.engine.rounds.void_rounds:
            return None
        return (
            f"round(s) {', '.join(map(str, self.engine.rounds.void_rounds))} void: model or judge "
            "calls kept failing (see agent_run_cycle_failed events)"
        )

    @property
    def postmortem_only(self) -> bool:
        """True when the first round's verdict is recorded and only its postmortem is missing."""
        return self.first_round in self.engine.rounds.recorded

    async def finish_round(self, round_number: int) -> RoundSummary:
        """Play the postmortem of a cut-off round whose verdict stands, and close the round."""
        summary = await self.engine.finish_round(round_number)
        await self._round_boundary()
        return summary

    async def play_round(self, round_number: int) -> RoundSummary:
        """Play one round and make the log durable up to its end."""
        from glossogen.tracing import run_span

        tracing = self.engine.setup.tracing
        with run_span(tracing, self.folder.run_id, self.config.scenario, round_number):
            summary = await self.engine.play_round(round_number)
        await self._round_boundary()
        return summary

    async def _round_boundary(self) -> None:
        # The fsync (or the S3 upload) runs in a worker thread: the loop may be shared with
        # other runs (an in-process sweep), and a disk under load can hold an fsync for long.
        # Nothing of this run is appended meanwhile (its round is over), and the writer locks.
        await asyncio.to_thread(self.writer.round_boundary)

    async def settle_requests(self, seconds: float = SETTLE_SECONDS) -> None:
        """Wait for the model requests no event has logged yet, so the log prices them.

        Up to ``seconds``; a request that has not answered by then is logged with its cost
        unknown (the run's total is then null, with the reason). Called before the run is
        priced: afterwards every request the run sent is in the log, and the log is durable
        (on S3, uploaded), so the pricing reads them.
        """
        await self.engine.requests.settle(seconds)
        await self._round_boundary()

    @property
    def stopped_early(self) -> str | LimitReached | None:
        """Why the run cannot go on, or None: every agent failed, or every one hit its limit."""
        if not self.engine.every_agent_out:
            return None
        if self.engine.seating.any_agent_failed:
            return "every agent was taken out by model errors (see agent_run_cycle_failed events)"
        return LimitReached(
            kind="turns",
            field="max_agent_turns",
            limit=self.config.limits.max_agent_turns,
            before="every agent reached",
        )

    def finish(
        self, spend: RunSpend, status: EndStatus, error: str | LimitReached | None = None
    ) -> RunResult:
        """Log ``simulation_ended``, close the log and return the result."""
        result = self._log_end(spend, status, error)
        self._close()
        return result

    async def finish_async(
        self, spend: RunSpend, status: EndStatus, error: str | LimitReached | None = None
    ) -> RunResult:
        """:meth:`finish` with the closing fsync (or upload) in a worker thread."""
        result = self._log_end(spend, status, error)
        await asyncio.to_thread(self._close)
        return result

    def _close(self) -> None:
        self.writer.close()
        if self.lock is not None:
            self.lock.release()
        if self.engine.setup.tracing is not None:
            self.engine.setup.tracing.shutdown()

    def _stopped_after(self, status: EndStatus) -> int | None:
        """Where in the log a stop cut this process's seats off, for ``simulation_ended``."""
        at = self.engine.rounds.stopped_at
        return None if status != "interrupted" or at is None else self.earlier_events + at

    def _log_end(
        self, spend: RunSpend, status: EndStatus, reason: str | LimitReached | None
    ) -> RunResult:
        limit = reason if isinstance(reason, LimitReached) else None
        error = reason.worded() if isinstance(reason, LimitReached) else reason
        if self.engine.requests.pending:  # priced before its requests were settled
            # No request may outlive the log: each ended one is logged as it ended, the rest
            # with their cost unknown; the run is priced again with them.
            self.engine.requests.close(f"the run ended {status}")
            self.writer.round_boundary()  # on S3 the pricing reads the uploaded log
            spend = price_spend(self.folder)
        played, won = len(self.engine.rounds.recorded), self.engine.rounds.rounds_won
        capped = status == "incomplete" and self.spend_capped
        process = round(time.monotonic() - self.started, 3)
        duration = round(self.earlier_seconds + process, 3)
        ended = SimulationEnded(
            status=status,
            rounds_played=played,
            rounds_won=won,
            total_messages=self.engine.channels.total_messages,
            total_chars=self.engine.channels.total_chars,
            total_cost_usd=spend.total_cost_usd,
            judge_cost_usd=spend.judge_cost_usd,
            agent_costs=spend.agent_costs,
            judge_tokens=spend.judge_tokens,
            duration_seconds=duration,
            process_seconds=process,
            inherited_cost_usd=spend.inherited_cost_usd,
            error=error,
            model_errors=spend.model_errors,
            cost_note=spend.cost_note,
            priced_cost_usd=spend.priced_cost_usd,
            stopped_after_events=self._stopped_after(status),
        )
        self.engine.emit(ended)
        return RunResult(
            run_id=self.folder.run_id,
            run_url=self.folder.url,
            status=status,
            rounds_played=played,
            rounds_won=won,
            total_messages=self.engine.channels.total_messages,
            total_chars=self.engine.channels.total_chars,
            postmortem_messages=self.engine.channels.postmortem_messages,
            total_cost_usd=spend.total_cost_usd,
            duration_seconds=duration,
            error=error,
            model_errors=spend.model_errors,
            cost_note=spend.cost_note,
            spend_capped=capped,
            tokens=spend.tokens,
            limit=limit,
        )
