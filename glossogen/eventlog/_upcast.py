"""Upcasters: read event logs written by GlossoGen 0.5.x as events of this schema.

A line with no ``schema_version`` was written by GlossoGen 0.5.x (the original platform; its
event names and shapes are documented in its docs, read for facts only). :class:`LegacyUpcaster`
rewrites such lines, one log at a time and in order, into this release's shapes:

- ``round_advanced`` becomes ``round_started``;
- ``message_sent`` with a nested ``message`` becomes a flat ``message_sent`` (``sender_id``,
  ``text``; ``delivered_text`` is the noised text where the line kept one, else ``text``;
  ``chars`` is ``len(text)``);
- ``agent_registered`` takes ``role_name`` as role and display name, and its model and
  provider from the line or from the run's ``model_overrides``;
- ``tool_call_invoked``/``tool_result_received`` rename ``call_id``/``arguments``;
- ``llm_response_received`` flattens ``usage`` into token counts and numbers each agent's cycles;
- ``round_ended``/``postmortem_ended`` map triggers (``all_agents_idle`` -> ``all_idle``, a
  scenario's own settle trigger -> ``settled``);
- ``round_result_recorded`` with a null team is the single team ``team`` (the scenario
  contract's default team id);
- ``simulation_ended``: ``reason`` ``scenario_complete`` -> status ``completed``; counts the
  line does not carry stay null;
- ``phase`` is tracked from ``postmortem_started``/``postmortem_ended``.

A 0.5 event this release has no mapping for keeps its name and reads as unknown
(``agent_connected``); one whose name a class of ours also uses, with other fields (a scenario's
own events, such as ``veyru_case_started``), is renamed ``glossogen05.<type>`` so it reads as
unknown rather than failing validation.
"""

from __future__ import annotations

from typing import Any

from glossogen.eventlog._events import event_classes

LEGACY_SCHEMA_VERSION = 0
"""``schema_version`` given to an upcast GlossoGen 0.5.x line."""

LEGACY_PREFIX = "glossogen05."
"""Prefix of a 0.5.x event type this release does not model."""

DEFAULT_TEAM = "team"
"""Team id of a single-team scenario (the scenario contract's default)."""

_TRIGGERS = {
    "all_agents_idle": "all_idle",
    "all_idle": "all_idle",
    "timeout": "timeout",
    "time_limit": "timeout",
    "phase_timeout": "timeout",
    "turn_limit": "turn_limit",
    "max_turns": "turn_limit",
}

_STATUSES = {
    "scenario_complete": "completed",
    "completed": "completed",
    "error": "error",
    "interrupted": "interrupted",
    "keyboard_interrupt": "interrupted",
    "cancelled": "interrupted",
}


def is_legacy(obj: dict[str, Any]) -> bool:
    """Return whether a parsed event line was written by GlossoGen 0.5.x.

    Such a line has a string ``event_type`` and no ``schema_version``.
    """
    return "schema_version" not in obj and isinstance(obj.get("event_type"), str)


def _trigger(value: Any) -> str:
    text = str(value or "")
    return _TRIGGERS.get(text, "settled")


