"""Two ``--resume`` of one S3 run started at once (real processes, real moto S3, real Prefect):
exactly one plays the rest of the run, the other exits 75 naming the holder.

Which one takes the lease is the race itself; that the player is still playing when the other
asks is not left to the load: the player holds its run still once resumed, until the other
exited (a player done before the other started would make the other's answer "already ended")."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
from collections import Counter

from glossogen.eventlog import RoundResultRecorded, RunResumed, SimulationEnded, read_events
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend
from tests.fixtures.played_runs import CLOCK_START
from tests.fixtures.polling import wait_until
from tests.fixtures.processes import reaped

ROUNDS = 12

_HELD_RESUME = """
import sys
from glossogen.cli import main
from glossogen.eventlog import RunResumed
from glossogen.launch import observing


class Hold:
    def event(self, event):
        if isinstance(event, RunResumed):
            sys.stdin.readline()  # the test's go, once the other resume has exited


with observing(Hold()):
    main(sys.argv[1:])
"""
"""``glossogen run`` (the CLI's ``main``) with a run observer that holds a resumed run still,
right after it logged ``run_resumed`` with the lease held, until a line arrives on stdin."""


async def _interrupted_after_two_rounds(runs_dir: str) -> str:
    request = RunRequest(scenario="veyru", model="scripted", provider="scripted",
                         runs_dir=runs_dir, config="knobs_default",
                         overrides=[f"round_count={ROUNDS}"])  # fmt: skip
    plan = plan_run(request)
    folder = claim_run(plan, runs_dir)
    session = open_session(plan, folder, clock_start=CLOCK_START)
    for n in (1, 2):
        await session.play_round(n)
    session.finish(price_spend(folder), "interrupted", "interrupted")
    return folder.url


def test_two_resumes_of_one_s3_run_exactly_one_plays(prefect_api: str, s3_bucket: str) -> None:
    run_dir = asyncio.run(_interrupted_after_two_rounds(f"{s3_bucket}/runs"))
    argv = [sys.executable, "-c", _HELD_RESUME, "run", "veyru", "--resume", run_dir]
    # Both at once, the case itself: either may take the lease; the other must be refused.
    first, second = (
        subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for _ in range(2)
    )
    with reaped(first), reaped(second):  # neither outlives a failed or timed-out wait
        # The one that took the lease holds its run still (run_resumed logged) until the other
        # has exited: the player cannot finish before the other asks, whatever the load.
        done = wait_until(
            lambda: [p for p in (first, second) if p.poll() is not None], "one resume to exit"
        )
        go = {p.pid: "" if p in done else "go\n" for p in (first, second)}
        outs = {p.pid: (p, *p.communicate(go[p.pid])) for p in (first, second)}
    codes = sorted(p.returncode for p, _, _ in outs.values())
    assert codes == [0, 75], [(p.returncode, err[-2000:]) for p, _, err in outs.values()]
    (player,) = [p for p, _, _ in outs.values() if p.returncode == 0]
    (refused,) = [(p, err) for p, _, err in outs.values() if p.returncode == 75]
    lines = refused[1].strip().splitlines()
    assert re.fullmatch(
        rf"glossogen: error: run {re.escape(run_dir)} is being written by another live process "
        rf"\(pid {player.pid} on {re.escape(socket.gethostname())}; its lease runs to "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)",
        lines[-1],
    ), lines
    events = read_events(f"{run_dir}/veyru.jsonl").events
    assert sum(isinstance(e, RunResumed) for e in events) == 1
    rounds = Counter(e.round_number for e in events if isinstance(e, RoundResultRecorded))
    assert rounds == {n: 1 for n in range(1, ROUNDS + 1)}  # each round recorded once
    endings = [e.status for e in events if isinstance(e, SimulationEnded)]
    assert endings == ["interrupted", "completed"]
    assert max(Counter(e.event_id for e in events).values()) == 1
