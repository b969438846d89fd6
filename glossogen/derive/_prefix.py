"""Writing a derived run's folder: its claim, config, labels, lineage and log prefix.

:func:`write_derived` claims the folder as a plain run's claim does and writes its files, the
log through :func:`write_prefix` (the derived run's own ``simulation_started``, the source's
events up to the boundary, every seat registered again with its history); what a failing
storage left is removed again. :func:`lineage_of` reads a folder's lineage back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from glossogen.derive._state import DeriveError, RunState
from glossogen.engine import Seat
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    Event,
    EventLogWriter,
    RunResumed,
    SimulationEnded,
    SimulationStarted,
)
from glossogen.storage import (
    CONFIG,
    LABELS,
    LINEAGE,
    RunFolder,
    RunStore,
    StorageError,
    join,
    nearest_existing,
    translate_errors,
)

if TYPE_CHECKING:
    from glossogen.derive._fork import ForkRequest

SKIPPED: tuple[type[Event], ...] = (SimulationStarted, SimulationEnded, RunResumed)
"""Events of the source not copied into a derived run's log (it writes its own start)."""


def write_derived(
    store: RunStore,
    now_unix: int,
    scenario: str,
    recorded: dict[str, Any],
    lineage: dict[str, Any],
    write_log: Callable[[RunFolder], None],
) -> RunFolder:
    """Claim the derived run's folder and write its config, labels, lineage and log prefix.

    ``write_log`` writes the log prefix into the claimed folder (:func:`write_prefix`).

    Returns:
        The claimed folder.

    Raises:
        DeriveError: a runs dir in which no folder can be created (66), storage that fails
            part-way (69): what the claim made and wrote is removed again.
    """
    existed = nearest_existing(store.runs_dir) if store.local else ""
    folder = _claim(store, scenario, now_unix, existed)
    try:
        folder.write_json(CONFIG, recorded)
        folder.write_json(LABELS, recorded.get("labels", {}))
        folder.write_json(LINEAGE, lineage)
        with translate_errors(folder.log_url):
            write_log(folder)
    except StorageError as exc:
        names = (CONFIG, LABELS, LINEAGE, *_log_names(folder))
        store.release_claim(folder, names, keep=existed)
        raise DeriveError(
            f"storage failed while claiming {folder.url} (removed again): {exc}", 69
        ) from None
    return folder


def _claim(store: RunStore, scenario: str, now_unix: int, existed: str) -> RunFolder:
    """Claim a fresh folder, as a plain run's claim does (``launch.claim_folder``).

    ``existed`` is the nearest local folder that existed before the claim (never removed).

    Raises:
        DeriveError: 66 when a local runs dir cannot be created or written, 69 when the
            storage fails (remote storage); the folders the attempt made are removed.
    """
    try:
        folder = store.claim_run_dir(scenario, now_unix)
    except StorageError as exc:
        store.remove_empty_folders(join(store.runs_dir, scenario), existed)
        raise DeriveError(f"cannot claim a run folder: {exc}", 66 if store.local else 69) from None
    return folder


def _log_names(folder: RunFolder) -> tuple[str, str]:
    """The log's file name and its set-aside torn tail's, as the writer names them."""
    name = folder.log_url.rsplit("/", 1)[-1]
    return name, f"{name}.torn"


def write_prefix(
    folder: RunFolder,
    request: ForkRequest,
    started: SimulationStarted,
    config: dict[str, Any],
    lineage: dict[str, Any],
    state: RunState,
    history: list[Any] | None,
    limits: dict[str, Any],
    seats: list[Seat],
) -> None:
    """Write the derived run's log: its own start, the source's events, every seat anew.

    Each seat is registered again (``agent_registered`` at the boundary) with the model,
    provider and settings the derived run sends, then given its history (the replaced seat's
    as ``--channel-visibility`` or the donor allows, every other seat's as it stood).
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    registered = {e.agent_id: e for e in state.events if isinstance(e, AgentRegistered)}
    with EventLogWriter(folder.log_url) as writer:
        writer.append(
            SimulationStarted(
                run_id=folder.run_id,
                scenario_name=request.scenario,
                scenario_description=started.scenario_description,
                scenario_config=config,
                model=request.model or limits["model"],
                provider=request.provider or limits["provider"],
                channel_ids=list(started.channel_ids),
                versions=dict(started.versions),
                lineage=lineage,
                max_agent_turns=limits["max_agent_turns"],
                run_timeout_seconds=limits["run_timeout_seconds"],
                spend_cap_usd=limits["spend_cap_usd"],
                group_slug=limits["group_slug"],
            )
        )
        for event in state.events:
            if not isinstance(event, SKIPPED):
                writer.append_line(event.model_dump_json())
        for seat in seats:
            old = registered.get(seat.agent_id)
            if old is None:
                continue
            writer.append(
                AgentRegistered(
                    round_number=request.after_round,
                    agent_id=old.agent_id,
                    role=old.role,
                    display_name=old.display_name,
                    team_id=old.team_id,
                    model=seat.model,
                    provider=seat.provider,
                    model_settings=dict(seat.model_settings),
                    tools=list(old.tools),
                    channels=list(old.channels),
                )
            )
            kept = (
                history
                if seat.agent_id == request.replaced_agent_id
                else state.histories.get(seat.agent_id)
            )
            if kept:
                writer.append(
                    AgentHistoryAppended(
                        round_number=request.after_round,
                        phase="setup",
                        agent_id=seat.agent_id,
                        messages=ModelMessagesTypeAdapter.dump_python(kept, mode="json"),
                        from_index=0,
                    )
                )


def lineage_of(run_dir: str) -> dict[str, Any] | None:
    """Return a run folder's ``lineage.json``, or None for an original run."""
    lineage: dict[str, Any] | None = RunFolder.at(run_dir).read_json_or(LINEAGE, None)
    return lineage
