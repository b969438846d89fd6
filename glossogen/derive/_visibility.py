"""What a replaced seat is shown of its seat's history: ``--channel-visibility``.

A seat's history is logged in pieces (``agent_history_appended``), each tagged with the phase
and round it was logged in. A piece may rewrite the tail of the history before it (pydantic-ai
merges the next prompt into a history that ends in a request, so the engine logs the merged
message again from its index): a part already logged keeps the tag of the piece that first
logged it, and only parts new in the piece take the piece's tag. The rule of each phase's
channel then decides, part by part, what the incoming model sees.

The filtered history is well-formed: a tool call is kept together with its return (or retry
prompt), or neither, so no call is left unanswered and no result answers nothing; messages
left empty are dropped and adjacent requests or responses merged (pydantic-ai's
``repair_messages``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from glossogen.derive._state import DeriveError, RunState, upcast_history
from glossogen.eventlog import AgentHistoryAppended, AgentRegistered
from glossogen.refusals import Refusal

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

Tag = tuple[str, int]
"""``(phase, round_number)`` of the piece that first logged a part."""
Tagged = tuple[dict[str, Any], list[Tag]]
"""A logged message (JSON) and one tag per part."""
RETURN_KINDS = ("tool-return", "retry-prompt")
"""Request parts that answer a tool call (a retry prompt only when it names a tool)."""


def rule_allows(rule: str, round_number: int, after: int, spelled: str) -> bool:
    """Whether ``rule`` (``full`` | ``none`` | ``from_round:R``) shows a part of ``round_number``.

    Raises:
        DeriveError: (65) R outside 1..``after`` (the run's rounds); (64) a rule of another
            spelling.
    """
    if rule == "full":
        return True
    if rule == "none":
        return False
    if rule.startswith("from_round:") and rule.removeprefix("from_round:").isdigit():
        first = int(rule.removeprefix("from_round:"))
        if not 1 <= first <= after:
            raise DeriveError(
                refusal=Refusal(
                    field="channel_visibility",
                    value=spelled,
                    reason=f"R must be 1..{after} (the swap round)",
                )
            )
        return round_number >= first
    raise DeriveError(  # a spelling no run could take: usage (64), as a bound's refusal
        refusal=Refusal(
            field="channel_visibility",
            value=repr(spelled),
            reason="use full, none or from_round:R, "
            "or channel=rule pairs such as link=full,postmortem=none",
        ),
        exit_code=64,
    )


def phase_rules(spelled: str, channel_phases: Mapping[str, str]) -> dict[str, str]:
    """Map phase -> rule from ``full`` | ``none`` | ``from_round:R`` or ``channel=rule,...``.

    A channel not named keeps ``full``. The history an agent has is split by phase (what it
    saw on the main-phase channels, and on the postmortem channel), so two main-phase channels
    given different rules are refused.

    Raises:
        DeriveError: (65) an unknown channel, or two rules for one phase's channels.
    """
    if "=" not in spelled:
        return {"main": spelled, "postmortem": spelled, "setup": spelled}
    rules: dict[str, str] = {}
    for pair in spelled.split(","):
        channel, _, rule = pair.partition("=")
        if channel not in channel_phases:
            raise DeriveError(
                refusal=Refusal(
                    field="channel_visibility",
                    reason=f"unknown channel {channel!r} (channels: {', '.join(channel_phases)})",
                    colon=True,
                )
            )
        phase = channel_phases[channel]
        if rules.get(phase, rule) != rule:
            raise DeriveError(
                refusal=Refusal(
                    field="channel_visibility",
                    reason=f"the {phase}-phase channels must share one rule",
                    colon=True,
                )
            )
        rules[phase] = rule
    rules.setdefault("main", "full")
    rules.setdefault("postmortem", "full")
    rules["setup"] = rules["main"]
    return rules


def _retag(messages: list[dict[str, Any]], old: list[Tagged], tag: Tag) -> list[Tagged]:
    """Tag each part: the tag of the same part in ``old`` (found in order), else ``tag``."""
    seen = [(p, t) for message, tags in old for p, t in zip(message["parts"], tags, strict=True)]
    at = 0
    out: list[Tagged] = []
    for message in messages:
        tags: list[Tag] = []
        message = {**message, "parts": list(message.get("parts") or [])}
        for part in message["parts"]:
            found = next((i for i in range(at, len(seen)) if seen[i][0] == part), None)
            if found is None:
                tags.append(tag)
            else:
                tags.append(seen[found][1])
                at = found + 1
        out.append((message, tags))
    return out


def tagged_history(state: RunState, agent_id: str) -> list[Tagged]:
    """The seat's last history, each part tagged with the phase and round it was first logged in.

    A derived run registers every seat anew and logs its history again in one setup-phase
    piece: the parts of that piece found in the seat's history before the registration keep
    the tags they had there, so a fork of a fork is filtered as its source was.
    """
    tagged: list[Tagged] = []
    before: list[Tagged] = []
    for event in state.events:
        if isinstance(event, AgentRegistered) and event.agent_id == agent_id:
            before, tagged = tagged, []
        elif isinstance(event, AgentHistoryAppended) and event.agent_id == agent_id:
            start = len(tagged) if event.from_index is None else event.from_index
            old = tagged[start:] if tagged or start else before
            tag = (str(event.phase), event.round_number)
            piece = _retag(upcast_history(event.messages), old, tag)
            tagged = tagged[:start] + piece
    return tagged


def _calls_and_returns(messages: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    calls: set[str] = set()
    returns: set[str] = set()
    for message in messages:
        for part in message["parts"]:
            kind, call_id = part.get("part_kind"), part.get("tool_call_id")
            if message.get("kind") == "response" and kind == "tool-call":
                calls.add(call_id)
            elif kind in RETURN_KINDS and part.get("tool_name") is not None:
                returns.add(call_id)
    return calls, returns


def paired(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop each tool call whose return is missing and each return whose call is missing.

    A message left with no part is dropped. Other parts (prompts, text, a retry prompt that
    names no tool, the provider's built-in tool parts) are kept as they are.
    """
    calls, returns = _calls_and_returns(messages)
    both = calls & returns
    out: list[dict[str, Any]] = []
    for message in messages:
        parts = [
            part
            for part in message["parts"]
            if not (
                (message.get("kind") == "response" and part.get("part_kind") == "tool-call")
                or (part.get("part_kind") in RETURN_KINDS and part.get("tool_name") is not None)
            )
            or part.get("tool_call_id") in both
        ]
        if parts:
            out.append({**message, "parts": parts})
    return out


def visible_history(
    state: RunState,
    agent_id: str,
    spelled: str,
    after: int,
    channel_phases: Mapping[str, str],
) -> list[ModelMessage]:
    """The replaced seat's history under ``--channel-visibility``, well-formed.

    Args:
        state: The source's state at the boundary.
        agent_id: The replaced seat.
        spelled: The rule as the user wrote it.
        after: The swap boundary (the last round kept).
        channel_phases: Channel id -> the phase it is used in.

    Raises:
        DeriveError: a rule :func:`phase_rules` or :func:`rule_allows` refuses (65; 64 for a
            rule of no known spelling).
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter, repair_messages

    rules = phase_rules(spelled, channel_phases)
    for rule in set(rules.values()):
        rule_allows(rule, after, after, spelled)  # refuse a bad rule even with nothing to filter
    kept: list[dict[str, Any]] = []
    for message, tags in tagged_history(state, agent_id):
        parts = [
            part
            for part, (phase, rnd) in zip(message["parts"], tags, strict=True)
            if rule_allows(rules[phase], rnd, after, spelled)
        ]
        if parts:
            kept.append({**message, "parts": parts})
    messages = ModelMessagesTypeAdapter.validate_python(paired(kept))
    return repair_messages(messages, repair_last_response=False)
