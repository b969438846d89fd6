"""Every run folder a process writes is locked, on both back ends: what reconcile and the sweep
read of a live writer (the folder's lock) is true on S3 as it is locally.

A process appends to a run's log only inside a session (``open_session``), which takes the
folder's writer lock before its first event: a local ``flock``, or on S3 a create-only lease
(``If-None-Match``) it renews while it plays. A storage where the lock cannot be taken refuses
the run before it writes. So there is no unlockable run folder to fall back on (no flow-run
state, no file-age guess): the lock answers.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.reconcile import decide
from glossogen.derive import survey_unfinished_runs
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend
from glossogen.sweep._ledger import writer_alive
from tests.fixtures.played_runs import CLOCK_START


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_live_writer_holds_its_folder_and_lets_go_when_it_ends(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    runs_dir = f"{request.getfixturevalue('s3_bucket')}/runs" if where == "s3" else str(tmp_path)
    plan = plan_run(RunRequest(scenario="veyru", model="scripted", provider="scripted",
                               runs_dir=runs_dir, config="knobs_default",
                               overrides=["round_count=2"]))  # fmt: skip
    folder = claim_run(plan, runs_dir)
    session = open_session(plan, folder, clock_start=CLOCK_START)
    asyncio.run(session.play_round(1))
    modified = folder.log_modified()
    assert modified is not None
    an_hour_on = modified + 3600  # silent past any threshold: only the lock says it lives
    (live,) = survey_unfinished_runs(runs_dir, an_hour_on)
    assert (live.run_id, live.locked, live.ended_status) == (folder.run_id, True, None)
    assert writer_alive(folder.url) is True
    decision = decide(live, None, 600.0)
    assert (decision.action, decision.reason) == (
        "skip", "hung (no new event for 3600 s) but no flow run to cancel")  # fmt: skip
    session.finish(price_spend(folder), "interrupted", "interrupted")
    (ended,) = survey_unfinished_runs(runs_dir, an_hour_on)
    assert (ended.locked, ended.ended_status) == (False, "interrupted")
    assert writer_alive(folder.url) is False
