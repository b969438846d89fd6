"""Grouping shared by the built-in metrics: messages per round and per agent, means, words."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable

from glossogen.evaluation._contract import AgentObservation, RoundObservation, Scored
from glossogen.eventlog import MessageSent

WORD = re.compile(r"\w+")
"""A word: a run of Unicode word characters (letters, digits, underscore), lower-cased."""


def words(text: str) -> list[str]:
    """Return the lower-cased words of ``text`` (``"Brace jade 11s"`` -> brace, jade, 11s)."""
    return WORD.findall(text.lower())


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean of a non-empty iterable."""
    items = list(values)
    return sum(items) / len(items)


def plural(n: int | float, word: str) -> str:
    """Return ``"1 round"`` / ``"3 rounds"``."""
    return f"{n:g} {word}" if n == 1 else f"{n:g} {word}s"


def by_round(messages: Iterable[MessageSent]) -> dict[int, list[MessageSent]]:
    """Group messages by round number, rounds ascending."""
    grouped: dict[int, list[MessageSent]] = defaultdict(list)
    for m in messages:
        grouped[m.round_number].append(m)
    return dict(sorted(grouped.items()))


def by_agent(messages: Iterable[MessageSent]) -> dict[str, list[MessageSent]]:
    """Group messages by sender, in order of first message."""
    grouped: dict[str, list[MessageSent]] = defaultdict(list)
    for m in messages:
        grouped[m.sender_id].append(m)
    return dict(grouped)


def per_message_mean(
    messages: list[MessageSent], measure: Callable[[str], float | None], unit: str
) -> Scored:
    """Score the mean over messages of ``measure(text)``, with per-round and per-agent means.

    Messages whose measure is None (an empty text) are left out. The headline is the mean over
    every measured message of the run (flattened), not a mean of round means.

    Raises:
        NotApplicable: no message had a value.
    """
    from glossogen.evaluation._contract import NotApplicable

    valued = [(m, v) for m in messages if (v := measure(m.text)) is not None]
    if not valued:
        raise NotApplicable("no message with text on the primary channels")
    rounds: dict[int, list[float]] = defaultdict(list)
    agents: dict[str, list[float]] = defaultdict(list)
    for m, v in valued:
        rounds[m.round_number].append(v)
        agents[m.sender_id].append(v)
    score = mean(v for _, v in valued)
    return Scored(
        score=score,
        summary=f"{score:.4f} {unit} on average over {plural(len(valued), 'message')}",
        rounds=len(rounds),
        per_round=[
            RoundObservation(round_number=r, value=mean(vs), note=plural(len(vs), "message"))
            for r, vs in sorted(rounds.items())
        ],
        per_agent=[
            AgentObservation(agent_id=a, value=mean(vs), note=plural(len(vs), "message"))
            for a, vs in agents.items()
        ],
    )
