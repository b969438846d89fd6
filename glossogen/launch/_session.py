"""A run in progress: its folder, event log writer, engine and clock, and how it ends.

The simulate flow drives a :class:`RunSession` one task per step; tests and benchmarks drive
the same object directly. Spend is summed back from the event log, the ledger.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version

from pydantic import BaseModel, Field
from pydantic_ai.models import Model

from glossogen import exit_codes
from glossogen.derive import DeriveError, ResumePoint
from glossogen.engine import (
    SETTLE_SECONDS,
    Clock,
    RoundSummary,
    RunEngine,
    RunSetup,
    SystemClock,
    VirtualClock,
)
from glossogen.eventlog import (
    AgentCost,
    AgentRunCycleFailed,
    EndStatus,
    Event,
    EventLogRead,
    EventLogWriter,
    ModelRequestSent,
    RunResumed,
    RunView,
    SimulationEnded,
    Tokens,
    unsettled_requests,
)
from glossogen.launch._credentials import apply_dotenv
from glossogen.launch._observers import has_observers, notify
from glossogen.launch._plan import LaunchError, RunConfig
from glossogen.pricing import logged_usd
from glossogen.refusals import LimitReached
from glossogen.rejudge._cache import JudgeCache
from glossogen.storage import (
    CONFIG,
    LABELS,
    RunBusyError,
    RunFolder,
    RunLock,
    RunStore,
    StorageError,
    join,
    nearest_existing,
)
from glossogen.tracing import configure_tracing


class RunSpend(BaseModel):
    """What a run spent, in USD, read from its event log (null = some call not costed).

    ``total_cost_usd``, ``judge_cost_usd`` and ``agent_costs`` are the run's own calls;
    ``inherited_cost_usd`` is what a derived run's copied rounds cost its source.
    """

    total_cost_usd: float | None
    judge_cost_usd: float | None
    agent_costs: list[AgentCost]
    inherited_cost_usd: float | None = 0.0
    model_errors: dict[str, int] = {}
    """This run's own ``agent_run_cycle_failed`` events by ``error_kind``."""
    cost_note: str | None = None
    """Why ``total_cost_usd`` is null, when it is."""
    priced_cost_usd: float | None = None
    """When ``total_cost_usd`` is null: the calls whose cost is known, summed (a lower bound)."""
    tokens: Tokens = Field(default_factory=Tokens)
    """Tokens of the run's own calls, agents and judge (cache reads and writes apart)."""
    judge_tokens: Tokens = Field(default_factory=Tokens)
    """Tokens of the in-run judge's own calls."""


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


EXIT_UNREADABLE = int(exit_codes.UNREADABLE)
EXIT_TRANSPORT = int(exit_codes.TRANSPORT)


def check_runs_dir(runs_dir: str) -> None:
    """Refuse a ``--runs-dir`` where no run folder can be made; creates nothing.

    Raises:
        LaunchError: 66 for a local path that is a file or not writable, 69 for remote
            storage that is unreachable, refuses the credentials or lacks the bucket.
    """
    store = RunStore(runs_dir)
    try:
        store.check_usable()
    except StorageError as exc:
        raise LaunchError(str(exc), EXIT_UNREADABLE if store.local else EXIT_TRANSPORT) from None


def claim_run(config: RunConfig, runs_dir: str, now_unix: int | None = None) -> RunFolder:
    """Claim ``<runs_dir>/<scenario>/<unix_ts>/`` and write ``config.json`` and ``labels.json``."""
    folder = claim_folder(config, runs_dir, now_unix)
    notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    return folder


async def claim_run_async(
    config: RunConfig, runs_dir: str, now_unix: int | None = None
) -> RunFolder:
    """:func:`claim_run` with its storage work (a folder, two fsync'd files) in a worker thread.

    Runs that share one event loop (an in-process sweep) are not held up by the disk: an fsync
    can hold the loop for tens of milliseconds on a loaded machine (``bench/sweep_throughput.py``).
    """
    folder = await asyncio.to_thread(claim_folder, config, runs_dir, now_unix)
    notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    return folder


