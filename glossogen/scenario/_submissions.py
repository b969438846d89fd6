"""One-shot submissions and team locks: who may still submit this round, and when a team is done.

A :class:`SubmissionBook` keeps one round's submissions of a one-shot tool (each seat submits at
most once). With ``all_must_submit`` every member of a team must submit before the team is done;
without it the first member's submission locks the team's answer and the others are refused.
A seat's claim is taken synchronously, before the tool awaits anything (a judge), so two calls
made in one model response cannot both pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from glossogen.scenario._contract import AgentSpec

T = TypeVar("T")


@dataclass
class SubmissionBook(Generic[T]):
    """One round's one-shot submissions, per seat and team.

    Attributes:
        teams: Team id -> the ids of its members, in seat order.
        all_must_submit: True: every member submits and the team is done when all have;
            False: the first submission is the team's and locks it.
        entries: Seat id -> what it submitted (``None`` while its submission is being ruled on).
    """

    teams: dict[str, tuple[str, ...]]
    all_must_submit: bool = True
    entries: dict[str, T | None] = field(default_factory=dict)

    @classmethod
    def of(cls, agents: Iterable[AgentSpec], *, all_must_submit: bool) -> SubmissionBook[T]:
        """Return an empty book for the teams of ``agents``."""
        teams: dict[str, list[str]] = {}
        for agent in agents:
            teams.setdefault(agent.team_id, []).append(agent.agent_id)
        return cls({t: tuple(m) for t, m in teams.items()}, all_must_submit)

    def team_of(self, agent_id: str) -> str:
        """Return the team of ``agent_id``.

        Raises:
            KeyError: ``agent_id`` is no seat of the book.
        """
        return next(t for t, members in self.teams.items() if agent_id in members)

    def refusal(self, agent_id: str) -> str | None:
        """Return why ``agent_id`` may not submit now, or None when it may."""
        if agent_id in self.entries:
            return "you already submitted this round; a submission is final"
        team = self.team_of(agent_id)
        if not self.all_must_submit:
            first = next((m for m in self.teams[team] if m in self.entries), None)
            if first is not None:
                return f"{first} already submitted your team's answer; it is locked"
        return None

    def claim(self, agent_id: str) -> str | None:
        """Take ``agent_id``'s one submission; return the refusal instead when it may not."""
        refused = self.refusal(agent_id)
        if refused is None:
            self.entries[agent_id] = None
        return refused

    def record(self, agent_id: str, value: T) -> None:
        """Store what ``agent_id`` (which holds a claim) submitted."""
        self.entries[agent_id] = value

    def submitted(self, team_id: str) -> list[tuple[str, T]]:
        """Return ``(seat, submission)`` of each member of ``team_id`` that submitted, in order."""
        found: list[tuple[str, T]] = []
        for member in self.teams[team_id]:
            value = self.entries.get(member)
            if value is not None:
                found.append((member, value))
        return found

    def team_done(self, team_id: str) -> bool:
        """True when ``team_id``'s answer is in: every member's, or the first one's."""
        done = len(self.submitted(team_id))
        return done == len(self.teams[team_id]) if self.all_must_submit else done >= 1

    @property
    def all_done(self) -> bool:
        """True when every team is done."""
        return all(self.team_done(t) for t in self.teams)
