"""One typed reading of a run's event log: what counts, how it stands, what it spent.

:class:`RunView` is the one fold of a log; every reader of a run (pricing at the end of a run,
resume and fork, sweep spend, evaluation, every export table, ATIF, the run browser, MCP) takes
its facts from here rather than walking the events itself.

Rules, in the order a log is read:

- **Attempts.** A round cut off by a crash is played again after ``run_resumed``; what the
  cut-off attempt logged after the last ``round_completed`` is superseded and does not count
  (with ``postmortem_only`` its verdict stands and only what followed it is superseded).
  :func:`split_attempts` is that rule.
- **Copied rounds.** A derived run (``simulation_started.lineage``) begins with the source's
  events up to the boundary, copied; they count for the game (verdicts, messages, histories)
  but their spend was the source's: it is ``inherited``, never this run's own.
- **Spend** is every model and judge call the run paid for, superseded attempts included
  (a call that was answered was paid), in USD; null when some call was not costed. An
  answered call logged with no cost and no token is one whose usage could not be read: it is
  counted (``usage_unread``), its cost unknown, never taken as free. A
  GlossoGen 0.5.x log priced no call: its total is the one its ``simulation_ended`` recorded.
- **Duration** is the wall-clock seconds of every process that played the run, summed: each
  process's ``simulation_ended.process_seconds`` (a line written before schema 2: its
  ``duration_seconds``), or for a process that was killed, the ``process_seconds`` of its last
  ``round_completed`` (event timestamps are game time on a virtual clock, so they are used only
  for logs written before schema 2).
- **Books**: :meth:`RunView.check_books` names every rule the log breaks (a request that began
  and did not end once, a round without exactly one verdict per team, a ``simulation_ended``
  whose figures are not the sum of its priced events, copied spend unlike the source's, a
  damaged line): ``glossogen.eventlog._books``.
- **Status** is one vocabulary: ``completed``, ``incomplete``, ``error``, ``interrupted`` (as
  the last ``simulation_ended`` says), ``running`` (no ending, or an ending it can be resumed
  from, and a live writer holds the run or a launched process is about to: a resume or a
  derived run reads ``running`` from the moment its launch returns) and ``stopped`` (no
  ending, no live writer). ``error``, ``interrupted`` and ``stopped`` can be
  resumed. ``queued`` is a run folder that was claimed (``config.json`` written) but whose log
  holds no event yet: its player (a worker's flow run, a detached process) has not begun; no
  log is read for it (:data:`QUEUED`).

The attempts' rule is ``_attempts.py``, the spend fold ``_spend.py``, the status vocabulary
``_status.py``; :class:`RunView` reads the log through them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from glossogen.eventlog._attempts import split_attempts
from glossogen.eventlog._events import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentRunCycleFailed,
    AgentSwappedMidRun,
    Event,
    JudgeCalled,
    MessageSent,
    ModelRequestAbandoned,
    RoundCompleted,
    RoundResultRecorded,
    RunResumed,
    SimulationEnded,
    SimulationStarted,
    Verdict,
)
from glossogen.eventlog._reader import EventLogRead, read_events
from glossogen.eventlog._spend import _PRICED, _PRICED_TYPES, PricedEvent, SeatSpend, Spend, _add
from glossogen.eventlog._status import RESUMABLE_STATUSES, Status, live_status
from glossogen.eventlog._tape import Tape, read_tape
from glossogen.eventlog._upcast import LEGACY_SCHEMA_VERSION
from glossogen.eventlog._usage import copied_usage, with_usage

if TYPE_CHECKING:
    from glossogen.eventlog._books import BrokenRule


@dataclass
class Seat:
    """One registered seat as the log shows it: role, team and every model it ran under."""

    agent_id: str
    role: str
    team_id: str
    model: str
    provider: str
    models: list[str] = field(default_factory=list)
    """Every ``provider:model`` the seat ran under, in order of first use."""

    def use(self, model: str, provider: str) -> None:
        """Record that the seat now runs ``model`` under ``provider``."""
        self.model, self.provider = model, provider
        if f"{provider}:{model}" not in self.models:
            self.models.append(f"{provider}:{model}")


@dataclass
class RunView:
    """A run's event log, read once (see the module docstring for every rule).

    Attributes:
        read: The events as read, with the counts of damaged lines.
        live: Whether a live writer holds the run (decides ``running`` against ``stopped``).
    """

    read: EventLogRead
    live: bool = False
    started: SimulationStarted | None = None
    counted: list[Event] = field(default_factory=list)
    """The events that count, in log order (superseded attempts left out)."""
    inherited: frozenset[str] = frozenset()
    """``event_id`` of every event a derived run copied from its source."""
    tail: int = 0
    """How many of the last ``counted`` events came after the last round boundary (the round
    in progress, or the one a kill cut off before any resume)."""

    @classmethod
    def of(cls, events: EventLogRead, live: bool = False) -> RunView:
        """Fold ``events`` (one log, as read) into a view."""
        started = next((e for e in events.events if isinstance(e, SimulationStarted)), None)
        kept, pending, _ = split_attempts(events.events)
        inherited: frozenset[str] = frozenset()
        if started is not None and started.lineage:
            # A derived log: its own simulation_started, the copied events (verbatim, the
            # source's ids), then from its first run_resumed on, what it played itself.
            first_own = next(
                (i for i, e in enumerate(events.events) if isinstance(e, RunResumed)),
                len(events.events),
            )
            inherited = frozenset(e.event_id for e in events.events[1:first_own])
            if events.usage:  # the copied calls read for their usage alone
                inherited |= copied_usage(events, first_own)
        return cls(events, live, started, kept + pending, inherited, len(pending))

    @classmethod
    def load(cls, log_url: str, live: bool = False) -> RunView:
        """Read the log at ``log_url`` and fold it.

        Raises:
            FileNotFoundError: the log does not exist.
            StorageError: the storage is unreachable.
        """
        return cls.of(read_events(log_url), live)

    @cached_property
    def tape(self) -> Tape:
        """Each seat's model calls, in order, with what each got back (the events that count).

        Folded once per view, on first use.
        """
        return read_tape(self.counted, self.events)

    @property
    def rulings(self) -> list[JudgeCalled]:
        """The in-run judge's rulings that count, in log order (a derived run's copied ones too)."""
        return [e for e in self.counted if isinstance(e, JudgeCalled)]

    @property
    def settled(self) -> list[Event]:
        """The events that count up to the last round boundary (``counted`` without the tail)."""
        return self.counted[: len(self.counted) - self.tail]

    # -- what the log is ---------------------------------------------------------------------
    @property
    def is_run_log(self) -> bool:
        """True when the log starts a run (it holds a ``simulation_started``)."""
        return self.started is not None

    @property
    def events(self) -> list[Event]:
        """Every valid event as read, superseded ones included."""
        return self.read.events

    @property
    def damaged_lines(self) -> int:
        """Lines that did not parse or validate (a torn last line excluded)."""
        return self.read.invalid_lines

    @property
    def lost_lines(self) -> list[tuple[str, str]]:
        """Where an event of this log may be lost, as ``glossogen verify``'s ``log`` rule says it.

        Each is ``(where, what)``: the damaged lines (:attr:`damaged_note`) and the torn last
        line of a run that ended (:attr:`torn_note`). Empty for an intact log. Replay and a
        copied derivation refuse a log this names: a lost event cannot be played or copied.
        """
        return [note for note in (self.damaged_note, self.torn_note) if note is not None]

    @property
    def damaged_note(self) -> tuple[str, str] | None:
        """``("line 41", "1 damaged line(s): an event may be lost")`` (the first five numbered)."""
        read = self.read
        if not read.invalid_lines:
            return None
        numbers = ", ".join(str(n) for n in read.invalid_line_numbers[:5])
        more = " ..." if len(read.invalid_line_numbers) > 5 else ""
        where = f"line {numbers}{more}" if numbers else "the log"
        return where, f"{read.invalid_lines} damaged line(s): an event may be lost"

    def line_of(self, index: int) -> int:
        """The line of the log (from 1) that holds ``events[index]``."""
        numbers = self.read.line_numbers
        return numbers[index] if len(numbers) == len(self.events) else index + 1

    @cached_property
    def repeated(self) -> list[tuple[int, int]]:
        """Each event an earlier line already holds (its ``event_id``): ``(earlier, index)``.

        Indexes into :attr:`events`; a line written twice (``glossogen verify``'s ``log`` rule).
        """
        first: dict[str, int] = {}
        twice: list[tuple[int, int]] = []
        for index, event in enumerate(self.events):
            seen = first.setdefault(event.event_id, index)
            if seen != index:
                twice.append((seen, index))
        return twice

    @property
    def repeated_note(self) -> tuple[str, str] | None:
        """``("line 21", "event <id> (model_request_sent) is in the log twice (lines 20, 21)")``.

        With more than one, the lines of the first five and a count; None when no event is in
        the log twice.
        """
        twice = self.repeated
        if not twice:
            return None
        lines = [self.line_of(index) for _, index in twice]
        where = f"line {', '.join(str(n) for n in lines[:5])}{' ...' if len(lines) > 5 else ''}"
        seen, index = twice[0]
        event = self.events[index]
        both = f"lines {self.line_of(seen)}, {self.line_of(index)}"
        named = f"event {event.event_id} ({event.event_type})"
        if len(twice) == 1:
            return where, f"{named} is in the log twice ({both})"
        first = f"the first, {named}: {both}"
        return where, f"{len(twice)} events are in the log twice ({first})"

    @property
    def torn_note(self) -> tuple[str, str] | None:
        """The torn last line of a run that ended and no process writes, or None."""
        return self.torn_tail if self.ended is not None else None

    @property
    def torn_tail(self) -> tuple[str, str] | None:
        """The torn last line of a log no process writes, whether the run ended or not.

        ``("line 46", "the last line is torn (cut off mid-write): an event may be lost")``: a
        run killed mid-write, or whose ``simulation_ended`` itself was cut off; None when the
        last line is whole or a live writer may still finish it.
        """
        torn = self.read.truncated_line
        if torn is None or self.live:
            return None
        return f"line {torn}", "the last line is torn (cut off mid-write): an event may be lost"

    @property
    def derived(self) -> bool:
        """True for a fork or an agent swap (its log begins with copied rounds)."""
        return bool(self.started and self.started.lineage)

    # -- how it stands -----------------------------------------------------------------------
    @property
    def ended(self) -> SimulationEnded | None:
        """The ``simulation_ended`` that closes the log, or None (running or stopped)."""
        for event in reversed(self.events):
            if isinstance(event, SimulationEnded):
                return event
            if isinstance(event, RunResumed):
                return None  # resumed after its last ending: it has not ended again
        return None

    @property
    def status(self) -> Status:
        """The run's status (the module docstring's vocabulary)."""
        ended = self.ended
        return cast(Status, live_status(ended.status if ended else None, self.live))

    @property
    def resumable(self) -> bool:
        """True for a run ``--resume`` continues: ``error``, ``interrupted`` or ``stopped``."""
        return self.is_run_log and self.status in RESUMABLE_STATUSES

    # -- the game ----------------------------------------------------------------------------
    @property
    def verdicts(self) -> dict[int, tuple[list[Verdict], bool]]:
        """Verdicts per round that counts, and whether the round was void."""
        recorded: dict[int, tuple[list[Verdict], bool]] = {}
        for event in self.counted:
            if isinstance(event, RoundResultRecorded):
                verdicts, void = recorded.get(event.round_number, ([], False))
                reason = event.reason
                if event.void and ": " in reason:
                    reason = reason.split(": ", 1)[1]
                verdict = Verdict(team_id=event.team_id, success=event.success, reason=reason)
                recorded[event.round_number] = ([*verdicts, verdict], void or event.void)
        return recorded

    @property
    def rounds_played(self) -> int:
        """Rounds with a recorded verdict."""
        return len(self.verdicts)

    @property
    def rounds_won(self) -> int:
        """Rounds every team won (a void round never counts)."""
        return sum(
            1
            for verdicts, void in self.verdicts.values()
            if verdicts and not void and all(v.success for v in verdicts)
        )

    @property
    def messages(self) -> list[MessageSent]:
        """Channel messages that count, postmortems included, in log order."""
        return [e for e in self.counted if isinstance(e, MessageSent)]

    @property
    def total_chars(self) -> int:
        """Characters of those messages (composed text)."""
        return sum(m.chars for m in self.messages)

    @property
    def roster(self) -> dict[str, Seat]:
        """Every registered seat, in registration order, with the models it ran under."""
        seats: dict[str, Seat] = {}
        for event in self.counted:
            if type(event) is AgentRegistered:
                seat = seats.setdefault(
                    event.agent_id,
                    Seat(event.agent_id, event.role, event.team_id, event.model, event.provider),
                )
                seat.use(event.model, event.provider)
            elif type(event) is AgentSwappedMidRun and event.agent_id in seats:
                seats[event.agent_id].use(event.model, event.provider)
        return seats

    def histories(self) -> dict[str, list[Any]]:
        """Each seat's exact pydantic-ai message history, as the counted events rebuild it."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        histories: dict[str, list[Any]] = {}
        for event in self.counted:
            if isinstance(event, AgentRegistered):
                histories[event.agent_id] = []  # a (re-)registration starts a fresh history
            elif isinstance(event, AgentHistoryAppended):
                messages = ModelMessagesTypeAdapter.validate_python(event.messages)
                history = histories.setdefault(event.agent_id, [])
                start = len(history) if event.from_index is None else event.from_index
                histories[event.agent_id] = history[:start] + list(messages)
        return histories

    # -- the books ---------------------------------------------------------------------------
    def check_books(
        self, run_id: str | None = None, source: RunView | None = None
    ) -> list[BrokenRule]:
        """Every rule this log's books break (``glossogen.eventlog._books``), in rule order.

        Args:
            run_id: How each line names the run (default: ``simulation_started.run_id``).
            source: A derived run's source, read: its copied events are checked against it.
        """
        from glossogen.eventlog._books import check_books

        name = run_id or (self.started.run_id if self.started else "?")
        return check_books(self, name, source)

    # -- spend and time ----------------------------------------------------------------------
    @cached_property
    def priced(self) -> list[PricedEvent]:
        """Every priced event, superseded and copied ones included, in log order.

        Model and judge calls and cut-off attempts, and the calls read for their usage alone
        (``read.usage``); listed once per view, so the spend folds read these, not the whole log.
        """
        if self.read.usage:
            # with_usage keeps the read's items of these types, each a PricedEvent or CallUsage
            return with_usage(self.read, _PRICED_TYPES)  # type: ignore[return-value]
        return [e for e in self.read.events if isinstance(e, _PRICED)]

    def _spend(self, inherited: bool) -> Spend:
        spend = Spend()
        agents = spend.agents
        for event in self.counted:  # every registered seat, in registration order (roster's)
            if type(event) is AgentRegistered and event.agent_id not in agents:
                agents[event.agent_id] = SeatSpend(event.agent_id)
        copied = self.inherited
        count = spend.count
        if copied:
            for call in self.priced:
                if (call.event_id in copied) == inherited:
                    count(call)
        elif not inherited:  # a run that copied nothing paid for every call in its log
            for call in self.priced:
                count(call)
        ended = self.ended
        if not inherited and ended is not None and ended.schema_version == LEGACY_SCHEMA_VERSION:
            spend.recorded_total_usd = ended.total_cost_usd
        return spend

    @property
    def spend(self) -> Spend:
        """This run's own spend: every call it paid for (superseded attempts included)."""
        return self._spend(inherited=False)

    @property
    def inherited_spend(self) -> Spend:
        """The spend of a derived run's copied rounds (the source paid it)."""
        return self._spend(inherited=True)

    def spend_by_round(self) -> dict[int, float | None]:
        """This run's own spend per round number (USD; None when some call was not costed)."""
        rounds: dict[int, float | None] = {}
        inherited = self.inherited
        for event in self.priced:  # final classes: ``type(event) is C`` is ``isinstance``
            if inherited and event.event_id in inherited:
                continue
            if type(event) is ModelRequestAbandoned:  # the round that sent it paid it
                number = event.sent_in_round
            elif type(event) is AgentRunCycleFailed and event.cost_usd == 0.0:
                continue
            else:
                number = event.round_number
            rounds[number] = _add(rounds.get(number, 0.0), event.cost_usd)
        return rounds

    @property
    def duration_seconds(self) -> float:
        """Seconds every process that played this run spent on it, summed (module docstring)."""
        total = 0.0
        segment: list[Event] = []
        for event in self.events:
            if event.event_id in self.inherited:
                continue
            if isinstance(event, RunResumed | SimulationStarted) and segment:
                total += _segment_seconds(segment)
                segment = []
            segment.append(event)
        return round(total + (_segment_seconds(segment) if segment else 0.0), 3)


def _segment_seconds(segment: list[Event]) -> float:
    """Seconds one process played (wall clock).

    Its ``simulation_ended.process_seconds`` (before schema 2: its ``duration_seconds``); for a
    process that was killed, the ``process_seconds`` of its last ``round_completed`` (what it
    played up to its last boundary: the cut-off round's seconds are not known); for a log
    before schema 2, the span of its event timestamps.
    """
    for event in reversed(segment):
        if isinstance(event, SimulationEnded):
            if event.process_seconds is not None:
                return event.process_seconds
            if event.duration_seconds is not None:
                return event.duration_seconds
    for event in reversed(segment):
        if isinstance(event, RoundCompleted) and event.process_seconds is not None:
            return event.process_seconds
    if any(e.schema_version >= 2 for e in segment):
        return 0.0  # killed before its first boundary: no wall-clock figure was logged
    return (segment[-1].timestamp - segment[0].timestamp).total_seconds()