def claim_folder(config: RunConfig, runs_dir: str, now_unix: int | None = None) -> RunFolder:
    """Claim the run's folder and write its config files, all or nothing, announcing nothing.

    For a launcher that names the run before a worker plays it (a sweep through deployments),
    the worker's flow run takes the folder as it is and announces the run when it starts.

    Raises:
        LaunchError: 66 when a local runs dir cannot be created or written (the folder is
            never made), 69 when the storage fails part-way (a full disk; remote storage): the
            claimed folder and what was written into it are removed, so nothing is left behind.
    """
    store = RunStore(runs_dir)
    existed = nearest_existing(store.runs_dir) if store.local else ""
    try:
        folder = store.claim_run_dir(
            config.scenario, int(now_unix if now_unix is not None else time.time())
        )
    except StorageError as exc:
        store.remove_empty_folders(join(store.runs_dir, config.scenario), existed)
        code = EXIT_UNREADABLE if store.local else EXIT_TRANSPORT
        raise LaunchError(f"cannot claim a run folder: {exc}", code) from None
    try:
        folder.write_json(CONFIG, config.recorded_knobs)
        folder.write_json(LABELS, config.labels)
    except StorageError as exc:
        store.release_claim(folder, (CONFIG, LABELS), keep=existed)
        raise LaunchError(
            f"storage failed while claiming {folder.url} (removed again): {exc}", EXIT_TRANSPORT
        ) from None
    return folder


@cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """The versions ``simulation_started`` records, read once per process (3 ms a reading)."""
    return tuple(
        (name, version(name))
        for name in ("glossogen", "pydantic-ai-slim", "prefect", "genai-prices")
    )


def _versions() -> dict[str, str]:
    return dict(_installed_versions())


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


def _usd(value: float | None) -> float | None:
    return None if value is None else logged_usd(value)


def _unanswered_note(count: int, known_usd: float) -> str:
    return (
        f"{count} model request(s) never answered (abandoned at a phase end, or in flight when "
        f"a process was killed): what they cost is unknown; the calls priced sum to "
        f"{known_usd:.6f} USD, a lower bound"
    )


def check_agent_models(config: RunConfig, agent_models: Mapping[str, Model] | None) -> None:
    """Refuse ``agent_models`` naming a seat ``config`` does not have.

    Raises:
        ValueError: one line naming the unknown agent ids and the run's seats.
    """
    unknown = sorted(set(agent_models or {}) - {seat.agent_id for seat in config.seats})
    if unknown:
        raise ValueError(
            f"agent_models names {', '.join(map(repr, unknown))}, not a seat of "
            f"{config.scenario} (seats: {', '.join(seat.agent_id for seat in config.seats)})"
        )


def open_session(
    config: RunConfig,
    folder: RunFolder,
    clock_start: datetime | None = None,
    resume: ResumePoint | None = None,
    agent_models: Mapping[str, Model] | None = None,
    judge_model: Model | None = None,
    virtual_clock: bool = False,
    judge_answers: JudgeCache | None = None,
    clock_of: Callable[[EventLogWriter], Clock] | None = None,
) -> RunSession:
    """Create the writer and engine of a run and log its start (or its resumption).

    The clock is virtual when every agent and the judge are scripted (offline runs play game
    time without waiting) or when the test-only ``GLOSSOGEN_TEST_VIRTUAL_CLOCK`` asks for it
    (:meth:`RunConfig.plays_on_virtual_clock`), else the real one. A local run folder is
    locked for the life of the session, so no second process can write the same log. A resume
    under a changed config (``--allow-config-change``) logs the difference in ``run_resumed``
    and then rewrites the folder's ``config.json`` (atomically) with the config now in force.
    ``agent_models`` plays the seats it names with the given pydantic-ai models (a scenario's
    tests, through :mod:`glossogen.testing`); every other seat is built from its provider.
    ``judge_model`` likewise plays the in-run judge (``judge_answers``: the judge cache it
    asks in place of the run's ``--judge-cache``: a replay's recorded cached rulings), and
    ``virtual_clock`` puts the run on the virtual clock whatever it calls (a replay,
    :mod:`glossogen.replay`: its models answer from a tape). ``clock_of`` makes the run's
    clock instead, from the log's writer (the replay of a process that played on the real
    clock reads its time from the record, place by place).

    Raises:
        ValueError: ``agent_models`` names a seat the run does not have.
        DeriveError: another live process writes the run (exit 75).
        StorageError: ``config.json`` cannot be rewritten.
    """
    check_agent_models(config, agent_models)
    apply_dotenv()
    try:
        lock = folder.lock()
    except RunBusyError as exc:
        raise DeriveError(str(exc), exc.exit_code) from None
    writer = EventLogWriter(folder.log_url)
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
    virtual = virtual_clock or config.plays_on_virtual_clock(os.environ)
    clock: Clock = VirtualClock(start) if virtual else SystemClock()
    if clock_of is not None:
        clock = clock_of(writer)
    setup = RunSetup(
        run_id=folder.run_id,
        scenario=config.build(),
        knobs=config.knobs,
        model=config.model,
        provider=config.provider,
        seats=config.seats,
        judge=config.judge,
        max_agent_turns=config.limits.max_agent_turns,
        run_timeout_seconds=config.limits.run_timeout_seconds,
        spend_cap_usd=config.limits.spend_cap_usd,
        versions=_versions(),
        group_slug=config.group_slug,
        tracing=tracing,
        agent_models=dict(agent_models or {}),
        judge_model=judge_model,
        judge_cache=config.judge_cache,
        judge_answers=judge_answers,
    )
    engine = RunEngine(setup, sink, clock, state=resume.state if resume else None)
    killed: list[ModelRequestSent] = []
    if resume is not None:
        earlier_view = RunView.of(EventLogRead(events=resume.events))
        # Sent and never settled: in flight when an earlier process was killed.
        killed = unsettled_requests(earlier_view)
        # The spend cap counts what every process logged, and a killed request's reservation
        # (its cost is unknown, its worst case is not).
        engine.spend.spent = Decimal(repr(earlier_view.spend.known_cost_usd)) + sum(
            (Decimal(repr(sent.reserved_usd or 0.0)) for sent in killed), Decimal(0)
        )
    engine.driver.call_allowed = engine.spend.allows_call
    if engine.judge is not None:  # the cap binds the in-run judge's calls too
        engine.judge.call_allowed = engine.spend.allows_call
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
                limit_changes=resume.limit_changes,
                clock=clock.kind,
            )
        )
        engine.requests.abandon_killed(killed)  # each logged once, cost unknown
        if resume.config_changes:
            # config.json holds the config in force; simulation_started keeps the original and
            # run_resumed the difference. The event is made durable first: a crash in between
            # leaves the old config.json, and the next resume asks for the change again.
            # A seat whose settings changed sends the new ones from here, and is registered
            # anew with them before the event is made durable.
            engine.register_anew()
            writer.round_boundary()
            folder.write_json(CONFIG, config.recorded_knobs)
        first = state.after_round + 1
        notify("run_claimed", folder.run_id, folder.url, config.knobs.round_count)
    earlier, before = 0.0, 0
    if resume is not None:
        earlier = RunView.of(EventLogRead(events=resume.events)).duration_seconds
        before = len(resume.events)
    return RunSession(
        config, folder, writer, engine, time.monotonic(), lock, first, earlier, before
    )


