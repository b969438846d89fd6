"""Where a run is: its round and phase, owned by the round loop and read by its collaborators."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["setup", "main", "postmortem"]


@dataclass
class Position:
    """The round being played (0 before round 1) and its phase.

    The round loop (:class:`~glossogen.engine.RunEngine`) moves it; the channels, the seats and
    every event's envelope read it.
    """

    round_number: int = 0
    phase: Phase = "setup"
