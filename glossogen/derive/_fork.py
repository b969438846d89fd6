"""Derived runs: fork at a round boundary, optionally with another model in one seat.

A derived run gets a fresh folder holding ``lineage.json``, its own ``config.json`` and a log
that starts with its own ``simulation_started`` (lineage included) followed by the source's
events up to the boundary; it then continues as a resumed run would. The source is only read.
The lineage names the source (and donor) folder as resolved, an absolute local path or the
fsspec URL as given, so it stays true when read from another working directory.

With ``replay`` (``fork-at-round --replay``) the events up to the boundary are not copied: they
are the log of the source's rounds 1..N played again from its tape (``replay_check``, which
refuses a replay that differs from the record), with the replay's own event ids, request ids
and virtual-clock timestamps; the lineage says so (``"prefix": "replayed"``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from glossogen.catalog import UnknownProviderError
from glossogen.catalog import provider as parse_provider
from glossogen.derive._resume import read_run_view, recorded_limits, run_folder
from glossogen.derive._state import DeriveError, RunState, read_state
from glossogen.derive._visibility import visible_history
from glossogen.engine import RosterError, Seat, resolve_seats
from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    Event,
    EventLogWriter,
    RunResumed,
    SimulationEnded,
    SimulationStarted,
)
from glossogen.knobs import (
    BaseKnobs,
    ConfigError,
    knobs_to_config,
    lift_legacy_knobs,
    load_config,
    resolve_knobs,
)
from glossogen.refusals import LOGGED_INT_MAX, MAX_AGENT_TURNS_LIMIT, Refusal
from glossogen.scenario import Scenario, load_scenario, scenario_dir
from glossogen.storage import (
    CONFIG,
    LABELS,
    LINEAGE,
    RunFolder,
    RunStore,
    StorageError,
    absolute,
    join,
    nearest_existing,
    translate_errors,
)

Derivation = Literal["fork_at_round", "replace_agent", "cross_run_replace_agent"]
SKIPPED: tuple[type[Event], ...] = (SimulationStarted, SimulationEnded, RunResumed)
"""Events of the source not copied into a derived run's log (it writes its own start)."""


@dataclass
class ForkRequest:
    """What a derived run is made from (the CLI's flags)."""

    scenario: str
    source_run_dir: str
    after_round: int
    runs_dir: str
    rounds_after: int | None = None
    knobs_path: str | None = None
    replaced_agent_id: str | None = None
    model: str | None = None
    provider: str | None = None
    channel_visibility: str = "full"
    donor_run_dir: str | None = None
    donor_agent_id: str | None = None
    max_agent_turns: int | None = None
    """The derived run's ``max_agent_turns`` (None: the source's, as in force at the boundary)."""
    run_timeout_seconds: float | None = None
    """The derived run's wall-clock limit, seconds (None: the source's)."""
    spend_cap_usd: float | None = None
    """USD the derived run's own calls may spend (None: the source's cap, if any)."""
    replay: bool = False
    """Play rounds 1..``after_round`` again from the source's tape, and derive only when they
    reproduce: the derived log's rounds 1..N are the replay's, not copies
    (``fork-at-round --replay``)."""

    @property
    def derivation(self) -> Derivation:
        """Which kind of derived run this is."""
        if self.donor_run_dir:
            return "cross_run_replace_agent"
        return "replace_agent" if self.replaced_agent_id else "fork_at_round"


@dataclass(frozen=True)
class ReplayedRounds:
    """The source's rounds 1..N played again from its tape: what ``replay_check`` returns."""

    check: Any
    """The comparison with the record (:class:`~glossogen.replay.ForkPointCheck`)."""
    events: list[Event]
    """The replay's whole log, as written (its own start, rounds 1..N, its end)."""


ReplayCheck = Callable[[str, int], ReplayedRounds]
"""Plays ``(source_run_dir, after_round)`` again from the tape and compares
(``glossogen.replay.replayed_rounds``); it raises to refuse rounds that do not reproduce."""


@dataclass
class PreparedFork:
    """A derived run folder ready to be resumed: where it is and what it records."""

    folder: RunFolder
    model: str
    provider: str
    lineage: dict[str, Any]
    replayed: Any = None
    """With ``replay``: the :class:`~glossogen.replay.ForkPointCheck` of rounds 1..N."""


