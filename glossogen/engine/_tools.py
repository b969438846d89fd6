"""The tools every agent has: wait for notifications, read a channel, send a message.

The caller's identity comes from the run context (``ctx.deps.agent_id``), never from an
argument, so an agent cannot speak as another. The tools depend on the run's messaging only
(:class:`~glossogen.engine._messaging.Messaging`), never on the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_ai import Tool

from glossogen.scenario import AgentDeps, ToolContext

if TYPE_CHECKING:
    from glossogen.engine._messaging import Messaging

CONFLICT_NOTE = (
    "New messages arrived since you last read this channel; nothing was sent. "
    "Read them and send again if still needed."
)


def core_tools(messaging: Messaging) -> list[Tool[AgentDeps]]:
    """Return the three core tools bound to a run's ``messaging``.

    The tools' definitions (names, schemas) do not depend on it: the launch estimate measures
    them with ``None``.
    """

    async def wait_for_notifications(ctx: ToolContext) -> dict[str, Any]:
        """Wait until a message or notice arrives for you, then return everything new.

        Returns {"messages": [{channel_id, sender_id, text, message_id}], "events": [{kind, text}]}.
        """
        runner = messaging.inbox(ctx.deps.agent_id)
        if not runner.inbox:
            await runner.wait_for_news(messaging.changed)
        batch = runner.drain_inbox()
        messaging.mark_batch_read(ctx.deps.agent_id, batch)
        return dict(batch)

    async def read_channel(ctx: ToolContext, channel_id: str) -> dict[str, Any]:
        """Return every message on ``channel_id`` in the current phase, oldest first."""
        channel = messaging.open_channel(ctx.deps.agent_id, channel_id)
        if isinstance(channel, str):
            return {"status": "error", "reason": channel}
        messaging.mark_seen(ctx.deps.agent_id, channel)
        runner = messaging.inbox(ctx.deps.agent_id)
        kept = [
            (k, m)
            for k, m in runner.inbox
            if not (k == "message" and m["channel_id"] == channel_id)
        ]
        runner.inbox.clear()
        runner.inbox.extend(kept)
        return {"status": "ok", "messages": [m.as_delivered() for m in channel.messages]}

    async def send_message(ctx: ToolContext, channel_id: str, text: str) -> dict[str, Any]:
        """Send ``text`` on ``channel_id``. On a metered channel every character counts.

        If others wrote on the channel since you last read it, nothing is sent: the reply has
        status "conflict" and the new messages, so you can reconsider.
        """
        agent_id = ctx.deps.agent_id
        channel = messaging.open_channel(agent_id, channel_id)
        if isinstance(channel, str):
            return {"status": "error", "reason": channel}
        if not text.strip():
            return {"status": "error", "reason": "empty message; nothing was sent"}
        refusal = messaging.refusal(agent_id, channel_id, text)
        if refusal is not None:
            return {"status": "refused", "reason": refusal}
        unread = messaging.unread(agent_id, channel)
        if unread:
            messaging.mark_seen(agent_id, channel)
            runner = messaging.inbox(agent_id)
            ids = {m.short_id for m in unread}
            kept = [
                (k, m) for k, m in runner.inbox if not (k == "message" and m["message_id"] in ids)
            ]
            runner.inbox.clear()
            runner.inbox.extend(kept)
            return {
                "status": "conflict",
                "note": CONFLICT_NOTE,
                "messages": [m.as_delivered() for m in unread],
            }
        return messaging.send(agent_id, channel, text)

    return [
        Tool(wait_for_notifications, takes_ctx=True),
        Tool(read_channel, takes_ctx=True),
        Tool(send_message, takes_ctx=True),
    ]
