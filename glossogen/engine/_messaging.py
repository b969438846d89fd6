"""A run's channels: membership, read marks, sending, budget warnings and the seats' inboxes.

:class:`Channels` owns the channels, the read marks, the round's budget meters and the run's
message counters; it takes what it needs of the run as explicit values (the scenario, the
knobs, the seats' specs and runners, where the run is, the event sink). The core tools depend
only on its small interface, :class:`Messaging`.
Budget rule: composed characters on metered channels, charged inside the send to the
speaker's team (each team has its own meter, so a channel two teams share charges each only for
its own members); noise after metering; warnings in order, once per team and round, to the
speaker's teammates on that channel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from glossogen.engine._channels import (
    WARNING_THRESHOLDS,
    BudgetMeter,
    Channel,
    ChannelMessage,
    apply_noise,
)
from glossogen.eventlog import (
    BudgetWarning,
    Event,
    InjectionDelivered,
    MessageSent,
    WorldEventDelivered,
    new_id,
)

if TYPE_CHECKING:
    import random

    from glossogen.engine._agent import AgentRunner
    from glossogen.engine._position import Position
    from glossogen.engine._state import RunState
    from glossogen.knobs import BaseKnobs
    from glossogen.scenario import AgentSpec, RoundContext, Scenario


class Messaging(Protocol):
    """What the core tools (``engine/_tools.py``) ask of a run, and nothing more."""

    def inbox(self, agent_id: str) -> AgentRunner:
        """The seat whose inbox, idle state and wake-up the tools read and set."""
        ...

    def changed(self) -> None:
        """Tell the round monitor that a seat's state moved."""
        ...

    def open_channel(self, agent_id: str, channel_id: str) -> Channel | str:
        """The channel if ``agent_id`` may use it now, else the reason it may not."""
        ...

    def mark_seen(self, agent_id: str, channel: Channel) -> None:
        """Record that ``agent_id`` has read everything on ``channel``."""
        ...

    def mark_batch_read(self, agent_id: str, batch: dict[str, list[dict[str, Any]]]) -> None:
        """Record that ``agent_id`` has read the channels of every message in ``batch``."""
        ...

    def unread(self, agent_id: str, channel: Channel) -> list[ChannelMessage]:
        """Messages from others on ``channel`` that ``agent_id`` has not read."""
        ...

    def refusal(self, agent_id: str, channel_id: str, text: str) -> str | None:
        """Why the scenario refuses this message before anything is metered, or None."""
        ...

    def send(self, agent_id: str, channel: Channel, text: str) -> dict[str, Any]:
        """Meter, noise, log and deliver one message; return what the sender is told."""
        ...


