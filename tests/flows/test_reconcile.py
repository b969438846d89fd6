"""What reconcile does with each unfinished run, given its folder and its latest flow run."""

from __future__ import annotations

from uuid import uuid4

import pytest
from prefect.client.schemas.objects import FlowRun, StateType

from flows.reconcile import CANCELLED_TAG, decide
from glossogen.derive import StaleRun

THRESHOLD = 600.0


def _run(silent: float, locked: bool = False, ended: str | None = None) -> StaleRun:
    return StaleRun("veyru/1", "/runs/veyru/1", "veyru", "m", "openai", silent, locked, ended, "e")


def _flow_run(state: StateType, *tags: str) -> FlowRun:
    return FlowRun(flow_id=uuid4(), name="veyru/1", state_type=state, tags=list(tags))


CASES = [
    # (id, run, flow run, action, reason, mark crashed)
    ("live", _run(5, locked=True), _flow_run(StateType.RUNNING), "skip", "live", False),
    ("hung", _run(900, locked=True), _flow_run(StateType.RUNNING), "cancel", "hung: no new event for 900 s while its process holds the lock", False),
    ("hung, already cancelled", _run(900, locked=True),
     _flow_run(StateType.RUNNING, CANCELLED_TAG), "skip", "hung (no new event for 900 s) but no flow run to cancel", False),
    ("hung, no flow run", _run(900, locked=True), None, "skip", "hung (no new event for 900 s) but no flow run to cancel", False),
    ("crashed, even if recent", _run(5), _flow_run(StateType.CRASHED), "resume",
     "its flow run crashed", False),
    ("running but its process is gone", _run(900), _flow_run(StateType.RUNNING), "resume",
     "its process is gone (no new event for 900 s)", True),
    ("running, not yet silent", _run(5), _flow_run(StateType.RUNNING), "skip", "not silent long enough (no new event for 5 s)", False),
    ("a resume is queued", _run(900), _flow_run(StateType.SCHEDULED), "skip",
     "its flow run is scheduled", False),
    ("stopped, no flow run", _run(900), None, "resume", "stopped without ending (no new event for 900 s)", False),
    ("stopped recently, no flow run", _run(5), None, "skip", "not silent long enough (no new event for 5 s)", False),
    ("cancelled by reconcile", _run(900, ended="interrupted"),
     _flow_run(StateType.CANCELLED, CANCELLED_TAG), "resume", "cancelled by reconcile as hung", False),
    ("interrupted by its user", _run(900, ended="interrupted"),
     _flow_run(StateType.CANCELLED), "skip", "interrupted by its user", False),
    ("ended in error", _run(900, ended="error"), _flow_run(StateType.FAILED), "skip",
     "ended error", False),
]  # fmt: skip


@pytest.mark.parametrize(("run", "flow_run", "action", "reason", "mark"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])  # fmt: skip
def test_reconcile_decides(
    run: StaleRun, flow_run: FlowRun | None, action: str, reason: str, mark: bool
) -> None:
    decision = decide(run, flow_run, THRESHOLD)
    assert (decision.action, decision.mark_crashed) == (action, mark)
    assert decision.reason == reason
