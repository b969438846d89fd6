"""Observers: who watches a run live in this process (the CLI's progress bar, tests).

An observer never changes a run; the event log stays the record. Observers registered with
:func:`observing` see every run started in this process while the block is open.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from glossogen.eventlog import Event


class RunObserver(Protocol):
    """Callbacks a live watcher may implement (all optional)."""

    def run_claimed(self, run_id: str, run_url: str, round_count: int) -> None:
        """The run folder was claimed."""

    def event(self, event: Event) -> None:
        """An event was appended to the log."""

    def run_queued(self, trial: str, deployment: str, flow_run_id: str, run_id: str) -> None:
        """A sweep's trial (``<cell>/<trial>``) was handed to a deployment's flow run.

        ``run_id`` names the run folder claimed for it (the run the worker plays).
        """

    def run_returned(self, trial: str, run_id: str, status: str) -> None:
        """A trial's flow run on a deployment ended: its run and ``simulation_ended.status``."""


_observers: list[Any] = []


@contextmanager
def observing(observer: Any) -> Iterator[None]:
    """Register ``observer`` for runs started in this process while the block is open."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


def notify(method: str, *args: Any) -> None:
    """Call ``method`` on every registered observer that has it."""
    for observer in _observers:
        callback = getattr(observer, method, None)
        if callback is not None:
            callback(*args)


def has_observers() -> bool:
    """True when someone is watching."""
    return bool(_observers)
