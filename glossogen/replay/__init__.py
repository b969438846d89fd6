"""Replay: a run played again from its event log with no provider, and compared with it.

:func:`replay_run` (``glossogen replay``) plays a recorded run again into a new folder, every
seat and the judge answered from the run's tape (:attr:`glossogen.eventlog.RunView.tape`) by
the ``replay`` provider (:func:`replay_model`), and reports the first call whose request
differs from the recorded one, the first event that differs, and whether verdicts and spend
are the same.
"""

from glossogen.replay._comparison import Divergence, first_divergence, first_event_diff
from glossogen.replay._model import TapeExhausted, replay_model, response_of
from glossogen.replay._replay import (
    ForkPointCheck,
    ReplayReport,
    ReplayRequest,
    check_fork_point,
    replay_run,
    replayed_fork_point,
    replayed_rounds,
)

__all__ = [
    "Divergence",
    "ForkPointCheck",
    "ReplayReport",
    "ReplayRequest",
    "TapeExhausted",
    "check_fork_point",
    "first_divergence",
    "first_event_diff",
    "replay_model",
    "replay_run",
    "replayed_fork_point",
    "replayed_rounds",
    "response_of",
]
