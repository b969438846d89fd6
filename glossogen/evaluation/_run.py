"""Load a run for evaluation: its log read once, its scenario, its primary channels.

Only the events that count are kept (a round cut off by a crash and played again after
``run_resumed`` counts once: :func:`glossogen.derive.read_state`). A GlossoGen 0.5 log is read
through the ledger's upcasters like one of ours; its recorded knobs may not validate against
today's knobs model, in which case the scenario's channels come from its default knobs and a
budget is known only where the log states it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from glossogen import exit_codes
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    MessageSent,
    RoundCompleted,
    RoundResultRecorded,
    RoundStarted,
    SimulationEnded,
    SimulationStarted,
    read_events,
)
from glossogen.scenario import Scenario, UnknownScenarioError, load_scenario, scenario_names
from glossogen.storage import StorageError, join, open_fs, translate_errors

EventT = TypeVar("EventT", bound=Event)


class EvaluationError(ValueError):
    """A run or request that cannot be evaluated; one line, and the exit code to return."""

    def __init__(self, message: str, exit_code: int = int(exit_codes.REFUSED)) -> None:
        """Keep the one-line message and the exit code (64 usage, 65 refused, 66 unreadable)."""
        super().__init__(message)
        self.exit_code = exit_code


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
        run_dir: The run folder (local path or fsspec URL).
        scenario: Scenario name.
        run_id: ``<scenario>/<timestamp>``.
        log_sha256: SHA-256 (hex) of the event log's bytes as read.
        events: The events that count, in log order.
        status: ``simulation_ended`` status, or None when the log has none.
        primary_channels: Channels the language metrics read (the scenario's main-phase ones).
        metered_channels: Channels whose characters are charged to the round budget.
        budget_chars: The per-round budget of the metered channels, or None when unknown.
        seats: Agents by id, in registration order.
        rounds_played: Rounds that started their main phase, ascending.
        messages: ``message_sent`` events on the primary channels in phase ``main``.
        hooks: What the run offers metrics (see :data:`~glossogen.evaluation._contract.Hook`).
        skipped: Lines of the log the reader skipped (damaged or of unknown event types).
    """

    run_dir: str
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
    _all_events: list[Event] = field(default_factory=list, repr=False)

    @cached_property
    def histories(self) -> dict[str, list[Any]]:
        """Each agent's pydantic-ai message history at the end of the log (parsed on first use)."""
        from glossogen.derive import read_state

        return read_state(self._all_events).histories

    def of_type(self, event_class: type[EventT]) -> list[EventT]:
        """Return the counting events of class ``event_class``, in log order."""
        return [e for e in self.events if isinstance(e, event_class)]


def log_url(run_dir: str, scenario: str) -> str:
    """Return the URL of the run's event log, ``<run_dir>/<scenario>.jsonl``."""
    return join(run_dir, f"{scenario}.jsonl")


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
    (a folder stored anywhere, ``.`` included); otherwise the parent folder's name, as in
    ``<runs_dir>/<scenario>/<timestamp>``.

    Raises:
        EvaluationError: 64 when the folder holds the logs of several installed scenarios.
    """
    fs, path = open_fs(run_dir)
    try:
        stems = {p.rsplit("/", 1)[-1][: -len(".jsonl")] for p in fs.glob(f"{path}/*.jsonl")}
    except OSError:
        stems = set()
    found = sorted(stems & set(scenario_names()))
    parent = posixpath.basename(posixpath.dirname(path.replace(os.sep, "/").rstrip("/")))
    if len(found) == 1:
        return found[0]
    if len(found) > 1 and parent not in found:
        raise EvaluationError(
            f"{run_dir} holds logs of several scenarios ({', '.join(found)}): name the scenario",
            int(exit_codes.USAGE),
        )
    return parent


def _read_bytes(url: str) -> bytes:
    fs, path = open_fs(url)
    with translate_errors(url, fs):
        return fs.cat_file(path)


def _missing_log(run_dir: str, scenario: str) -> EvaluationError:
    """65 when the folder holds another scenario's log, else 66 (nothing to read)."""
    fs, path = open_fs(run_dir)
    try:
        others = sorted(p.rsplit("/", 1)[-1][: -len(".jsonl")] for p in fs.glob(f"{path}/*.jsonl"))
    except OSError:
        others = []
    others = [o for o in others if not o.startswith(("_", "."))]
    if len(others) == 1:
        return EvaluationError(f"{run_dir} holds a {others[0]!r} run, not {scenario!r}")
    return EvaluationError(
        f"no event log {scenario}.jsonl in {run_dir}", int(exit_codes.UNREADABLE)
    )