def _load_log(run_dir: str, scenario: str, whole_for: str) -> tuple[list[Event], SimulationStarted]:
    """The run's events and ``simulation_started``; a log that lost an event is refused."""
    view = read_run_view(run_folder(run_dir, scenario), scenario, whole_for)
    assert view.started is not None  # read_run_view refuses a log that starts no run
    return view.events, view.started


def config_at_round(
    config: dict[str, Any], events: list[Event], after_round: int, in_force: bool
) -> dict[str, Any]:
    """Return the config a run played round ``after_round + 1`` under.

    A resume with ``--allow-config-change`` logs the difference in ``run_resumed`` (knob ->
    ``{"recorded": old, "now": new}``) and plays every round after its ``after_round`` under the
    new config. ``config.json`` holds the config in force at the end (``in_force``): the changes
    of resumes after ``after_round`` are undone. ``simulation_started.scenario_config`` holds
    the first one: the changes of resumes up to ``after_round`` are applied.

    Args:
        config: ``config.json`` (``in_force``) or ``simulation_started.scenario_config``.
        events: The run's whole log.
        after_round: The last round kept (a fork plays the next one onward).
        in_force: Whether ``config`` is the config in force at the end of the log.

    Returns:
        A new dict; ``config`` is not changed.
    """
    config = dict(config)
    resumes = [e for e in events if isinstance(e, RunResumed) and e.config_changes]
    for resumed in reversed(resumes) if in_force else resumes:
        later = resumed.after_round > after_round
        if in_force != later:
            continue
        side = "recorded" if in_force else "now"
        config |= {knob: change.get(side) for knob, change in resumed.config_changes.items()}
    return config


def knobs_at(
    folder: RunFolder,
    started: SimulationStarted,
    events: list[Event],
    after_round: int | None = None,
) -> dict[str, Any]:
    """Return the knobs the run in ``folder`` played round ``after_round + 1`` under.

    ``config.json`` (the config in force at the end) when the folder has one, else
    ``simulation_started.scenario_config`` (the first), each corrected by the resumes that
    changed the config (:func:`config_at_round`). None for ``after_round``: the knobs in force
    now.

    Raises:
        DeriveError: ``config.json`` is a folder, not JSON or not an object (66).
    """
    try:
        in_force = folder.read_object(CONFIG)
    except ValueError as exc:
        raise DeriveError(str(exc), 66) from None
    first = in_force if in_force is not None else dict(started.scenario_config)
    last = 10**9 if after_round is None else after_round  # every round played so far
    return config_at_round(first, events, last, in_force=in_force is not None)


SeatCheck = Callable[[BaseKnobs, str, str], None]
"""A launch check of a derived run before its folder exists: ``(knobs, model, provider)``.

It raises to refuse the run (``glossogen.launch``'s credentials and model-settings checks)."""


