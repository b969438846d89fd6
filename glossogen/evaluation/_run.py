"""Load a run for evaluation: its log read once, its scenario, its primary channels.

Only the events that count are kept (a round cut off by a crash and played again after
``run_resumed`` counts once: :func:`glossogen.derive.read_state`). A GlossoGen 0.5 log is read
through the ledger's upcasters like one of ours; its recorded knobs may not validate against
today's knobs model, in which case the scenario's channels come from its default knobs and a
budget is known only where the log states it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from glossogen import exit_codes
from glossogen.eventlog import AgentRegistered, Event, MessageSent, read_events
from glossogen.scenario import Scenario, UnknownScenarioError, load_scenario
from glossogen.storage import StorageError, join, open_fs, translate_errors


class EvaluationError(ValueError):
    """A run or request that cannot be evaluated; one line, and the exit code to return."""

    def __init__(self, message: str, exit_code: int = int(exit_codes.REFUSED)) -> None:
        """Keep the one-line message and the exit code (64 usage, 65 refused, 66 unreadable)."""
        super().__init__(message)
        self.exit_code = exit_code


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
    _all_events: list[Event] = field(default_factory=list, repr=False)

    @cached_property
    def histories(self) -> dict[str, list[Any]]:
        """Each agent's pydantic-ai message history at the end of the log (parsed on first use)."""
        from glossogen.derive import read_state

        return read_state(self._all_events).histories

    def of_type(self, event_type: str) -> list[Any]:
        """Return the counting events of ``event_type``, in log order."""
        return [e for e in self.events if e.event_type == event_type]


def log_url(run_dir: str, scenario: str) -> str:
    """Return the URL of the run's event log, ``<run_dir>/<scenario>.jsonl``."""
    return join(run_dir, f"{scenario}.jsonl")


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
    if not any(e.event_type == "round_completed" for e in events):
        return events
    from glossogen.derive import read_state

    return read_state([e for e in events if e.event_type != "agent_history_appended"]).events


def load_run(run_dir: str, scenario: str) -> LoadedRun:
    """Read ``<run_dir>/<scenario>.jsonl`` once and describe the run for the metrics.

    Args:
        run_dir: The run folder (local path or fsspec URL).
        scenario: The scenario name given on the command line.

    Returns:
        The loaded run.

    Raises:
        EvaluationError: 66 when the log cannot be read; 65 when it names another scenario, has
            no ``simulation_started``, or the scenario is not installed.
    """
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
    everything = read_events(url).events
    started = next((e for e in everything if e.event_type == "simulation_started"), None)
    if started is None:
        raise EvaluationError(f"{url} has no simulation_started event: not a run log")
    recorded = started.scenario_name  # type: ignore[attr-defined]
    if recorded != scenario:
        raise EvaluationError(f"{run_dir} holds a {recorded!r} run, not {scenario!r}")
    instance, knobs_exact = _scenario_instance(cls, started.scenario_config)  # type: ignore[attr-defined]
    specs = instance.channels()
    primary = tuple(
        c.channel_id
        for c in specs
        if getattr(c, "primary", c.phase == "main") and c.phase == "main"
    )
    metered = tuple(c.channel_id for c in specs if c.metered)
    events = _counting(everything)
    ended = [e for e in everything if e.event_type == "simulation_ended"]
    seats: dict[str, Seat] = {}
    for e in events:
        if isinstance(e, AgentRegistered):
            seats[e.agent_id] = Seat(e.agent_id, e.team_id, e.model, e.provider)
        elif e.event_type == "agent_swapped_mid_run":
            old = seats[e.agent_id]  # type: ignore[attr-defined]
            seats[old.agent_id] = Seat(old.agent_id, old.team_id, e.model, e.provider)  # type: ignore[attr-defined]
    messages = [
        e
        for e in events
        if isinstance(e, MessageSent) and e.phase == "main" and e.channel_id in primary
    ]
    rounds = sorted(
        {
            e.round_number
            for e in events
            if (e.event_type == "round_started" and e.phase == "main")
            or e.event_type == "round_result_recorded"
        }
    )
    budget = next(
        (m.budget_chars for m in events if isinstance(m, MessageSent) and m.budget_chars),
        None,
    )
    if budget is None and knobs_exact:
        budget = instance.budget_chars()
    hooks = {"channels"}
    if any(e.event_type == "round_result_recorded" for e in events):
        hooks.add("verdicts")
    if budget and metered:
        hooks.add("budget")
    if any(e.event_type == "agent_history_appended" for e in everything):
        hooks.add("agent_history")
    return LoadedRun(
        run_dir=run_dir,
        scenario=scenario,
        run_id=started.run_id,  # type: ignore[attr-defined]
        log_sha256=hashlib.sha256(data).hexdigest(),
        events=events,
        status=ended[-1].status if ended else None,  # type: ignore[attr-defined]
        primary_channels=primary,
        metered_channels=metered,
        budget_chars=budget,
        seats=seats,
        rounds_played=rounds,
        messages=messages,
        hooks=hooks,
        _all_events=everything,
    )
