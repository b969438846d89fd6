"""Which attempt of a round counts: one cut off by a crash is played again after ``run_resumed``.

What the cut-off attempt logged after the last ``round_completed`` is superseded and does not
count (with ``postmortem_only`` its verdict stands and only what followed it is superseded):
:func:`split_attempts`, the first rule of ``RunView``'s fold.
"""

from __future__ import annotations

from glossogen.eventlog._events import (
    Event,
    RoundCompleted,
    RoundResultRecorded,
    RunResumed,
    SimulationEnded,
)
from glossogen.eventlog._status import RESUMABLE


def split_attempts(events: list[Event]) -> tuple[list[Event], list[Event], bool]:
    """Split a log into (events that count up to its last boundary, the tail after it, ended).

    The tail is what was logged after the last ``round_completed`` (or resume) and before
    anything that closed it: the round in progress, or the one a crash cut off. ``ended`` is
    True when a ``simulation_ended`` finished the run (``completed`` or ``incomplete``).
    """
    kept: list[Event] = []
    pending: list[Event] = []
    ended = False
    # Every event class is final, so ``type(event) is C`` is ``isinstance(event, C)``, at a
    # fraction of its cost (pydantic's model class is an ABC: a miss walks its checks).
    for event in events:
        if type(event) is RunResumed:
            if event.postmortem_only:
                last = max(
                    (i for i, e in enumerate(pending) if isinstance(e, RoundResultRecorded)),
                    default=-1,
                )
                kept.extend(pending[: last + 1])
            kept.append(event)
            pending = []
        elif type(event) is RoundCompleted:
            kept.extend(pending)
            kept.append(event)
            pending = []
        elif type(event) is SimulationEnded:
            if event.status in RESUMABLE:
                pending.append(event)  # a crash or interrupt: the run may go on from its last round
            else:
                ended = True
                kept.extend(pending)
                kept.append(event)
                pending = []
        elif event.phase == "setup" and not pending:
            kept.append(event)
        else:
            pending.append(event)
    return kept, pending, ended


__all__ = ["split_attempts"]