def _scenario_instance(cls: type[Scenario], config: dict[str, Any]) -> tuple[Scenario, bool]:
    """Build the scenario from the recorded knobs; fall back to its defaults (False) if invalid."""
    try:
        return cls(cls.knobs_model.model_validate(config)), True
    except ValueError:
        known = {k: v for k, v in config.items() if k in cls.knobs_model.model_fields}
        try:
            return cls(cls.knobs_model.model_validate(known)), False
        except ValueError:
            return cls(cls.knobs_model()), False


def _counting(events: list[Event]) -> list[Event]:
    """Return the events that count; a log with no round boundary (0.5) counts whole."""
    if not any(isinstance(e, RoundCompleted) for e in events):
        return events
    from glossogen.derive import read_state

    return read_state([e for e in events if not isinstance(e, AgentHistoryAppended)]).events


def load_run(run_dir: str, scenario: str) -> LoadedRun:
    """Read ``<run_dir>/<scenario>.jsonl`` once and describe the run for the metrics.

    Args:
        run_dir: The run folder (local path, relative ones made absolute, or fsspec URL).
        scenario: The scenario name given on the command line.

    Returns:
        The loaded run.

    Raises:
        EvaluationError: 66 when the log cannot be read or holds no readable
            ``simulation_started`` (empty, or only damaged lines: not a run log); 65 when it
            names another scenario or the scenario is not installed.
    """
    run_dir = resolve_run_dir(run_dir)
    url = log_url(run_dir, scenario)
    try:
        data = _read_bytes(url)
    except FileNotFoundError:
        raise _missing_log(run_dir, scenario) from None
    except (StorageError, OSError) as exc:
        raise EvaluationError(f"cannot read {url}: {exc}", int(exit_codes.UNREADABLE)) from None
    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError as exc:
        raise EvaluationError(str(exc)) from None
    read = read_events(url)
    everything = read.events
    skipped = SkippedLines(read.invalid_lines, read.unknown_lines, read.truncated_tail)
    started = next((e for e in everything if isinstance(e, SimulationStarted)), None)
    if started is None:
        what = "is empty" if not data.strip() else "has no readable simulation_started event"
        raise EvaluationError(f"{url} {what}: not a run log", int(exit_codes.UNREADABLE))
    recorded = started.scenario_name
    if recorded != scenario:
        raise EvaluationError(f"{run_dir} holds a {recorded!r} run, not {scenario!r}")
    instance, knobs_exact = _scenario_instance(cls, started.scenario_config)
    specs = instance.channels()
    primary = tuple(
        c.channel_id
        for c in specs
        if getattr(c, "primary", c.phase == "main") and c.phase == "main"
    )
    metered = tuple(c.channel_id for c in specs if c.metered)
    events = _counting(everything)
    ended = [e for e in everything if isinstance(e, SimulationEnded)]
    seats: dict[str, Seat] = {}
    for e in events:
        if isinstance(e, AgentRegistered):
            seats[e.agent_id] = Seat(e.agent_id, e.team_id, e.model, e.provider)
        elif isinstance(e, AgentSwappedMidRun):
            old = seats[e.agent_id]
            seats[old.agent_id] = Seat(old.agent_id, old.team_id, e.model, e.provider)
    messages = [
        e
        for e in events
        if isinstance(e, MessageSent) and e.phase == "main" and e.channel_id in primary
    ]
    rounds = sorted(
        {
            e.round_number
            for e in events
            if (isinstance(e, RoundStarted) and e.phase == "main")
            or isinstance(e, RoundResultRecorded)
        }
    )
    budget = next(
        (m.budget_chars for m in events if isinstance(m, MessageSent) and m.budget_chars),
        None,
    )
    if budget is None and knobs_exact:
        budget = instance.budget_chars()
    hooks = {"channels"}
    if any(isinstance(e, RoundResultRecorded) for e in events):
        hooks.add("verdicts")
    if budget and metered:
        hooks.add("budget")
    if any(isinstance(e, AgentHistoryAppended) for e in everything):
        hooks.add("agent_history")
    return LoadedRun(
        run_dir=run_dir,
        scenario=scenario,
        run_id=started.run_id,
        log_sha256=hashlib.sha256(data).hexdigest(),
        events=events,
        status=ended[-1].status if ended else None,
        primary_channels=primary,
        metered_channels=metered,
        budget_chars=budget,
        seats=seats,
        rounds_played=rounds,
        messages=messages,
        hooks=hooks,
        skipped=skipped,
        _all_events=everything,
    )