def prepare_fork(
    request: ForkRequest,
    now_unix: int | None = None,
    check: SeatCheck | None = None,
    replay_check: ReplayCheck | None = None,
) -> PreparedFork:
    """Create the derived run's folder, config, lineage and log prefix; the source is only read.

    ``check``, when given, sees the derived run's knobs and default model and provider after
    they are resolved and before anything is written; what it raises passes through.
    ``replay_check`` (``glossogen.replay.replayed_rounds``) replays the source's rounds
    1..N when the request asks for ``replay``, after ``check`` and before anything is written
    (what it raises passes through, a divergence exit 1); the derived log's rounds 1..N are
    then the replay's events, and every seat's history at the boundary the replay's. It is
    passed in because replaying plays a run through ``glossogen.launch``, which reads this
    package: derive does not import the replay (no import circle).

    Raises:
        DeriveError: no log in the source or donor folder (66); ``after_round`` outside the
            source's completed rounds; a replaced or donor agent the run does not have; a
            visibility rule naming a round after the swap; an invalid ``--knobs`` (65);
            a limit out of bounds (64, before the source is read);
            a runs dir in which no folder can be created (66); storage that fails part-way
            (69): the claim is all or nothing, what it made and wrote is removed again.
            A refused request value is carried as ``exc.refusal``.
    """
    _check_bounds(request)
    cls = load_scenario(request.scenario)  # registers its events before its log is read
    copied = "replayed" if request.replay else "copied"  # its rounds 1..N, into the fork
    events, started = _load_log(request.source_run_dir, request.scenario, copied)
    state = read_state(events, after_round=request.after_round)
    store = RunStore(request.runs_dir)
    extra, config = _derived_config(request, cls, started, events)
    seats = {a: (m, p) for a, (m, p, _) in state.seats.items()}
    overrides = _seat_entries(seats, extra, config)
    lineage: dict[str, Any] = {
        "derivation": request.derivation,
        "source_run_id": started.run_id,
        "source_run_dir": absolute(request.source_run_dir),
        "after_round": request.after_round,
    }
    history: list[Any] | None = None
    if request.replaced_agent_id:
        history = _replace_seat(request, cls, state, extra, config, overrides, lineage)
    config["model_overrides"] = overrides
    if request.rounds_after is not None:
        config["round_count"] = request.after_round + request.rounds_after
    try:  # validated first: a knob of the wrong type is refused by the knobs model
        knobs = resolve_knobs(cls.knobs_model, config, {})
    except ConfigError as exc:
        raise DeriveError(str(exc), exc.exit_code) from None
    if knobs.round_count <= request.after_round:
        raise DeriveError(
            refusal=Refusal(
                field="rounds_after",
                reason=f"round_count {knobs.round_count} leaves nothing to play after round "
                f"{request.after_round}",
                asks=True,
            )
        )
    limits = _derived_limits(request, events, lineage)
    model = request.model or limits["model"]
    provider = request.provider or limits["provider"]
    try:
        seated = resolve_seats(cls(knobs), knobs, model, provider)
    except (RosterError, UnknownProviderError) as exc:
        raise DeriveError(refusal=Refusal(field="knobs", reason=str(exc), colon=True)) from None
    if check is not None:
        check(knobs, model, provider)
    replayed = None
    if request.replay:
        if replay_check is None:
            raise ValueError("a fork with replay needs replay_check (glossogen.replay)")
        rounds = replay_check(request.source_run_dir, request.after_round)
        replayed = rounds.check
        state, history = _replayed_state(request, cls, rounds, config, history, lineage)
    recorded = knobs_to_config(knobs)
    write_log = partial(
        _write_prefix, request=request, started=started, config=recorded, lineage=lineage,
        state=state, history=history, limits=limits, seats=seated,
    )  # fmt: skip
    folder = _write_derived(
        store, int(now_unix or time.time()), request.scenario, recorded, lineage, write_log
    )
    return PreparedFork(folder, model, provider, lineage, replayed)


def _replayed_state(
    request: ForkRequest,
    cls: type[Scenario],
    rounds: ReplayedRounds,
    config: dict[str, Any],
    history: list[Any] | None,
    lineage: dict[str, Any],
) -> tuple[RunState, list[Any] | None]:
    """The state at the boundary as the replay left it, and the replaced seat's history.

    The derived log is written from this state: the replay's events of rounds 1..N (its own
    ids, request ids and timestamps) and each seat's history as the replay built it. A donor's
    history is the donor's, not replayed. ``lineage`` gains ``"prefix": "replayed"``.
    """
    state = read_state(rounds.events, after_round=request.after_round)
    lineage["prefix"] = "replayed"
    if request.replaced_agent_id and not request.donor_run_dir:
        history = _visible(request, cls, state, config)
    return state, history


