"""The knobs and limits a derived run plays under: the source's at its boundary, the request's.

:func:`knobs_at` reads the knobs a run played a round under (``config.json`` or
``simulation_started``, each corrected by the resumes that changed them,
:func:`config_at_round`); :func:`derived_config` lays a fork's ``--knobs`` over them and
:func:`seat_entries` keeps every seat's model in the derived run's ``model_overrides``;
:func:`derived_limits` lays the request's limits over those in force at the boundary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from glossogen.derive._resume import recorded_limits
from glossogen.derive._state import DeriveError
from glossogen.eventlog import Event, RunResumed, SimulationStarted
from glossogen.knobs import ConfigError, lift_legacy_knobs, load_config
from glossogen.refusals import Refusal
from glossogen.scenario import Scenario, scenario_dir
from glossogen.storage import CONFIG, RunFolder

if TYPE_CHECKING:
    from glossogen.derive._fork import ForkRequest


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


def derived_config(
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


def seat_entries(
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


def derived_limits(
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
