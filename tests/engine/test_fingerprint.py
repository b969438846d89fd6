"""A request's fingerprint: the hash of its canonical text, however that text is assembled."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from glossogen.engine._fingerprint import canonical_request, canonical_text, request_fingerprint

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _whole(messages: list[ModelMessage], parameters: ModelRequestParameters | None) -> str:
    """The fingerprint as the module docstring defines it: one render of the whole request."""
    text = canonical_text(canonical_request(messages, parameters))
    return hashlib.sha256(text.encode()).hexdigest()


def _history() -> list[ModelMessage]:
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(content="You are seat A.\nSay little.", timestamp=AT),
                UserPromptPart(content='Round 1: "glyph" ∆ ü\t[x]', timestamp=AT),
            ]
        ),
        ModelResponse(
            parts=[
                TextPart(content="thinking, then a call"),
                ToolCallPart(
                    tool_name="send", args='{"text": "zu ka", "n": 1.5}', tool_call_id="c1"
                ),
                ToolCallPart(tool_name="send", args="{not json", tool_call_id="c2"),
                ToolCallPart(tool_name="look", args={"at": [1, {"b": None}]}, tool_call_id="c3"),
            ],
            model_name="scripted",
            timestamp=AT,
            provider_response_id="resp-1",
        ),
        ModelRequest(
            parts=[ToolReturnPart(tool_name="send", content={"ok": True}, tool_call_id="c1")]
        ),
    ]


TOOLS = ModelRequestParameters(
    function_tools=[
        ToolDefinition(
            name="send",
            description="Send a message.\nOne line.",
            parameters_json_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}, "n": {"type": "number"}},
                "required": ["text"],
            },
        ),
        ToolDefinition(name="look", parameters_json_schema={"type": "object", "properties": {}}),
    ]
)


def test_the_fingerprint_is_the_hash_of_the_whole_canonical_text() -> None:
    history = _history()
    cases: list[tuple[list[ModelMessage], ModelRequestParameters | None]] = [
        ([], None),
        ([], TOOLS),
        (history[:1], None),
        (history[:1], ModelRequestParameters()),
        (history, TOOLS),
        (history[:2], TOOLS),
        (history, TOOLS),  # twice: the second from the kept pieces
    ]
    assert [request_fingerprint(m, p) for m, p in cases] == [_whole(m, p) for m, p in cases]


def test_a_message_changed_after_it_was_fingerprinted_is_fingerprinted_as_it_now_is() -> None:
    history = _history()
    before = request_fingerprint(history, TOOLS)
    part = history[0].parts[1]
    assert isinstance(part, UserPromptPart)
    part.content = "Round 1: another prompt"
    after = request_fingerprint(history, TOOLS)
    assert after == _whole(history, TOOLS)
    assert after != before


def test_a_message_changed_deep_inside_or_given_a_new_part_is_fingerprinted_as_it_now_is() -> None:
    """A seat's messages are rendered once and their text reused while each still equals what
    was rendered: a tool call's arguments changed in place, or a part added (pydantic-ai
    rebuilds ``parts``), each gives the fingerprint of a fresh render."""
    history = _history()
    seen = [request_fingerprint(history, TOOLS)]
    call = next(
        p for m in history for p in m.parts if isinstance(p, ToolCallPart) and p.tool_name == "look"
    )
    assert isinstance(call.args, dict)
    call.args["extra"] = [1, 2]
    seen.append(request_fingerprint(history, TOOLS))
    assert seen[-1] == _whole(history, TOOLS)
    first = history[0]
    assert isinstance(first, ModelRequest)
    first.parts = [*first.parts, UserPromptPart(content="one more", timestamp=AT)]
    seen.append(request_fingerprint(history, TOOLS))
    assert seen[-1] == _whole(history, TOOLS)
    assert len(set(seen)) == 3


def test_a_history_message_given_another_part_or_field_is_fingerprinted_as_it_now_is() -> None:
    history = _history()
    request = [*history, ModelRequest(parts=[UserPromptPart(content="Round 2", timestamp=AT)])]
    seen = [(request_fingerprint(request, TOOLS), _whole(request, TOOLS))]  # history kept
    seen.append((request_fingerprint(request, TOOLS), _whole(request, TOOLS)))  # from the kept
    history[2].parts.append(UserPromptPart(content="and one more", timestamp=AT))
    seen.append((request_fingerprint(request, TOOLS), _whole(request, TOOLS)))
    history[1].parts[0] = TextPart(content="another thought")
    seen.append((request_fingerprint(request, TOOLS), _whole(request, TOOLS)))
    history[0].instructions = "Other instructions."
    seen.append((request_fingerprint(request, TOOLS), _whole(request, TOOLS)))
    assert [made == whole for made, whole in seen] == [True] * 5
    assert len({made for made, _ in seen}) == 4  # the second is the first again


def test_a_growing_history_interleaved_with_another_seat_s_hashes_as_the_whole_text() -> None:
    """Each request carries on from the hash state of a shorter one it starts with (the last
    request's, another seat's, one from 12 messages back, or none): the digest is the whole
    text's every time, including after a message the earlier requests shared is changed."""
    history, other = _history(), _history()[:1]
    requests: list[tuple[list[ModelMessage], ModelRequestParameters | None]] = []
    for n in range(12):
        history = [
            *history,
            ModelRequest(parts=[UserPromptPart(content=f"Round {n}", timestamp=AT)]),
        ]
        other = [*other, ModelResponse(parts=[TextPart(content=f"seat B {n}")], timestamp=AT)]
        requests += [
            (history, TOOLS),
            (other, None),
            (history[:3], TOOLS),
            (history[: n + 1], None),
        ]
    made = [request_fingerprint(m, p) for m, p in requests]
    whole = [_whole(m, p) for m, p in requests]
    part = history[0].parts[1]
    assert isinstance(part, UserPromptPart)
    part.content = "Round 1: said otherwise"
    made += [request_fingerprint(history, TOOLS), request_fingerprint(history[:5], TOOLS)]
    whole += [_whole(history, TOOLS), _whole(history[:5], TOOLS)]
    assert made == whole
    assert len(set(made)) == 12 + 12 + 1 + 12 + 2  # each distinct request once
