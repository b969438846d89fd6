"""A model request's fingerprint: the SHA-256 of a canonical form of what was sent.

Logged at send time (``model_request_sent.request_sha256``; an unbilled seat's, which logs no
sent event, on its ``llm_response_received``) so that a replay (:mod:`glossogen.replay`) can
check that each seat, at its n-th call, sent exactly what it sent in the recorded run.

The canonical form is pydantic-ai's own JSON form of the messages (its
``ModelMessagesTypeAdapter``) with what a provider or the clock stamps on a message dropped
(timestamps, provider ids and details, usage, model and provider names, run ids, thinking
signatures), every tool call's arguments as a parsed object (a provider sends a JSON string,
a replayed or scripted answer a dict), plus the tool definitions the request offered (name,
description, JSON schema; function and output tools). Request settings are not part of it:
they name the run (the prompt cache key), which a replay changes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models import ModelRequestParameters

STAMPED = frozenset(
    {
        "timestamp",
        "provider_response_id",
        "provider_details",
        "provider_name",
        "provider_url",
        "model_name",
        "usage",
        "run_id",
        "conversation_id",
        "canonical_system",
        "model_id",
        "finish_reason",
        "signature",
        "id",
        "metadata",
    }
)
"""Keys dropped from a message's JSON form: stamped by the provider or the clock, not sent."""


def canonical_request(
    messages: list[ModelMessage], parameters: ModelRequestParameters | None
) -> dict[str, Any]:
    """Return the canonical form of one request: its messages and the tools it offered."""
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    tools = []
    if parameters is not None:
        for tool in [*parameters.function_tools, *parameters.output_tools]:
            tools.append(
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters_json_schema,
                }
            )
    return {"messages": unstamped(dumped), "tools": tools}


def unstamped(value: Any) -> Any:
    """Messages in their JSON form without :data:`STAMPED` keys, tool arguments parsed.

    What a request's fingerprint is taken of; also how a replay compares the histories its
    log holds with the recorded ones (``agent_history_appended.messages``).
    """
    if isinstance(value, list):
        return [unstamped(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: unstamped(v) for k, v in value.items() if k not in STAMPED}
    if out.get("part_kind") == "tool-call" and isinstance(out.get("args"), str):
        try:
            out["args"] = json.loads(out["args"] or "{}")
        except json.JSONDecodeError:
            pass  # a malformed argument string is sent as it is: fingerprinted as it is
    return out


def canonical_text(canonical: dict[str, Any]) -> str:
    """The canonical form as the text that is hashed (sorted keys, indented: diffable)."""
    return json.dumps(canonical, sort_keys=True, indent=1, ensure_ascii=False)


def request_fingerprint(
    messages: list[ModelMessage], parameters: ModelRequestParameters | None
) -> str:
    """Return the SHA-256 (hex) of the request's canonical form.

    The hash of ``canonical_text(canonical_request(messages, parameters))``, that text built from
    pieces: each message's and each tool's part of it is rendered once and kept (a seat's
    history is re-sent with every request, so rendering it whole each time made a run's
    fingerprints quadratic in its length).
    """
    canonical = canonical_request([], parameters)
    if not messages:
        return hashlib.sha256(canonical_text(canonical).encode()).hexdigest()
    last = len(messages) - 1  # the request being sent: rendered from its content each time
    listed = ",\n  ".join(
        _message_text(message) if at == last else _history_text(message)
        for at, message in enumerate(messages)
    )
    tools = ",\n  ".join(_piece(tool) for tool in canonical["tools"])
    text = (
        '{\n "messages": [\n  '
        + listed
        + "\n ],\n "
        + ('"tools": [\n  ' + tools + "\n ]\n}" if tools else '"tools": []\n}')
    )
    return hashlib.sha256(text.encode()).hexdigest()


_TEXTS: dict[str, str] = {}
"""A message's or a tool's canonical text at its depth in a request, by its compact JSON form."""
_KEPT = 4096
"""Pieces kept at most (the cache starts again past it)."""


_SENT: dict[int, tuple[ModelMessage, tuple[int, ...], str]] = {}
"""A history message's canonical text by the message's identity: the message (kept, so its id
names no other), the identities of its fields' and its parts' fields' values, and its text."""


def _fields(message: ModelMessage) -> tuple[int, ...]:
    """The identities of the values of ``message``'s fields and of each of its parts' fields."""
    own = tuple(map(id, vars(message).values()))
    return own + tuple(i for part in message.parts for i in map(id, vars(part).values()))


def _history_text(message: ModelMessage) -> str:
    """:func:`_message_text` of a message already in a seat's history, by its identity.

    A seat's history is re-sent with every request as the same message objects, so keying its
    text by each message's JSON form (:data:`_TEXTS`) still serialized the whole history per
    request: quadratic in a run's length (a 1500-event run's replay spent a fifth of its time
    there). A message one of whose fields, or one of whose parts' fields, holds another value
    than when it was rendered (a field set again, a part added, replaced or removed) is
    rendered again. Not seen: a change made inside a field's value in place (an item set in a
    tool call's argument dict), which neither the engine nor pydantic-ai makes to a sent message.
    """
    fields = _fields(message)
    kept = _SENT.get(id(message))
    if kept is not None and kept[0] is message and kept[1] == fields:
        return kept[2]
    if len(_SENT) >= _KEPT:
        _SENT.clear()
    text = _message_text(message)
    _SENT[id(message)] = (message, fields, text)
    return text


def _message_text(message: ModelMessage) -> str:
    """One message's canonical text as it stands in a request's ``messages`` list."""
    key = ModelMessagesTypeAdapter.dump_json([message]).decode()
    text = _TEXTS.get(key)
    if text is None:
        (dumped,) = ModelMessagesTypeAdapter.dump_python([message], mode="json")
        text = _keep(key, unstamped(dumped))
    return text


def _piece(value: dict[str, Any]) -> str:
    """A tool's canonical text as it stands in a request's ``tools`` list."""
    key = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return _TEXTS.get(key) or _keep(key, value)


def _keep(key: str, value: Any) -> str:
    """Render ``value`` two levels deep in the canonical text (each newline indented by 2)."""
    if len(_TEXTS) >= _KEPT:
        _TEXTS.clear()
    text = _TEXTS[key] = canonical_text(value).replace("\n", "\n  ")
    return text
