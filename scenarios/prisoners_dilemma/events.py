"""Events of the prisoners' dilemma scenario."""

from __future__ import annotations

from typing import Literal

from glossogen.eventlog import Event


class MoveLocked(Event):
    """A player locked in its move for the round."""

    event_type: Literal["prisoners_dilemma_move_locked"] = "prisoners_dilemma_move_locked"
    agent_id: str
    move: Literal["cooperate", "defect"]


class RoundScored(Event):
    """The round's moves (a missing move counts as defect) and each player's payoff (points).

    ``payoffs`` is empty when a move is missing because the turn cap (``max_agent_turns``) cut
    its seat off: the round is void (``turn_limit``) and nobody is paid for a move that was
    only the cap.
    """

    event_type: Literal["prisoners_dilemma_round_scored"] = "prisoners_dilemma_round_scored"
    moves: dict[str, str]
    missing: list[str]
    payoffs: dict[str, int]
