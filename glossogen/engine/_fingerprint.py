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

import copy
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
    digest = _listed(tuple(_message_text(message) for message in messages))
    tools = ",\n  ".join(_piece(tool) for tool in canonical["tools"])
    digest.update(
        (
            "\n ],\n " + ('"tools": [\n  ' + tools + "\n ]\n}" if tools else '"tools": []\n}')
        ).encode()
    )
    return digest.hexdigest()


_PREFIXES: dict[tuple[str, ...], Any] = {}
"""The SHA-256 state after a request's opening and its messages' texts, by those texts."""


def _listed(texts: tuple[str, ...]) -> Any:
    """A new SHA-256 state that has taken the request's text up to its last message.

    A seat's next request re-sends the messages of its last one and adds a few, so the state
    its last request reached is copied and given only the texts that follow (``hashlib``'s
    ``copy``: the same digest as hashing the whole text again, which made a run's hashing
    quadratic in its length). The newest few prefixes are looked for; any other starts anew.
    """
    start, state = 0, None
    for end in range(len(texts), max(len(texts) - _BACK, 0), -1):
        if (state := _PREFIXES.get(texts[:end])) is not None:
            start = end
            break
    digest = state.copy() if state is not None else hashlib.sha256(b'{\n "messages": [\n  ')
    for index in range(start, len(texts)):
        digest.update((texts[index] if index == 0 else ",\n  " + texts[index]).encode())
    if start < len(texts):
        if len(_PREFIXES) >= _KEPT:
            _PREFIXES.clear()
        _PREFIXES[texts] = digest.copy()
    return digest


_BACK = 8
"""How many messages back :func:`_listed` looks for a prefix it has hashed."""


_TEXTS: dict[str, str] = {}
"""A message's or a tool's canonical text at its depth in a request, by its compact JSON form."""
_KEPT = 4096
"""Pieces kept at most (the cache starts again past it)."""


_SEEN: dict[int, tuple[ModelMessage, ModelMessage, str]] = {}
"""A message object already rendered: by ``id()``, the object itself (so the id is not
reused while kept), a deep copy of it as it was rendered, and its canonical text."""


def _message_text(message: ModelMessage) -> str:
    """One message's canonical text as it stands in a request's ``messages`` list.

    A seat's history is re-sent with every request, so the same message objects come back each
    time: one that still equals (dataclass ``==``, field by field) the copy taken when it was
    rendered gets its text back without being serialised again (serialising it was most of a
    fingerprint's cost). pydantic-ai may change a message in place (its parts, instructions,
    timestamp), so a message that no longer equals its copy is rendered anew.
    """
    seen = _SEEN.get(id(message))
    if seen is not None and seen[0] is message and message == seen[1]:
        return seen[2]
    key = ModelMessagesTypeAdapter.dump_json([message]).decode()
    text = _TEXTS.get(key)
    if text is None:
        (dumped,) = ModelMessagesTypeAdapter.dump_python([message], mode="json")
        text = _keep(key, unstamped(dumped))
    if len(_SEEN) >= _KEPT:
        _SEEN.clear()
    _SEEN[id(message)] = (message, copy.deepcopy(message), text)
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
