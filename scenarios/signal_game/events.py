"""Events of signal_game: the round's roles, each target revealed, each choice made."""

from __future__ import annotations

from typing import Literal

from glossogen.eventlog import Event


class SignalGameRolesAssigned(Event):
    """Who sends and who receives this round."""

    event_type: Literal["signal_game_roles_assigned"] = "signal_game_roles_assigned"
    sender_id: str
    receiver_id: str


class SignalGameTargetRevealed(Event):
    """A target was shown: its attributes to the sender, the labelled candidates to the receiver.

    Attributes:
        target: 1-based number of the target in the round.
        attributes: The target, attribute name -> value.
        candidates: The receiver's candidates in its order: ``label`` and ``attributes``.
        answer: The label the target is shown under.
    """

    event_type: Literal["signal_game_target_revealed"] = "signal_game_target_revealed"
    target: int
    attributes: dict[str, str]
    candidates: list[dict[str, object]]
    answer: str


class SignalGameChoiceMade(Event):
    """The receiver chose for one target.

    Attributes:
        target: 1-based number of the target in the round.
        chosen: The label chosen.
        correct: True when it is the target's label.
        chars_used: Characters of the sender's message for this target.
        message: The sender's message for this target, as composed.
        attributes: The target, attribute name -> value.
    """

    event_type: Literal["signal_game_choice_made"] = "signal_game_choice_made"
    target: int
    chosen: str
    correct: bool
    chars_used: int
    message: str
    attributes: dict[str, str]