def price_spend(folder: RunFolder) -> RunSpend:
    """Return a run's spend as its event log records it (:class:`~glossogen.eventlog.RunView`).

    Raises:
        StorageError: the log cannot be read.
    """
    view = RunView.load(folder.log_url)
    own = view.spend
    errors: dict[str, int] = {}
    for event in view.events:
        if isinstance(event, AgentRunCycleFailed) and event.event_id not in view.inherited:
            errors[event.error_kind] = errors.get(event.error_kind, 0) + 1
    note = None
    if own.total_cost_usd is None:
        notes = (
            [_unanswered_note(own.unanswered_requests, own.known_cost_usd)]
            if own.unanswered_requests
            else []
        )
        if own.timed_out_requests:
            notes.append(
                f"{own.timed_out_requests} model request(s) timed out after they were sent: the "
                "provider may have answered and billed them after the client left, so what they "
                f"cost is unknown; the calls priced sum to {own.known_cost_usd:.6f} USD, a lower "
                "bound"
            )
        if own.usage_unread:
            notes.append(
                f"{own.usage_unread} answered model call(s) returned no usage that could be "
                "read: what they cost is unknown"
            )
        note = (
            "; ".join(notes) or "a model of this run is not in the price catalogue (genai-prices)"
        )
    return RunSpend(
        total_cost_usd=_usd(own.total_cost_usd),
        judge_cost_usd=_usd(own.judge_cost_usd),
        agent_costs=[
            AgentCost(
                agent_id=seat.agent_id,
                cost_usd=_usd(seat.cost_usd),
                input_tokens=seat.input_tokens,
                output_tokens=seat.output_tokens,
                requests=seat.requests,
                cache_read_tokens=seat.cache_read_tokens,
                cache_write_tokens=seat.cache_write_tokens,
                cache_write_1h_tokens=seat.cache_write_1h_tokens,
            )
            for seat in own.agents.values()
        ],
        inherited_cost_usd=_usd(view.inherited_spend.total_cost_usd),
        model_errors=errors,
        cost_note=note,
        priced_cost_usd=None if note is None else _usd(own.known_cost_usd),
        tokens=own.tokens,
        judge_tokens=own.judge_tokens,
    )
