"""Load a run for evaluation: its folder from the runs store, its log read once through RunView.

The run's files are named by :class:`~glossogen.storage.RunFolder` (a folder stored anywhere
too: :meth:`~glossogen.storage.RunFolder.holding`), and its log is read and folded once by
:class:`~glossogen.eventlog.RunView`, whose rules decide what counts (a round cut off by a crash
and played again after ``run_resumed`` counts once), the roster, and this run's own spend per
round. For an unfinished run the round in progress does not count (``RunView.settled``); a log
with no round boundary at all (GlossoGen 0.5) counts whole. A GlossoGen 0.5 log is read through
the ledger's upcasters like one of ours; its recorded knobs may not validate against today's
knobs model, in which case the scenario's channels come from its default knobs and a budget is
known only where the log states it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, TypeVar

from glossogen import exit_codes
from glossogen.evaluation._read import FACTS, read_for_metrics
from glossogen.eventlog import (
    AgentHistoryAppended,
    Event,
    MessageSent,
    RoundCompleted,
    RoundResultRecorded,
    RoundStarted,
    RunView,
)
from glossogen.refusals import Refusal
from glossogen.scenario import Scenario, UnknownScenarioError, load_scenario, scenario_names
from glossogen.storage import LABELS, RunFolder, StorageError

EventT = TypeVar("EventT", bound=Event)


class EvaluationError(ValueError):
    """A run or request that cannot be evaluated; one line, and the exit code to return."""

    def __init__(
        self,
        message: str = "",
        exit_code: int = int(exit_codes.REFUSED),
        refusal: Refusal | None = None,
    ) -> None:
        """Keep the one-line message and the exit code (64 usage, 65 refused, 66 unreadable).

        A ``refusal`` (a request value refused) words the message when none is given; each
        surface words it again with its own name for the field (``exc.refusal``).
        """
        super().__init__(message or (refusal.worded() if refusal else ""))
        self.exit_code = exit_code
        self.refusal = refusal
        self.also: tuple[EvaluationError, ...] = ()
        """The request's other values refused, in its order (this one is the first): a
        cohort's selection names each (``launch.check_cohort``)."""

    @property
    def every(self) -> tuple[EvaluationError, ...]:
        """This refusal and :attr:`also`: every value of the request refused, in order."""
        return (self, *self.also)


@dataclass(frozen=True)
class SkippedLines:
    """Lines of the event log the reader skipped (each costs only itself).

    Attributes:
        invalid: Lines that are not JSON objects or fail validation (the truncated tail excluded).
        unknown: JSON objects whose ``event_type`` no installed event class knows.
        truncated_tail: Whether the last line was cut mid-write (ignored).
    """

    invalid: int = 0
    unknown: int = 0
    truncated_tail: bool = False

    def __bool__(self) -> bool:
        return bool(self.invalid or self.unknown or self.truncated_tail)


@dataclass(frozen=True)
class Seat:
    """One agent of the run: its team and the model it last played under."""

    agent_id: str
    team_id: str
    model: str
    provider: str