def _check_bounds(request: ForkRequest) -> None:
    """Refuse the bounds known without reading the source: usage errors (64).

    Raises:
        DeriveError: (64) ``after_round``, ``rounds_after`` or ``max_agent_turns`` below 1
            (or past :data:`~glossogen.refusals.LOGGED_INT_MAX`, ``max_agent_turns`` past
            :data:`~glossogen.refusals.MAX_AGENT_TURNS_LIMIT`),
            a ``run_timeout_seconds`` not above 0 or infinite, a ``spend_cap_usd`` not a
            finite number above 0, an unknown replacement ``provider``; ``exc.refusal`` says
            which.
    """
    at_least_one = (
        ("after_round", request.after_round, LOGGED_INT_MAX),
        ("rounds_after", request.rounds_after, LOGGED_INT_MAX),
        ("max_agent_turns", request.max_agent_turns, MAX_AGENT_TURNS_LIMIT),
    )
    for field, value, most in at_least_one:
        if value is not None and not 1 <= value <= most:
            bound = "at least 1" if value < 1 else f"at most {most}"
            raise DeriveError(
                refusal=Refusal(field=field, reason=f"must be {bound}, got {value}"),
                exit_code=64,
            )
    timeout = request.run_timeout_seconds
    if timeout is not None and not (timeout > 0 and timeout != float("inf")):
        raise DeriveError(
            refusal=Refusal(
                field="run_timeout_seconds",
                reason=f"must be a number of seconds above 0, got {timeout:g}",
            ),
            exit_code=64,
        )
    cap = request.spend_cap_usd
    if cap is not None and not (math.isfinite(cap) and cap > 0):
        raise DeriveError(
            refusal=Refusal(
                field="spend_cap_usd", reason=f"must be a number of USD above 0, got {cap:g}"
            ),
            exit_code=64,
        )
    if request.provider is not None:
        try:  # the replacement's provider, named as given (as ``run`` names its default's)
            parse_provider(request.provider)
        except UnknownProviderError as exc:
            raise DeriveError(
                refusal=Refusal(field="provider", reason=str(exc), colon=True), exit_code=64
            ) from None


