"""The core tools as an agent meets them: the send conflict rule, channel membership and phase."""

import pytest

from glossogen.engine._tools import CONFLICT_NOTE
from glossogen.scenario import ChannelSpec, ScriptedMove
from tests.engine._tiny import CHANNELS, Tiny, by_agent, knobs, play, sends

pytestmark = pytest.mark.timeout(30)


def without_ids(result):
    return {k: v for k, v in result.items() if k != "message_id"}


def send_until_sent(text):
    """Send ``text`` on ``link``; after a conflict, send it again."""

    def policy(view):
        if any(r["status"] == "sent" for r in view.tool_results("send_message")):
            return ScriptedMove.finish()
        return ScriptedMove.call("send_message", channel_id="link", text=text)

    return policy


def test_a_send_after_someone_else_wrote_unread_is_a_conflict_and_sends_nothing():
    # Both answer their briefing by sending; a's call returns first (seats play in order), so
    # b's send finds a's message unread.
    scenario = Tiny(
        knobs(), by_agent(a=sends(("link", "from a")), b=send_until_sent("from b")), budget=150
    )
    played = play(scenario)
    first, second = played.results("b", "send_message")
    # agents see the run's short message ids (m<n>), not the log's UUIDs
    seen = {"message_id": "m1", "channel_id": "link", "sender_id": "a", "text": "from a"}
    assert first == {"status": "conflict", "note": CONFLICT_NOTE, "messages": [seen]}
    # The conflicted send was not logged nor charged: b's retry is charged 6 on top of a's 6.
    assert second == {
        "status": "sent",
        "message_id": "m2",
        "chars": 6,
        "budget_used_chars": 12,
        "budget_chars": 150,
    }
    sent = [
        (e.sender_id, e.text, e.budget_used_chars, e.short_id) for e in played.of("message_sent")
    ]
    assert sent == [("a", "from a", 6, "m1"), ("b", "from b", 12, "m2")]
    assert all(len(e.message_id) == 36 for e in played.of("message_sent"))  # the log's own UUIDs


def test_a_conflict_counts_as_reading_so_the_message_is_not_notified_again():
    scenario = Tiny(knobs(), by_agent(a=sends(("link", "from a")), b=send_until_sent("from b")))
    play(scenario)
    b_last = [v for v in scenario.views if v.agent_id == "b"][-1]
    assert [o.kind for o in b_last.observations] == ["briefing", "tool_result", "tool_result"]


def test_own_messages_never_conflict():
    scenario = Tiny(knobs(), by_agent(a=sends(("chat", "one"), ("chat", "two"), ("chat", "three"))))
    played = play(scenario)
    assert [r["status"] for r in played.results("a", "send_message")] == ["sent"] * 3


def test_replying_after_waiting_is_not_a_conflict():
    def b(view):
        if not view.tool_results("wait_for_notifications"):
            return ScriptedMove.call("wait_for_notifications")
        if not view.tool_results("send_message"):
            return ScriptedMove.call("send_message", channel_id="chat", text="got it")
        return ScriptedMove.finish()

    played = play(Tiny(knobs(), by_agent(a=sends(("chat", "hello")), b=b)))
    assert [r["status"] for r in played.results("b", "send_message")] == ["sent"]
    assert [(e.sender_id, e.text) for e in played.of("message_sent")] == [
        ("a", "hello"),
        ("b", "got it"),
    ]


def test_replying_to_a_message_received_as_a_notification_is_not_a_conflict():
    def b(view):
        # Stop at the briefing; answer the notification that wakes b up.
        if view.observations[-1].kind == "notifications" and not view.tool_results("send_message"):
            return ScriptedMove.call("send_message", channel_id="chat", text="got it")
        return ScriptedMove.finish()

    played = play(Tiny(knobs(), by_agent(a=sends(("chat", "hello")), b=b)))
    assert [r["status"] for r in played.results("b", "send_message")] == ["sent"]


PRIVATE = (*CHANNELS, ChannelSpec("private", metered=False, members=("b",)))
YOURS = "yours: link, chat, postmortem"

# a's sends and what each returns, main phase then postmortem.
A_MAIN = [
    ("private", "x", {"status": "error", "reason": f"unknown channel 'private'; {YOURS}"}),
    (
        "postmortem",
        "x",
        {"status": "error", "reason": "channel 'postmortem' is closed during the main phase"},
    ),
    ("nowhere", "x", {"status": "error", "reason": f"unknown channel 'nowhere'; {YOURS}"}),
    ("chat", "   ", {"status": "error", "reason": "empty message; nothing was sent"}),
]
A_POSTMORTEM = [
    (
        "chat",
        "x",
        {"status": "error", "reason": "channel 'chat' is closed during the postmortem phase"},
    ),
    ("postmortem", "ok", {"status": "sent", "chars": 2}),
]


def test_agents_send_only_on_their_channels_and_only_in_their_phase():
    policy = by_agent(
        a=sends(
            *[(c, t) for c, t, _ in A_MAIN], postmortem=tuple((c, t) for c, t, _ in A_POSTMORTEM)
        ),
        b=sends(("private", "only b")),
    )
    scenario = Tiny(knobs(postmortem_enabled=True), policy, channels=PRIVATE)
    played = play(scenario)
    assert [without_ids(r) for r in played.results("a", "send_message")] == [
        r for _, _, r in A_MAIN + A_POSTMORTEM
    ]
    sent = [(e.phase, e.sender_id, e.channel_id, e.text) for e in played.of("message_sent")]
    assert sent == [("main", "b", "private", "only b"), ("postmortem", "a", "postmortem", "ok")]
    heard_by_a = [m for v in scenario.views if v.agent_id == "a" for m in v.received_messages()]
    assert heard_by_a == []


def test_reading_a_channel_one_is_not_a_member_of_is_refused():
    def a(view):
        if view.tool_results("read_channel"):
            return ScriptedMove.finish()
        return ScriptedMove.call("read_channel", channel_id="private")

    played = play(Tiny(knobs(), by_agent(a=a, b=sends(("private", "only b"))), channels=PRIVATE))
    assert played.results("a", "read_channel") == [
        {"status": "error", "reason": f"unknown channel 'private'; {YOURS}"}
    ]