@dataclass(eq=False)
class Channels:
    """A run's channels and message counters (the :class:`Messaging` the tools use).

    Built from the run's parts; it opens the scenario's channels (a channel naming no members
    holds every one of ``seat_ids``).
    """

    scenario: Scenario
    knobs: BaseKnobs
    specs: Mapping[str, AgentSpec]
    seat_ids: tuple[str, ...]
    runners: Mapping[str, AgentRunner]
    """The seats' runners by id (read as messages are delivered, so filled after this)."""
    position: Position
    emit: Callable[[Event], None]
    changed: Callable[[], None]
    rng: Callable[..., random.Random]
    context: Callable[[], RoundContext]
    """The scenario's context of the current round."""
    channels: dict[str, Channel] = field(init=False)
    channel_phase: dict[str, Literal["main", "postmortem"]] = field(init=False)
    seen: dict[tuple[str, str], int] = field(init=False, default_factory=dict)
    meters: dict[str, BudgetMeter] = field(init=False, default_factory=dict)
    """This round's budget meter of each team that has a budget."""
    team_chars: dict[str, int] = field(init=False, default_factory=dict)
    """Characters each team sent on metered channels this round (composed text)."""
    total_messages: int = field(init=False, default=0)
    total_chars: int = field(init=False, default=0)
    postmortem_messages: int = field(init=False, default=0)
    """Of ``total_messages``, those sent in a postmortem."""
    seq: int = field(init=False, default=0)
    """Messages ever sent in the run (noise draws are keyed on it; continued by a resume)."""

    def __post_init__(self) -> None:
        """Open the scenario's channels, each in its phase."""
        specs = self.scenario.channels()
        self.channels = {
            c.channel_id: Channel(c.channel_id, c.metered, c.members or self.seat_ids)
            for c in specs
        }
        self.channel_phase = {c.channel_id: c.phase for c in specs}

    @property
    def phase(self) -> Literal["setup", "main", "postmortem"]:
        """The run's current phase."""
        return self.position.phase

    def inbox(self, agent_id: str) -> AgentRunner:
        """The runner of ``agent_id``: its inbox, idle state and wake-up."""
        return self.runners[agent_id]

    def open_round(self) -> None:
        """Give each team with a budget a fresh meter and forget last round's characters."""
        shares = self.scenario.budget_warning_shares() or WARNING_THRESHOLDS
        self.team_chars = {}
        self.meters = {
            team: BudgetMeter(budget, thresholds=shares)
            for team, budget in self.scenario.team_budget_chars().items()
        }

    def open_phase(self) -> None:
        """Empty every channel and forget the read marks as a phase opens."""
        for channel in self.channels.values():
            channel.messages = []
        self.seen = {}

    def postmortem_channels(self) -> list[str]:
        """The channels of the postmortem phase, in the scenario's order."""
        return [c for c, p in self.channel_phase.items() if p == "postmortem"]

    def channels_of(self, agent_id: str) -> list[str]:
        """The channels ``agent_id`` is a member of, in the scenario's order."""
        return [c for c, ch in self.channels.items() if agent_id in ch.members]

    def restore(self, state: RunState) -> None:
        """Continue the run's message counters from ``state``."""
        self.total_messages, self.total_chars = state.total_messages, state.total_chars
        self.postmortem_messages = state.postmortem_messages
        self.seq = state.message_seq

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        """Log a private briefing and queue it as the agent's next prompt."""
        self.emit(InjectionDelivered(agent_id=agent_id, text=text, data=data or {}))
        runner = self.runners[agent_id]
        runner.prompts.append((text, data or {}))
        runner.idle = False
        runner.wake.set()

    def notify(
        self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
    ) -> None:
        """Log a world event for one agent and put it in its inbox."""
        self.emit(WorldEventDelivered(agent_id=agent_id, kind=kind, text=text, data=data or {}))
        self.runners[agent_id].deliver("event", {"kind": kind, "text": text, "data": data or {}})

    def refusal(self, agent_id: str, channel_id: str, text: str) -> str | None:
        """Why the scenario refuses this message (``Scenario.refuse_message``), or None."""
        return self.scenario.refuse_message(self.context(), agent_id, channel_id, text)

    def open_channel(self, agent_id: str, channel_id: str) -> Channel | str:
        """Return the channel if ``agent_id`` may use it now, else the reason it may not."""
        channel = self.channels.get(channel_id)
        if channel is None or agent_id not in channel.members:
            names = [c for c, ch in self.channels.items() if agent_id in ch.members]
            return f"unknown channel {channel_id!r}; yours: {', '.join(names)}"
        if self.channel_phase[channel_id] != self.phase:
            return f"channel {channel_id!r} is closed during the {self.phase} phase"
        return channel

    def mark_seen(self, agent_id: str, channel: Channel) -> None:
        """Record that ``agent_id`` has read everything on ``channel``."""
        self.seen[(agent_id, channel.channel_id)] = len(channel.messages)

    def mark_batch_read(self, agent_id: str, batch: dict[str, list[dict[str, Any]]]) -> None:
        """Record that ``agent_id`` has read the channels of every message in ``batch``."""
        for message in batch["messages"]:
            self.mark_seen(agent_id, self.channels[message["channel_id"]])

    def unread(self, agent_id: str, channel: Channel) -> list[ChannelMessage]:
        """Return messages from others on ``channel`` that ``agent_id`` has not read."""
        start = self.seen.get((agent_id, channel.channel_id), 0)
        return [m for m in channel.messages[start:] if m.sender_id != agent_id]

    def send(self, agent_id: str, channel: Channel, text: str) -> dict[str, Any]:
        """Meter, noise, log and deliver one message; return what the sender is told.

        On a metered channel the characters are charged to the meter of the sender's team
        (none when the team has no budget).
        """
        chars = len(text)
        team_id = self.specs[agent_id].team_id
        meter = self.meters.get(team_id) if channel.metered else None
        charged = chars if meter is not None else 0
        crossed: list[float] = []
        if meter is not None and charged:
            crossed = meter.charge(charged)
        if channel.metered:
            self.team_chars[team_id] = self.team_chars.get(team_id, 0) + chars
        self.seq += 1
        delivered = apply_noise(
            text,
            self.knobs.channel_noise_level,
            self.knobs.noise_replacement_mode,
            self.rng("noise", channel.channel_id, self.seq),
        )
        message = ChannelMessage(
            new_id(),
            channel.channel_id,
            agent_id,
            text,
            delivered,
            self.position.round_number,
            self.seq,
        )
        billed = meter if charged else None
        self.emit(
            MessageSent(
                message_id=message.message_id,
                short_id=message.short_id,
                channel_id=channel.channel_id,
                sender_id=agent_id,
                text=text,
                delivered_text=delivered,
                chars=chars,
                charged_chars=charged,
                budget_used_chars=billed.used_chars if billed else None,
                budget_chars=billed.budget_chars if billed else None,
                charged_team_id=team_id if billed else None,
            )
        )
        channel.messages.append(message)
        self.mark_seen(agent_id, channel)
        self.total_messages += 1
        self.total_chars += chars
        self.postmortem_messages += self.phase == "postmortem"
        for member in channel.members:
            if member != agent_id:
                self.runners[member].deliver("message", message.as_delivered())
        reply: dict[str, Any] = {"status": "sent", "message_id": message.short_id, "chars": chars}
        if billed is not None:
            reply |= {
                "budget_used_chars": billed.used_chars,
                "budget_chars": billed.budget_chars,
            }
            self._warn(channel, team_id, billed, crossed)
        return reply

    def _warn(
        self, channel: Channel, team_id: str, meter: BudgetMeter, crossed: list[float]
    ) -> None:
        team = [m for m in channel.members if self.specs[m].team_id == team_id]
        for threshold in crossed:
            self.emit(
                BudgetWarning(
                    channel_id=channel.channel_id,
                    threshold=threshold,
                    used_chars=meter.used_chars,
                    budget_chars=meter.budget_chars,
                    team_id=team_id,
                )
            )
            text = (
                f"Budget: {meter.used_chars} of {meter.budget_chars} characters used "
                f"this round ({int(threshold * 100)}% mark)."
            )
            for member in team:
                self.notify(member, "budget_warning", text, {"threshold": threshold})
        if meter.exceeded and not meter.exceeded_reported:
            meter.exceeded_reported = True
            self.scenario.on_team_budget_exceeded(
                self.context(), team_id, channel.channel_id, meter.used_chars
            )