class LegacyUpcaster:
    """Rewrites the lines of one GlossoGen 0.5.x log, in order, into this schema's shapes.

    Stateful: it remembers the run's default provider and ``model_overrides`` (from
    ``simulation_started``), the phase, and each agent's cycle count. Use one instance per log.
    """

    def __init__(self) -> None:
        """Start with no run seen yet."""
        self._provider = ""
        self._overrides: dict[str, dict[str, Any]] = {}
        self._models: dict[str, tuple[str, str]] = {}
        self._cycles: dict[str, int] = {}
        self._phase = "main"

    def upcast(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Return ``obj`` (a 0.5.x line, parsed) rewritten as a line of this schema.

        Args:
            obj: One parsed log line without ``schema_version``.

        Returns:
            A new dict with ``schema_version`` 0 and this release's field names; an event
            with no mapping comes back as it was (renamed if one of our classes has its name).
        """
        kind = str(obj.get("event_type", ""))
        handler = getattr(self, f"_{kind}", None)
        if handler is None:
            if kind in event_classes():  # same name, other fields: read as unknown, not invalid
                return {**obj, "event_type": f"{LEGACY_PREFIX}{kind}"}
            return obj
        out = dict(obj)
        out["schema_version"] = LEGACY_SCHEMA_VERSION
        handler(out)
        out.setdefault("phase", self._phase)
        return out

    def _simulation_started(self, out: dict[str, Any]) -> None:
        config = out.get("scenario_config") or {}
        self._provider = str(out.get("provider") or "")
        self._overrides = dict(config.get("model_overrides") or {})
        out["phase"] = "setup"
        out.setdefault("model", "")
        out.setdefault("provider", self._provider)

    def _agent_registered(self, out: dict[str, Any]) -> None:
        agent = str(out.get("agent_id", ""))
        override = self._overrides.get(agent) or {}
        model = out.get("model") or override.get("model") or ""
        provider = out.get("provider") or override.get("provider") or self._provider
        self._models[agent] = (str(model), str(provider))
        role = out.get("role_name") or agent
        out.update(
            phase="setup",
            role=role,
            display_name=role,
            team_id=out.get("team_id") or DEFAULT_TEAM,
            model=model,
            provider=provider,
            tools=list(out.get("tool_names") or []),
            channels=list(out.get("channel_ids") or []),
        )
        if out.get("max_tokens") is not None:
            out["model_settings"] = {"max_tokens": out["max_tokens"]}

    def _round_advanced(self, out: dict[str, Any]) -> None:
        self._phase = "main"
        out["event_type"] = "round_started"
        out["phase"] = "main"

    def _injection_delivered(self, out: dict[str, Any]) -> None:
        out["text"] = str(out.get("text") or "")

    def _world_event_delivered(self, out: dict[str, Any]) -> None:
        out["text"] = str(out.get("text") or "")
        out.setdefault("kind", "world_event")

    def _message_sent(self, out: dict[str, Any]) -> None:
        message = out.get("message")
        if not isinstance(message, dict):
            return  # not the 0.5 shape: left to fail validation and be counted
        del out["message"]
        text = str(message.get("text") or "")
        delivered = message.get("delivered_text") or message.get("noisy_text") or text
        out.update(
            message_id=message.get("message_id") or out.get("event_id"),
            channel_id=message.get("channel_id") or "",
            sender_id=message.get("sender_agent_id") or "",
            text=text,
            delivered_text=str(delivered),
            chars=len(text),
        )

    def _tool_call_invoked(self, out: dict[str, Any]) -> None:
        out["tool_call_id"] = out.pop("call_id", "") or ""
        out["args"] = out.pop("arguments", None) or {}

    def _tool_result_received(self, out: dict[str, Any]) -> None:
        out["tool_call_id"] = out.pop("call_id", "") or ""
        out["args"] = out.pop("arguments", None) or {}

    def _llm_response_received(self, out: dict[str, Any]) -> None:
        agent = str(out.get("agent_id", ""))
        model, provider = self._models.get(agent, ("", self._provider))
        self._cycles[agent] = self._cycles.get(agent, 0) + 1
        usage = out.pop("usage", None) or {}
        calls = [
            {
                "tool_name": c.get("tool_name"),
                "tool_call_id": c.get("call_id"),
                "args": c.get("arguments") or {},
            }
            for c in out.get("tool_calls") or []
        ]
        out.update(
            model=out.get("model") or model,
            provider=out.get("provider") or provider,
            cycle=self._cycles[agent],
            text=out.get("text") or "",
            thinking=out.get("thinking") or "",
            tool_calls=calls,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=int(usage.get("cache_read_input_tokens") or 0),
            cache_write_tokens=int(usage.get("cache_creation_input_tokens") or 0),
        )

    def _round_ended(self, out: dict[str, Any]) -> None:
        out["trigger"] = _trigger(out.get("trigger"))
        out.setdefault("elapsed_seconds", None)

    def _round_result_recorded(self, out: dict[str, Any]) -> None:
        out["team_id"] = out.get("team_id") or DEFAULT_TEAM
        out["reason"] = str(out.get("reason") or "")

    def _postmortem_started(self, out: dict[str, Any]) -> None:
        self._phase = "postmortem"
        out["phase"] = "postmortem"
        out.setdefault("channel_id", "postmortem")

    def _postmortem_ended(self, out: dict[str, Any]) -> None:
        out["phase"] = "postmortem"
        self._phase = "main"
        out["trigger"] = _trigger(out.get("trigger"))
        out.setdefault("elapsed_seconds", None)

    def _simulation_ended(self, out: dict[str, Any]) -> None:
        reason = str(out.get("reason") or "")
        out.update(
            status=_STATUSES.get(reason, "error" if "error" in reason else "incomplete"),
            status_detail=reason,
            rounds_played=out.get("rounds_played"),
            rounds_won=out.get("rounds_won"),
            total_messages=out.get("total_messages"),
            total_chars=out.get("total_chars"),
            total_cost_usd=out.get("total_cost_usd"),
            duration_seconds=out.get("duration_seconds"),
        )