@dataclass
class LoadedRun:
    """A run as the metrics see it.

    Attributes:
        folder: The run folder (its URL, run id and files).
        view: The one reading of its log (spend, verdicts, histories, damaged lines).
        scenario: Scenario name.
        run_id: The run id its ``simulation_started`` recorded (``<scenario>/<timestamp>``).
        log_sha256: SHA-256 (hex) of the event log's bytes as read.
        events: The events that count, in log order (see the module docstring).
        status: ``simulation_ended`` status, or None when the log has not ended (again).
        primary_channels: Channels the language metrics read (the scenario's main-phase ones).
        metered_channels: Channels whose characters are charged to the round budget.
        budget_chars: The per-round budget of the metered channels, or None when unknown.
        seats: Agents by id, in registration order.
        rounds_played: Rounds that started their main phase, ascending.
        messages: ``message_sent`` events on the primary channels in phase ``main``.
        hooks: What the run offers metrics (see :data:`~glossogen.evaluation._contract.Hook`).
        skipped: Lines of the log the reader skipped (damaged or of unknown event types).
        whole: ``view`` parsed every event of the log. False when only the event types the
            metrics read were parsed: such a view cannot check the run's books (its spend and
            tokens would be summed over no events); read the whole log for that.
    """

    folder: RunFolder
    view: RunView
    scenario: str
    run_id: str
    log_sha256: str
    events: list[Event]
    status: str | None
    primary_channels: tuple[str, ...]
    metered_channels: tuple[str, ...]
    budget_chars: int | None
    seats: dict[str, Seat]
    rounds_played: list[int]
    messages: list[MessageSent]
    hooks: set[str] = field(default_factory=set)
    skipped: SkippedLines = field(default_factory=SkippedLines)
    whole: bool = True

    @property
    def run_dir(self) -> str:
        """The run folder's URL (a local folder as an absolute path)."""
        return self.folder.url

    @property
    def histories(self) -> dict[str, list[Any]]:
        """Each agent's pydantic-ai message history at the end of the log (RunView's rebuild)."""
        return self.view.histories()

    @property
    def copied_rounds(self) -> set[int]:
        """Rounds a derived run copied from its source (their spend was the source's)."""
        inherited = self.view.inherited
        if not inherited:  # a run that copied nothing (the common case): no pass over its events
            return set()
        return {
            e.round_number
            for e in self.events
            if type(e) is RoundStarted and e.event_id in inherited  # a final class
        }

    def of_type(self, event_class: type[EventT]) -> list[EventT]:
        """Return the counting events of class ``event_class``, in log order.

        Each class among the events is asked once whether it is one (``isinstance`` on an
        event is an ABC's check, a few times the cost of comparing its class).
        """
        events = self.events
        chosen = {t for t in set(map(type, events)) if issubclass(t, event_class)}
        return [e for e in events if type(e) in chosen]  # type: ignore[misc]  # of event_class


def resolve_run_dir(run_dir: str) -> str:
    """Return ``run_dir`` as an absolute path when it is a local folder (``.``, ``runs/x/1``).

    An fsspec URL (``s3://...``, ``file://...``) is returned unchanged, so the flow, which may
    run in another working directory, reads and writes the same folder.
    """
    if "://" in run_dir:
        return run_dir
    return os.path.abspath(os.path.expanduser(run_dir))


def find_scenario(run_dir: str) -> str:
    """Return the scenario of the run in ``run_dir`` when none is named.

    The folder's event log ``<name>.jsonl`` names it, when ``<name>`` is an installed scenario
    (a folder stored anywhere, ``.`` included); otherwise the scenario of the run id the
    folder's place spells (``<runs_dir>/<scenario>/<timestamp>``).

    Raises:
        EvaluationError: 64 when the folder holds the logs of several installed scenarios and
            its place names none of them; 66 when neither says.
    """
    run_dir = resolve_run_dir(run_dir)
    try:
        found = RunFolder.logs_in(run_dir, scenario_names())
    except (StorageError, OSError):
        found = []
    try:
        placed: str | None = RunFolder.at(run_dir).scenario
    except ValueError:
        placed = None
    if len(found) == 1:
        return found[0]
    if len(found) > 1 and placed not in found:
        raise EvaluationError(
            f"{run_dir} holds logs of several scenarios ({', '.join(found)}): name the scenario",
            int(exit_codes.USAGE),
        )
    if placed is None:
        raise EvaluationError(
            f"no event log of an installed scenario in {run_dir}", int(exit_codes.UNREADABLE)
        )
    return placed


def _missing_log(folder: RunFolder, scenario: str) -> EvaluationError:
    """Say why the folder holds no ``<scenario>.jsonl``, with its exit code.

    64 for a scenario no package provides (the CLI's line), 65 when the folder holds another
    scenario's log, else 66 (nothing to read).
    """
    if scenario not in scenario_names():
        try:
            load_scenario(scenario)
        except UnknownScenarioError as exc:
            return EvaluationError(str(exc), int(exit_codes.USAGE))
    try:
        others = [s for s in RunFolder.logs_in(folder.url, scenario_names()) if s != scenario]
    except (StorageError, OSError):
        others = []
    if len(others) == 1:
        return EvaluationError(f"{folder.url} holds a {others[0]!r} run, not {scenario!r}")
    return EvaluationError(
        f"no event log {scenario}.jsonl in {folder.url}", int(exit_codes.UNREADABLE)
    )


