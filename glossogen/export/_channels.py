"""Which channels are a run's primary ones, and whose team each belongs to.

Resolved by rebuilding the scenario from the run's recorded config: keys its knobs model does
not declare (a GlossoGen 0.5 config carries many) are dropped, and when the rest does not
validate (a newer scenario requires a knob the run predates) it is laid over each of the
scenario's shipped presets in turn, the run's own values always winning. A primary channel is
one open in the main phase (``ChannelSpec.phase == "main"``); its team is the one team of its
members (every seat when it names none), empty when they span several teams.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

log = logging.getLogger("glossogen.export")


@dataclass(frozen=True)
class ChannelMap:
    """A run's channels: ``primary[channel_id]`` and ``team[channel_id]``.

    ``resolved`` is False when no config rebuilt the scenario; then every lookup is None
    (both columns render empty) and ``error`` names the last failure.
    """

    resolved: bool
    primary: dict[str, bool]
    team: dict[str, str | None]
    error: str | None = None

    def is_primary(self, channel_id: str) -> bool | None:
        """Return whether ``channel_id`` is primary; None when unresolved or unknown."""
        return self.primary.get(channel_id) if self.resolved else None

    def team_of(self, channel_id: str) -> str | None:
        """Return the channel's team id; None when unresolved, unknown or shared by teams."""
        return self.team.get(channel_id) if self.resolved else None


def _validate(knobs_model: Any, config: dict[str, Any]) -> Any:
    return knobs_model.model_validate(config)


@lru_cache(maxsize=256)
def _resolve(scenario: str, config_json: str) -> ChannelMap:
    from glossogen.knobs import list_presets, load_config
    from glossogen.scenario import load_scenario, scenario_dir

    try:
        cls = load_scenario(scenario)
    except LookupError as exc:
        return ChannelMap(False, {}, {}, str(exc))
    config = json.loads(config_json)
    declared = cls.knobs_model.model_fields
    own = {k: v for k, v in config.items() if k in declared}
    candidates = [own]
    folder = scenario_dir(cls)
    for preset in list_presets(folder):
        base, _ = load_config(preset, folder)
        candidates.append({**base, **own})
    error = None
    for candidate in candidates:
        try:
            instance = cls(_validate(cls.knobs_model, candidate))
            channels, agents = instance.channels(), instance.agents()
        except Exception as exc:  # any failure to rebuild is reported, never fatal
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            continue
        teams = {a.agent_id: a.team_id for a in agents}
        primary, team = {}, {}
        for channel in channels:
            primary[channel.channel_id] = channel.phase == "main"
            members = channel.members or tuple(teams)
            owners = {teams[m] for m in members if m in teams}
            team[channel.channel_id] = owners.pop() if len(owners) == 1 else None
        return ChannelMap(True, primary, team)
    return ChannelMap(False, {}, {}, error)


def channel_map(scenario: str, config: dict[str, Any], run_id: str = "") -> ChannelMap:
    """Return the run's channel map (cached per scenario and config).

    Logs a warning naming the run and the last error when no config rebuilds the scenario.
    """
    found = _resolve(scenario, json.dumps(config, sort_keys=True, default=str))
    if not found.resolved:
        log.warning(
            "%s: is_primary_channel and team_id left empty: the scenario did not rebuild "
            "from the recorded config (%s)",
            run_id or scenario,
            found.error,
        )
    return found
