"""Channel operations of the run engine: membership, read marks, sending, budget warnings.

Split out of ``_engine.py`` so the round loop reads on its own; :class:`ChannelOps` is mixed
into :class:`~glossogen.engine.RunEngine` and uses its state (channels, meter, runners, clock).
Budget rule: composed characters on metered channels, charged inside the send to the
speaker's team (each team has its own meter, so a channel two teams share charges each only for
its own members); noise after metering; warnings in order, once per team and round, to the
speaker's teammates on that channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from glossogen.engine._channels import BudgetMeter, Channel, ChannelMessage, apply_noise
from glossogen.eventlog import BudgetWarning, Event, MessageSent, new_id

if TYPE_CHECKING:
    import random

    from glossogen.engine._runner import AgentRunner
    from glossogen.knobs import BaseKnobs
    from glossogen.scenario import AgentSpec, RoundContext, Scenario


class ChannelOps:
    """Channel membership, read marks, ``send`` and budget warnings (mixed into the engine)."""

    if TYPE_CHECKING:  # what the mixin uses of the engine (RunEngine sets and defines them)
        channels: dict[str, Channel]
        channel_phase: dict[str, Literal["main", "postmortem"]]
        phase: Literal["setup", "main", "postmortem"]
        seen: dict[tuple[str, str], int]
        meters: dict[str, BudgetMeter]
        team_chars: dict[str, int]
        specs: dict[str, AgentSpec]
        runners: dict[str, AgentRunner]
        knobs: BaseKnobs
        scenario: Scenario
        round_number: int
        total_messages: int
        total_chars: int
        postmortem_messages: int
        _seq: int

        def emit(self, event: Event) -> None: ...

        def notify(
            self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
        ) -> None: ...

        def rng(self, *key: object) -> random.Random: ...

        @property
        def context(self) -> RoundContext: ...

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
        self._seq += 1
        delivered = apply_noise(
            text,
            self.knobs.channel_noise_level,
            self.knobs.noise_replacement_mode,
            self.rng("noise", channel.channel_id, self._seq),
        )
        message = ChannelMessage(
            new_id(), channel.channel_id, agent_id, text, delivered, self.round_number, self._seq
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
                self.context, team_id, channel.channel_id, meter.used_chars
            )