def damaged(folder: RunFolder, line: str) -> EvaluationError:
    """Refuse a damaged run (66) in the line every surface says of it.

    A run folder placed in a runs directory (``<runs_dir>/<scenario>/<unix_ts>``) has its file
    named by its path within it (``veyru/1796446580/veyru.jsonl is not a run log (empty)``),
    as the listings' notes, ``evaluate --runs-dir`` and MCP's ``evaluate_run`` name it, however
    its folder was typed; a folder stored anywhere else (``x/run-fresh``) by its path.
    """
    try:
        placed = RunFolder.at(folder.url).run_id == folder.run_id
    except ValueError:
        placed = False
    said = folder.within_runs_dir(line) if placed else line
    return EvaluationError(said, int(exit_codes.UNREADABLE))


def scenario_instance(cls: type[Scenario], config: dict[str, Any]) -> tuple[Scenario, bool]:
    """Build the scenario from the recorded knobs; fall back to its defaults (False) if invalid."""
    try:
        return cls(cls.knobs_model.model_validate(config)), True
    except ValueError:
        known = {k: v for k, v in config.items() if k in cls.knobs_model.model_fields}
        try:
            return cls(cls.knobs_model.model_validate(known)), False
        except ValueError:
            return cls(cls.knobs_model()), False


def open_folder(run_dir: str, scenario: str) -> RunFolder:
    """Return the folder at ``run_dir`` (made absolute when local) holding a ``scenario`` run.

    Raises:
        EvaluationError: 65 for a scenario name that cannot name a run folder.
    """
    try:
        return RunFolder.holding(resolve_run_dir(run_dir), scenario)
    except ValueError as exc:
        raise EvaluationError(str(exc)) from None


@dataclass(frozen=True)
class RunLog:
    """A run's event log as read once: its bytes and their SHA-256 (hex)."""

    data: bytes
    sha256: str

    @classmethod
    def read(cls, folder: RunFolder) -> RunLog:
        """Read the folder's log once and hash it.

        Raises:
            EvaluationError: as :func:`read_log`.
        """
        data = read_log(folder)
        return cls(data, hashlib.sha256(data).hexdigest())


def log_digest(folder: RunFolder) -> str:
    """Return the SHA-256 (hex) of the folder's event log as stored.

    Raises:
        EvaluationError: as :func:`read_log`.
    """
    return hashlib.sha256(read_log(folder)).hexdigest()


def read_log(folder: RunFolder) -> bytes:
    """Return the bytes of the folder's event log as stored.

    Raises:
        EvaluationError: 66 when the log is missing, a folder or unreadable; 65 when the folder
            holds another scenario's log.
    """
    try:
        return folder.log_bytes()
    except (FileNotFoundError, IsADirectoryError):
        if folder.log_state() == "folder":
            raise damaged(folder, f"{folder.log_url} is a folder, not an event log") from None
        raise _missing_log(folder, folder.scenario) from None
    except (StorageError, OSError) as exc:
        raise EvaluationError(
            f"cannot read {folder.log_url}: {exc}", int(exit_codes.UNREADABLE)
        ) from None


def _fold(
    events: list[Event], primary: tuple[str, ...]
) -> tuple[list[MessageSent], set[int], int | None, bool]:
    """Fold the counting events once for what a loaded run describes.

    Returns the primary-channel messages of phase ``main``, the rounds played (a main-phase
    ``round_started`` or a verdict), the first budget a message states, and whether any verdict
    was recorded.
    """
    messages: list[MessageSent] = []
    rounds: set[int] = set()
    budget: int | None = None
    verdicts = False
    for e in events:  # final classes: ``type(e) is C`` is ``isinstance`` at a fraction of its cost
        if type(e) is MessageSent:
            if budget is None and e.budget_chars:
                budget = e.budget_chars
            if e.phase == "main" and e.channel_id in primary:
                messages.append(e)
        elif type(e) is RoundStarted:
            if e.phase == "main":
                rounds.add(e.round_number)
        elif type(e) is RoundResultRecorded:
            rounds.add(e.round_number)
            verdicts = True
    return messages, rounds, budget, verdicts