def _derived_config(
    request: ForkRequest, cls: type[Scenario], started: SimulationStarted, events: list[Event]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read the source's knobs at the boundary and lay the request's ``--knobs`` over them.

    Returns:
        The ``--knobs`` given (legacy spellings lifted) and the derived run's config.

    Raises:
        DeriveError: the ``knobs`` file or preset cannot be read as a config (its
            ``refusal`` names ``knobs``; 66 unreadable, 65 not a config).
    """
    config = knobs_at(RunFolder.at(request.source_run_dir), started, events, request.after_round)
    extra: dict[str, Any] = {}
    if request.knobs_path:
        try:
            extra, _ = load_config(request.knobs_path, scenario_dir(cls))
        except ConfigError as exc:  # named as the request's knobs: each surface words it
            refused = Refusal(field="knobs", reason=str(exc), colon=True)
            raise DeriveError(refusal=refused, exit_code=exc.exit_code) from None
    # A legacy agent_max_tokens on either side is the agent_model_settings object's old
    # spelling: lifted first, so a --knobs object replaces the source's whole.
    extra = lift_legacy_knobs(extra)
    return extra, {**lift_legacy_knobs(config), **extra, "labels": extra.get("labels", {})}


def _replace_seat(
    request: ForkRequest,
    cls: type[Scenario],
    state: RunState,
    extra: dict[str, Any],
    config: dict[str, Any],
    overrides: dict[str, dict[str, Any]],
    lineage: dict[str, Any],
) -> list[Any]:
    """Seat the request's model in the replaced agent's seat, in ``overrides`` and ``lineage``.

    Returns:
        The history the new model starts from: the donor agent's, or the replaced agent's
        own as its channel visibility shows it.

    Raises:
        DeriveError: the agent is not in the run, no model or provider is given, or the
            ``--knobs`` entry for the seat names another model.
    """
    replaced = request.replaced_agent_id or ""
    seats = {a: (m, p) for a, (m, p, _) in state.seats.items()}
    if replaced not in seats:
        raise DeriveError(
            refusal=Refusal(
                field="replaced_agent_id",
                value=repr(replaced),
                reason=f"the run's agents are {', '.join(seats)}",
            )
        )
    if not request.model or not request.provider:
        raise DeriveError(
            refusal=Refusal(
                field="model", also=("provider",), reason="replacing an agent needs", trails=True
            )
        )
    entry = dict((extra.get("model_overrides") or {}).get(replaced) or {})
    if entry and (entry.get("model"), entry.get("provider")) != (
        request.model,
        request.provider,
    ):
        raise DeriveError(
            refusal=Refusal(
                field="knobs",
                reason=f"model_overrides.{replaced} names "
                f"{entry.get('provider')}:{entry.get('model')}, not the replacement's "
                f"{request.provider}:{request.model}",
            )
        )
    # The source's settings for this seat stay behind (they were for the model it
    # replaces): the --knobs entry's own, else the run's agent_model_settings.
    overrides[replaced] = {"model": request.model, "provider": request.provider}
    if entry.get("model_settings") is not None:
        overrides[replaced]["model_settings"] = entry["model_settings"]
    lineage |= {
        "replaced_agent_id": replaced,
        "model": request.model,
        "provider": request.provider,
    }
    if request.donor_run_dir:
        return _donor_history(request, lineage)
    lineage["channel_visibility"] = request.channel_visibility
    return _visible(request, cls, state, config)


def _visible(
    request: ForkRequest, cls: type[Scenario], state: RunState, config: dict[str, Any]
) -> list[Any]:
    """The replaced seat's history in ``state`` as ``--channel-visibility`` shows it.

    Raises:
        DeriveError: the config does not validate (its exit code).
    """
    try:
        channels = cls(resolve_knobs(cls.knobs_model, config, {})).channels()
    except ConfigError as exc:
        raise DeriveError(str(exc), exc.exit_code) from None
    phases = {c.channel_id: c.phase for c in channels}
    return visible_history(
        state, request.replaced_agent_id or "", request.channel_visibility,
        request.after_round, phases,
    )  # fmt: skip


def _donor_history(request: ForkRequest, lineage: dict[str, Any]) -> list[Any]:
    """Return the donor agent's history, naming the donor in ``lineage``.

    Raises:
        DeriveError: no log in the donor folder (66), or no such agent in the donor run.
    """
    donor_events, _ = _load_log(request.donor_run_dir or "", request.scenario, "copied")
    donor = read_state(donor_events)
    if request.donor_agent_id not in donor.histories:
        raise DeriveError(
            refusal=Refusal(
                field="donor_agent_id",
                value=repr(request.donor_agent_id),
                reason=f"the donor's agents are {', '.join(donor.histories)}",
            )
        )
    lineage |= {
        "donor_run_dir": absolute(request.donor_run_dir or ""),
        "donor_agent_id": request.donor_agent_id,
    }
    return donor.histories[request.donor_agent_id or ""]


def _derived_limits(
    request: ForkRequest, events: list[Event], lineage: dict[str, Any]
) -> dict[str, Any]:
    """Return the limits in force at the boundary with the request's own laid over them.

    A limit the request changes is recorded in ``lineage["limit_changes"]``.
    """
    limits = recorded_limits(events, request.after_round)
    changed = {
        key: value
        for key, value in (
            ("max_agent_turns", request.max_agent_turns),
            ("run_timeout_seconds", request.run_timeout_seconds),
            ("spend_cap_usd", request.spend_cap_usd),
        )
        if value is not None and value != limits[key]
    }
    if changed:
        lineage["limit_changes"] = {
            key: {"recorded": limits[key], "now": value} for key, value in changed.items()
        }
    return limits | changed


def _write_derived(
    store: RunStore,
    now_unix: int,
    scenario: str,
    recorded: dict[str, Any],
    lineage: dict[str, Any],
    write_log: Callable[[RunFolder], None],
) -> RunFolder:
    """Claim the derived run's folder and write its config, labels, lineage and log prefix.

    ``write_log`` writes the log prefix into the claimed folder (:func:`_write_prefix`).

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


def _seat_entries(
    seats: Mapping[str, tuple[str, str]], extra: Mapping[str, Any], config: Mapping[str, Any]
) -> Any:
    """Return the derived run's ``model_overrides``: one entry per seat of the source.

    A ``model_overrides`` in ``--knobs`` replaces the recorded map whole: the entries it names
    stand as given; each seat it leaves out keeps its source model and provider (read from its
    registration) and sends the run's ``agent_model_settings``. Without one, every seat keeps
    its registered model and provider and the ``model_settings`` its recorded entry names.
    """
    given = "model_overrides" in extra
    entries = (extra.get("model_overrides") if given else config.get("model_overrides")) or {}
    if not isinstance(entries, Mapping):
        return entries  # not a map: refused by the knobs model, naming the knob
    overrides: dict[str, Any] = {}
    for agent_id, (model, provider) in seats.items():
        entry = entries.get(agent_id) or {}
        if (given and entry) or not isinstance(entry, Mapping):
            overrides[agent_id] = entry  # as given (a malformed entry is refused by the knobs)
            continue
        overrides[agent_id] = {"model": model, "provider": provider}
        if not given and entry.get("model_settings") is not None:
            overrides[agent_id]["model_settings"] = entry["model_settings"]
    for agent_id, entry in entries.items():
        overrides.setdefault(agent_id, entry)  # an unknown agent is refused with the roster
    return overrides


def _write_prefix(
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
