"""A run in progress: its folder, event log writer, engine and clock, and how it ends.

The simulate flow drives a :class:`RunSession` one task per step; tests and benchmarks drive
the same object directly. Spend is summed back from the event log, the ledger.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version

from pydantic import BaseModel

from glossogen import exit_codes
from glossogen.derive import ResumePoint, RunLock
from glossogen.engine import (
    RoundSummary,
    RunEngine,
    RunSetup,
    SystemClock,
    VirtualClock,
    resolve_judge,
    resolve_seats,
)
from glossogen.eventlog import (
    AgentCost,
    Event,
    EventLogWriter,
    RunResumed,
    SimulationEnded,
    read_events,
)
from glossogen.launch._credentials import apply_dotenv
from glossogen.launch._observers import has_observers, notify
from glossogen.launch._plan import LaunchError, RunPlan
from glossogen.pricing import add_costs
from glossogen.storage import ClaimedRun, RunStore, StorageError, join
from glossogen.tracing import configure_tracing


class Spend(BaseModel):
    """What a run spent, in USD, summed from its event log (null = some call not costed)."""

    total_cost_usd: float | None
    judge_cost_usd: float | None
    agent_costs: list[AgentCost]


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


EXIT_UNREADABLE = int(exit_codes.UNREADABLE)
EXIT_TRANSPORT = int(exit_codes.TRANSPORT)


def check_runs_dir(plan: RunPlan) -> None:
    """Refuse a ``--runs-dir`` where no run folder can be made; creates nothing.

    Raises:
        LaunchError: 66 for a local path that is a file or not writable, 69 for remote
            storage that is unreachable, refuses the credentials or lacks the bucket.
    """
    store = RunStore(plan.request.runs_dir)
    try:
        store.check_usable()
    except StorageError as exc:
        raise LaunchError(str(exc), EXIT_UNREADABLE if store.local else EXIT_TRANSPORT) from None


def claim_run(plan: RunPlan, now_unix: int | None = None) -> ClaimedRun:
    """Claim ``<runs_dir>/<scenario>/<unix_ts>/`` and write ``config.json`` and ``labels.json``."""
    claimed = _claim_folder(plan, now_unix)
    notify("run_claimed", claimed.run_id, claimed.url, plan.knobs["round_count"])
    return claimed


async def claim_run_async(plan: RunPlan, now_unix: int | None = None) -> ClaimedRun:
    """:func:`claim_run` with its storage work (a folder, two fsync'd files) in a worker thread.

    Runs that share one event loop (an in-process sweep) are not held up by the disk: an fsync
    took 10-100 ms on a loaded machine (``bench/sweep_throughput.py``).
    """
    claimed = await asyncio.to_thread(_claim_folder, plan, now_unix)
    notify("run_claimed", claimed.run_id, claimed.url, plan.knobs["round_count"])
    return claimed


def _claim_folder(plan: RunPlan, now_unix: int | None) -> ClaimedRun:
    store = RunStore(plan.request.runs_dir)
    claimed = store.claim_run_dir(
        plan.request.scenario, int(now_unix if now_unix is not None else time.time())
    )
    store.write_json(claimed.url, "config.json", plan.knobs)
    store.write_json(claimed.url, "labels.json", plan.knobs.get("labels", {}))
    return claimed


def log_url(plan: RunPlan, claimed: ClaimedRun) -> str:
    """Return the URL of the run's ``<scenario>.jsonl``."""
    return join(claimed.url, f"{plan.request.scenario}.jsonl")


def _versions() -> dict[str, str]:
    return {
        name: version(name) for name in ("glossogen", "pydantic-ai-slim", "prefect", "genai-prices")
    }


@dataclass
class RunSession:
    """The live objects of one run (one asyncio loop)."""

    plan: RunPlan
    claimed: ClaimedRun
    writer: EventLogWriter
    engine: RunEngine
    started: float
    lock: RunLock | None = None
    first_round: int = 1
    """The first round this session plays (after the last completed one, on resume)."""

    @property
    def postmortem_only(self) -> bool:
        """True when the first round's verdict is recorded and only its postmortem is missing."""
        return self.first_round in self.engine.recorded

    async def finish_round(self, round_number: int) -> RoundSummary:
        """Play the postmortem of a cut-off round whose verdict stands, and close the round."""
        summary = await self.engine.finish_round(round_number)
        await self._round_boundary()
        return summary

    async def play_round(self, round_number: int) -> RoundSummary:
        """Play one round and make the log durable up to its end."""
        from glossogen.tracing import run_span

        tracing = self.engine.setup.tracing
        with run_span(tracing, self.claimed.run_id, self.plan.request.scenario, round_number):
            summary = await self.engine.play_round(round_number)
        await self._round_boundary()
        return summary

    async def _round_boundary(self) -> None:
        # The fsync (or the S3 upload) runs in a worker thread: the loop may be shared with
        # other runs (an in-process sweep), and a disk under load took 10-100 ms per fsync.
        # Nothing of this run is appended meanwhile (its round is over), and the writer locks.
        await asyncio.to_thread(self.writer.round_boundary)

    @property
    def stopped_early(self) -> str | None:
        """Why the run cannot go on, or None: every agent failed, or every one hit its limit."""
        if not self.engine.every_agent_out:
            return None
        if self.engine.any_agent_failed:
            return "every agent failed (provider errors: see agent_run_cycle_failed events)"
        return f"every agent reached --max-agent-turns {self.plan.request.max_agent_turns}"

    def finish(self, spend: Spend, status: str, error: str | None = None) -> RunResult:
        """Log ``simulation_ended``, close the log and return the result."""
        result = self._log_end(spend, status, error)
        self._close()
        return result

    async def finish_async(self, spend: Spend, status: str, error: str | None = None) -> RunResult:
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

    def _log_end(self, spend: Spend, status: str, error: str | None) -> RunResult:
        played, won = len(self.engine.recorded), self.engine.rounds_won
        duration = round(time.monotonic() - self.started, 3)
        ended = SimulationEnded(
            status=status,  # type: ignore[arg-type]
            rounds_played=played,
            rounds_won=won,
            total_messages=self.engine.total_messages,
            total_chars=self.engine.total_chars,
            total_cost_usd=spend.total_cost_usd,
            judge_cost_usd=spend.judge_cost_usd,
            agent_costs=spend.agent_costs,
            duration_seconds=duration,
            error=error,
        )
        self.engine.emit(ended)
        return RunResult(
            run_id=self.claimed.run_id,
            run_url=self.claimed.url,
            status=status,
            rounds_played=played,
            rounds_won=won,
            total_messages=ended.total_messages,
            total_chars=ended.total_chars,
            total_cost_usd=spend.total_cost_usd,
            duration_seconds=duration,
            error=error,
        )


def open_session(
    plan: RunPlan,
    claimed: ClaimedRun,
    clock_start: datetime | None = None,
    resume: ResumePoint | None = None,
) -> RunSession:
    """Create the writer and engine of a run and log its start (or its resumption).

    The clock is virtual when every agent and the judge are scripted (offline runs play game
    time without waiting), else the real one. A local run folder is locked for the life of the
    session, so no second process can write the same log. A resume under a changed config
    (``--allow-config-change``) logs the difference in ``run_resumed`` and then rewrites the
    folder's ``config.json`` (atomically) with the config now in force.

    Raises:
        DeriveError: another live process writes the run (exit 75).
        StorageError: ``config.json`` cannot be rewritten.
    """
    apply_dotenv()
    lock = RunLock(claimed.url)
    scenario, knobs = plan.build()
    seats = resolve_seats(scenario, knobs, plan.request.model, plan.request.provider)
    judge = resolve_judge(scenario, knobs, seats, plan.request.provider)
    writer = EventLogWriter(log_url(plan, claimed))
    tracing = configure_tracing(os.environ)
    if tracing is not None and tracing.warning:
        logging.getLogger("glossogen").warning(tracing.warning)
        notify("warning", tracing.warning)
    watched = has_observers()

    def sink(event: Event) -> None:
        writer.append(event)
        if watched:
            notify("event", event)

    start = clock_start or datetime.now(UTC)
    if resume is not None and resume.state.last_timestamp is not None:
        start = max(start, resume.state.last_timestamp)  # game time never runs backwards
    clock = VirtualClock(start) if plan.virtual_clock else SystemClock()
    setup = RunSetup(
        run_id=claimed.run_id,
        scenario=scenario,
        knobs=knobs,
        model=plan.request.model,
        provider=plan.request.provider,
        seats=seats,
        judge=judge,
        max_agent_turns=plan.request.max_agent_turns,
        versions=_versions(),
        group_slug=plan.request.group_slug,
        tracing=tracing,
    )
    engine = RunEngine(setup, sink, clock, state=resume.state if resume else None)
    if resume is None:
        engine.start()
        first = 1
    else:
        state = resume.state
        engine.emit(
            RunResumed(
                after_round=state.after_round,
                reopened_round=state.pending_round,
                postmortem_only=state.pending_verdicts,
                config_changes=resume.config_changes,
            )
        )
        if resume.config_changes:
            # config.json holds the config in force; simulation_started keeps the original and
            # run_resumed the difference. The event is made durable first: a crash in between
            # leaves the old config.json, and the next resume asks for the change again.
            writer.round_boundary()
            RunStore(plan.request.runs_dir).write_json(claimed.url, "config.json", plan.knobs)
        first = state.after_round + 1
        notify("run_claimed", claimed.run_id, claimed.url, plan.knobs["round_count"])
    return RunSession(plan, claimed, writer, engine, time.monotonic(), lock, first)


def price_spend(url: str) -> Spend:
    """Sum a run's spend from its event log: each agent's model calls, plus the in-run judge.

    Raises:
        StorageError: the log cannot be read.
    """
    per_agent: dict[str, list[float | None]] = {}
    tokens: dict[str, list[int]] = {}
    judge: list[float | None] = []
    for event in read_events(url).events:
        if event.event_type == "agent_registered":
            per_agent.setdefault(event.agent_id, [])  # type: ignore[attr-defined]
            tokens.setdefault(event.agent_id, [0, 0, 0])  # type: ignore[attr-defined]
        elif event.event_type == "llm_response_received":
            agent_id = event.agent_id  # type: ignore[attr-defined]
            per_agent.setdefault(agent_id, []).append(event.cost_usd)  # type: ignore[attr-defined]
            t = tokens.setdefault(agent_id, [0, 0, 0])
            t[0] += event.input_tokens  # type: ignore[attr-defined]
            t[1] += event.output_tokens  # type: ignore[attr-defined]
            t[2] += 1
        elif event.event_type == "judge_called":
            judge.append(event.cost_usd)  # type: ignore[attr-defined]
    agent_costs = [
        AgentCost(
            agent_id=a,
            cost_usd=add_costs(c),
            input_tokens=tokens[a][0],
            output_tokens=tokens[a][1],
            requests=tokens[a][2],
        )
        for a, c in per_agent.items()
    ]
    judge_cost = add_costs(judge)
    total = add_costs([a.cost_usd for a in agent_costs] + [judge_cost])
    return Spend(total_cost_usd=total, judge_cost_usd=judge_cost, agent_costs=agent_costs)