def _check_labels(folder: RunFolder) -> None:
    """Refuse a run whose ``labels.json`` cannot be read, as every cohort surface reads it.

    No metric reads the labels, but the export, the analysis and a cohort's evaluation count
    such a run unreadable (``.../labels.json is not UTF-8 text (byte 0xff at offset 7)``): a
    damaged run folder is a loud failure, never scored by one surface and skipped by another.

    Raises:
        EvaluationError: 66, the file's one line.
    """
    try:
        folder.read_object(LABELS)
    except ValueError as exc:
        raise damaged(folder, str(exc)) from None


def load_run(
    run_dir: str | RunFolder,
    scenario: str | None = None,
    log: RunLog | None = None,
    reads: frozenset[str] | None = None,
    usage: frozenset[str] = frozenset(),
) -> LoadedRun:
    """Read the run's event log once (through :class:`RunView`) and describe it for the metrics.

    The log's bytes are read once, hashed and parsed; only the event types in ``reads`` (and
    :data:`~glossogen.evaluation._read.FACTS`) are parsed when it is given
    (:func:`~glossogen.evaluation._read.read_for_metrics`), so ``events`` holds those alone.

    Args:
        run_dir: The run folder, or its URL (local path, relative ones made absolute).
        scenario: The scenario name given on the command line (default: the folder's).
        log: The log when the caller has read it already (not read again).
        reads: Event types the metrics read (None: every event).
        usage: Priced event types the metrics read for their usage alone (their spend).

    Returns:
        The loaded run.

    Raises:
        EvaluationError: 66 when the log cannot be read or holds no readable
            ``simulation_started`` (empty, or only damaged lines: ``... is not a run log
            (empty)``; an empty one a live writer is about to begin is no log yet), or the
            folder's ``labels.json`` cannot be read (not UTF-8 text, not a JSON object: as
            every cohort surface counts the run unreadable), each file named as
            :func:`damaged` names it; 65 when it
            names another scenario or the scenario is not installed.
    """
    if isinstance(run_dir, RunFolder):
        folder = run_dir
        if scenario is not None and scenario != folder.scenario:
            folder = open_folder(folder.url, scenario)
    else:
        folder = open_folder(run_dir, scenario or find_scenario(run_dir))
    scenario = folder.scenario
    log = log or RunLog.read(folder)
    _check_labels(folder)
    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError as exc:
        raise EvaluationError(str(exc)) from None
    view = RunView.of(read_for_metrics(log.data, None if reads is None else FACTS | reads, usage))
    started = view.started
    if started is None:  # an empty log a live writer is about to begin: as no log yet
        if folder.unbegun():
            raise _missing_log(folder, scenario)
        why = "empty" if folder.log_state() == "empty" else "no simulation_started event"
        raise damaged(folder, folder.not_a_run_log(why))
    recorded = started.scenario_name
    if recorded != scenario:
        raise EvaluationError(f"{folder.url} holds a {recorded!r} run, not {scenario!r}")
    instance, knobs_exact = scenario_instance(cls, started.scenario_config)
    specs = instance.channels()
    primary = tuple(
        c.channel_id
        for c in specs
        if getattr(c, "primary", c.phase == "main") and c.phase == "main"
    )
    metered = tuple(c.channel_id for c in specs if c.metered)
    read_types = set(map(type, view.events))  # final classes: membership is isinstance
    bounded = RoundCompleted in read_types
    events = view.settled if bounded else view.counted
    seats = {
        s.agent_id: Seat(s.agent_id, s.team_id, s.model, s.provider) for s in view.roster.values()
    }
    messages, played, budget, verdicts = _fold(events, primary)
    rounds = sorted(played)
    if budget is None and knobs_exact:
        budget = instance.budget_chars()
    hooks = {"channels"}
    if verdicts:
        hooks.add("verdicts")
    if budget and metered:
        hooks.add("budget")
    if AgentHistoryAppended in read_types:
        hooks.add("agent_history")
    ended = view.ended
    read = view.read
    return LoadedRun(
        folder=folder,
        view=view,
        scenario=scenario,
        run_id=started.run_id,
        log_sha256=log.sha256,
        events=events,
        status=ended.status if ended is not None else None,
        primary_channels=primary,
        metered_channels=metered,
        budget_chars=budget,
        seats=seats,
        rounds_played=rounds,
        messages=messages,
        whole=reads is None,
        hooks=hooks,
        skipped=SkippedLines(read.invalid_lines, read.unknown_lines, read.truncated_tail),
    )
