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

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from glossogen.catalog import UnknownProviderError
from glossogen.catalog import provider as parse_provider
from glossogen.derive._config import derived_config, derived_limits, seat_entries
from glossogen.derive._prefix import write_derived, write_prefix
from glossogen.derive._resume import read_run_view, run_folder
from glossogen.derive._state import DeriveError, RunState, read_state
from glossogen.derive._visibility import visible_history
from glossogen.engine import RosterError, resolve_seats
from glossogen.eventlog import (
    Event,
    SimulationStarted,
)
from glossogen.knobs import (
    BaseKnobs,
    ConfigError,
    knobs_to_config,
    resolve_knobs,
)
from glossogen.refusals import (
    LOGGED_INT_MAX,
    MAX_AGENT_TURNS_LIMIT,
    Refusal,
    above_zero,
    path_not_text,
)
from glossogen.scenario import Scenario, load_scenario
from glossogen.storage import (
    RunFolder,
    RunStore,
    absolute,
)

Derivation = Literal["fork_at_round", "replace_agent", "cross_run_replace_agent"]


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
    extra, config = derived_config(request, cls, started, events)
    seats = {a: (m, p) for a, (m, p, _) in state.seats.items()}
    overrides = seat_entries(seats, extra, config)
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
    limits = derived_limits(request, events, lineage)
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
        write_prefix, request=request, started=started, config=recorded, lineage=lineage,
        state=state, history=history, limits=limits, seats=seated,
    )  # fmt: skip
    folder = write_derived(
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
        DeriveError: (64) a ``source_run_dir`` or ``donor_run_dir`` not UTF-8 text,
            ``after_round``, ``rounds_after`` or ``max_agent_turns`` below 1
            (or past :data:`~glossogen.refusals.LOGGED_INT_MAX`, ``max_agent_turns`` past
            :data:`~glossogen.refusals.MAX_AGENT_TURNS_LIMIT`),
            a ``run_timeout_seconds`` not above 0 or infinite, a ``spend_cap_usd`` not a
            finite number above 0, an unknown replacement ``provider``; ``exc.refusal`` says
            which.
    """
    for field, path in (("source_run_dir", request.source_run_dir),
                        ("donor_run_dir", request.donor_run_dir)):  # fmt: skip
        not_text = None if path is None else path_not_text(field, path)
        if not_text is not None:  # no folder a run records can be named by it
            raise DeriveError(refusal=not_text, exit_code=64)
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
    refused = above_zero("run_timeout_seconds", request.run_timeout_seconds, "seconds") or (
        above_zero("spend_cap_usd", request.spend_cap_usd, "USD")
    )  # the launch's one check of its limits (``launch.check_limits``)
    if refused is not None:
        raise DeriveError(refusal=refused, exit_code=64)
    if request.provider is not None:
        try:  # the replacement's provider, named as given (as ``run`` names its default's)
            parse_provider(request.provider)
        except UnknownProviderError as exc:
            raise DeriveError(
                refusal=Refusal(field="provider", reason=str(exc), colon=True), exit_code=64
            ) from None


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
