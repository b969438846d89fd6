"""Where a crashed run picks up: checks that refuse a bad resume, and the resume point.

Resume continues a run in its own folder, appending to its own log. The round that was cut off
reopens from its start (or, when its verdict was already recorded, only its postmortem is
played), so every round keeps exactly one verdict per team. What the run goes on under (its
recorded config, and any change a resume asks for) is :func:`glossogen.launch.plan_resume`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from glossogen.derive._state import (
    DeriveError,
    HistoryUnreadable,
    RunState,
    read_history,
    read_state,
)
from glossogen.eventlog import (
    AgentHistoryAppended,
    Event,
    RunResumed,
    RunView,
    SimulationStarted,
    read_events,
)
from glossogen.refusals import Refusal
from glossogen.storage import RunBusyError, RunFolder, RunStore, join, path_kind


@dataclass
class ResumePoint:
    """A run ready to continue: where it lives, its state, and how its config changed.

    Attributes:
        folder: The run's folder.
        state: The run at its last completed round.
        started: The log's ``simulation_started``.
        events: The whole log, as read.
        config_changes: ``{key: {"recorded": old, "now": new}}`` for every knob that differs
            from the record (logged in ``run_resumed``).
        limit_changes: The same for ``max_agent_turns``, ``run_timeout_seconds``, ``model``
            and ``provider``.
    """

    folder: RunFolder
    state: RunState
    started: SimulationStarted
    events: list[Event] = field(default_factory=list)
    config_changes: dict[str, Any] = field(default_factory=dict)
    limit_changes: dict[str, Any] = field(default_factory=dict)

    @property
    def next_round(self) -> int:
        """The first round to play from its start."""
        return self.state.after_round + 1 + (1 if self.state.pending_verdicts else 0)


def config_changes(recorded: dict[str, Any], resolved: dict[str, Any]) -> dict[str, Any]:
    """Return ``{key: {"recorded": old, "now": new}}`` for every top-level key that differs."""
    keys = sorted(set(recorded) | set(resolved))
    return {
        k: {"recorded": recorded.get(k), "now": resolved.get(k)}
        for k in keys
        if recorded.get(k) != resolved.get(k)
    }


def run_folder(run_dir: str, scenario: str | None = None) -> RunFolder:
    """Return the run folder at ``run_dir``.

    Raises:
        DeriveError: ``run_dir`` does not exist, is a file, or is not
            ``<runs_dir>/<scenario>/<unix_ts>`` (66).
        StorageError: if the storage is unreachable.
    """
    local = RunStore(run_dir).local
    kind = path_kind(run_dir)
    if kind == "missing":
        raise DeriveError(f"{run_dir!r} does not exist", 66)
    if local and kind == "file":
        raise DeriveError(f"{run_dir!r} is a file, not a run folder", 66)
    try:
        return RunFolder.at(run_dir)
    except ValueError:
        name = f"{scenario}.jsonl" if scenario else (_log_named(run_dir) or "<scenario>.jsonl")
        if local and path_kind(join(run_dir, name)) != "missing":
            raise DeriveError(
                f"{run_dir!r} holds {name} but is not a run folder: its name must be the run's "
                "unix timestamp (<runs-dir>/<scenario>/<unix_ts>)",
                66,
            ) from None
        raise DeriveError(
            f"no event log {join(run_dir, name)}: is {run_dir!r} a run folder"
            + (f" of {scenario}" if scenario else "")
            + " (<runs-dir>/<scenario>/<unix_ts>)?",
            66,
        ) from None


def _log_named(run_dir: str) -> str | None:
    """The name of the event log a folder holds (``<scenario>.jsonl``), whatever its content."""
    import os

    if path_kind(run_dir) != "folder":
        return None
    try:
        names = sorted(os.listdir(run_dir))
    except OSError:
        return None
    logs = [n for n in names if n.endswith(".jsonl") and not n.startswith(("_", "."))]
    return logs[0] if logs else None


def read_run_log(
    folder: RunFolder, scenario: str | None = None
) -> tuple[list[Event], SimulationStarted]:
    """Return a run's events and its ``simulation_started`` (:func:`read_run_view`'s)."""
    view = read_run_view(folder, scenario)
    assert view.started is not None  # read_run_view refuses a log that starts no run
    return view.events, view.started


def read_run_view(
    folder: RunFolder, scenario: str | None = None, whole_for: str | None = None
) -> RunView:
    """Return the one reading of a run's log, checked as a derivation or replay needs it.

    With ``whole_for`` (what is refused, e.g. ``"replayed"``), a log in which an event may
    be lost (a damaged line, or the torn last line of an ended run: what ``glossogen verify``
    names under its ``log`` rule, :attr:`~glossogen.eventlog.RunView.lost_lines`; or the torn
    last line of a log no process writes, which may be its ending) is refused
    in one line naming the log and the line(s): ``<log> line 41: 1 damaged line(s): an event
    may be lost; a run whose log lost an event is not replayed``; so is a log that holds an
    event twice (a line written again, :attr:`~glossogen.eventlog.RunView.repeated_note`):
    ``<log> line 21: event <id> (model_request_sent) is in the log twice (lines 20, 21); a run
    whose log holds an event twice is not replayed``.

    Every agent history in the log is checked readable here (upcast as
    :func:`~glossogen.derive.upcast_history` says), so resume and fork refuse an unreadable one
    before anything is written, naming its line.

    Raises:
        DeriveError: no log in the folder, an empty one, a folder in its place, or a log that
            starts no run (66); a log of another scenario than ``scenario`` (65); with
            ``whole_for``, a log in which an event may be lost, or one event twice (65).
        HistoryUnreadable: (65) an ``agent_history_appended`` no upcast makes readable; one
            line naming the log, the line number, the event and the first problem.
    """
    scenario = scenario or folder.scenario
    state = folder.log_state()
    if state == "missing":
        other = _log_named(folder.url) if RunStore(folder.url).local else None
        if other is not None:  # a log is there, of another name: say what is there
            raise DeriveError(
                f"{folder.url!r} holds {other}, not {scenario}.jsonl: a run folder lies at "
                "<runs-dir>/<scenario>/<unix_ts>",
                66,
            )
        raise DeriveError(
            f"no event log {folder.log_url}: is {folder.url!r} a run folder of {scenario}?", 66
        )
    if state == "folder":
        raise DeriveError(f"{folder.log_url} is a folder, not an event log", 66)
    if state == "empty":
        raise DeriveError(folder.not_a_run_log("empty"), 66)  # every reader's words
    view = RunView.of(read_events(folder.log_url))
    events, started = view.events, view.started
    if started is None:
        raise DeriveError(folder.not_a_run_log("no simulation_started event"), 66)
    if started.scenario_name != scenario:
        raise DeriveError(f"{folder.url} is a {started.scenario_name} run, not {scenario}")
    for event in events:
        if isinstance(event, AgentHistoryAppended):
            try:
                read_history(event)
            except HistoryUnreadable as exc:
                line = folder.log_line_of(event.event_id)
                where = f"{folder.log_url} line {line}: " if line else f"{folder.log_url}: "
                raise HistoryUnreadable(exc.event_id, exc.agent_id, exc.reason, where) from None
    lost_lines = view.lost_lines
    if whole_for is not None and view.ended is None and view.torn_tail is not None:
        # its ending may be the line cut off: an event lost, unless a live writer finishes it
        lost_lines = [*lost_lines, view.torn_tail] if not folder.is_locked() else lost_lines
    if whole_for is not None and lost_lines:
        lost = "; ".join(f"{where}: {what}" for where, what in lost_lines)
        raise DeriveError(
            f"{folder.log_url} {lost}; a run whose log lost an event is not {whole_for}"
        )
    if whole_for is not None and (twice := view.repeated_note) is not None:
        where, what = twice
        raise DeriveError(
            f"{folder.log_url} {where}: {what}; a run whose log holds an event twice is not "
            f"{whole_for}"
        )
    return view


def open_resume(folder: RunFolder, scenario: str | None = None) -> ResumePoint:
    """Check that ``folder`` can be resumed and return where it picks up.

    Raises:
        DeriveError: no log in the folder (66); the run already ended (65: its refusal's
            ``field`` is ``fork``, the operation that plays on from it, each surface naming
            its own: ``fork-at-round``, MCP's ``fork_run``);
            another scenario (65); another live process writing it (75).
    """
    events, started = read_run_log(folder, scenario)
    state = read_state(events)
    if state.ended:
        raise DeriveError(
            refusal=Refusal(
                field="fork",
                reason=f"run {started.run_id} already ended (simulation_ended); use {{name}} "
                "to play further rounds from it",
                inline=True,
                called="fork-at-round",
            )
        )
    try:
        folder.check_unlocked()  # refuses while another process writes the log
    except RunBusyError as exc:
        raise DeriveError(str(exc), exc.exit_code) from None
    return ResumePoint(folder, state, started, events)


LIMIT_KEYS = (
    "max_agent_turns",
    "run_timeout_seconds",
    "spend_cap_usd",
    "model",
    "provider",
    "group_slug",
)
"""What ``run_resumed.limit_changes`` may name: the run limits and the default model."""


def recorded_limits(events: list[Event], after_round: int | None = None) -> dict[str, Any]:
    """Return the run limits and default model the log says are in force.

    ``simulation_started`` records them as launched; each ``run_resumed`` whose
    ``after_round`` is at most ``after_round`` (every one when None) applies its
    ``limit_changes`` in order.

    Returns:
        ``{"max_agent_turns": int, "run_timeout_seconds": float | None, "spend_cap_usd":
        float | None, "model": str, "provider": str, "group_slug": str}``.

    Raises:
        DeriveError: the log has no ``simulation_started`` (66).
    """
    started = next((e for e in events if isinstance(e, SimulationStarted)), None)
    if started is None:
        raise DeriveError("the log has no simulation_started event", 66)
    limits: dict[str, Any] = {
        "max_agent_turns": started.max_agent_turns,
        "run_timeout_seconds": started.run_timeout_seconds,
        "spend_cap_usd": started.spend_cap_usd,
        "model": started.model,
        "provider": started.provider,
        "group_slug": started.group_slug or "local",
    }
    for event in events:
        if isinstance(event, RunResumed) and event.limit_changes:
            if after_round is not None and event.after_round > after_round:
                continue
            limits |= {
                key: change.get("now")
                for key, change in event.limit_changes.items()
                if key in LIMIT_KEYS
            }
    return limits
