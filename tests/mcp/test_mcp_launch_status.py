"""A derived or resumed run reads ``running`` from the moment its launch returns, before its
detached process has written anything, and a stop that lands while the launched process starts
stops it (through the SDK's client, on the server built in the test's process: the launched
processes are the point, not a server's)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fixtures.played_runs import after_round_1, play_run
from tests.fixtures.polling import wait_until
from tests.mcp.conftest import (
    call,
    gone,
    in_process_session,
    pid_of,
    refusal,
    wait_for_end,
)


def test_get_run_says_running_right_after_fork_replace_and_resume(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    source = play_run(str(runs), "veyru", rounds=2, now_unix=1_796_000_001).run_id
    interrupted = asyncio.run(after_round_1(str(runs), "interrupted"))

    async def go() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with in_process_session(runs, tmp_path) as s:
            got["before"] = await call(s, "get_run", run_id=interrupted)
            launches = {
                "forked": ("fork_run", {"source_run_id": source, "after_round": 1}),
                "replaced": (
                    "replace_agent",
                    {
                        "source_run_id": source,
                        "after_round": 1,
                        "replaced_agent_id": "field_observer",
                        "model": "other-script",
                        "provider": "scripted",
                    },
                ),  # fmt: skip
                "resumed": ("resume_run", {"run_id": interrupted}),
            }
            for name, (tool, arguments) in launches.items():
                got[name] = await call(s, tool, **arguments)
                got[f"{name}_now"] = await call(s, "get_run", run_id=got[name]["run_id"])
                if name == "resumed":  # a second resume while the first is starting
                    got["again"] = await refusal(s, "resume_run", run_id=interrupted)
            for name in launches:
                got[f"{name}_end"] = await wait_for_end(s, got[name]["run_id"])
        return got

    got = asyncio.run(go())
    assert got["before"]["status"] == "interrupted"
    for name in ("forked", "replaced", "resumed"):
        assert got[f"{name}_now"]["status"] == "running", name
        assert got[f"{name}_end"]["status"] == "completed", name
    pids = [pid_of(got[name]) for name in ("forked", "replaced", "resumed")]
    # Refused whether its process has taken the writer lock yet or not.
    assert got["again"] in (
        f"run {interrupted} was just launched (pid {pids[2]}): it is starting",
        f"run {runs / interrupted} is being written by another live process (pid {pids[2]})",
    )
    wait_until(lambda: all(gone(p) for p in pids if p is not None), "the launched runs exit")


def test_stop_run_right_after_resume_run_stops_the_launched_process(
    prefect_api: str, tmp_path: Path
) -> None:
    """Launched and not yet holding the lock, or holding it: the launched process is the one
    signalled, and the run is left interrupted, resumable. The stop comes while the process
    starts: under coverage its SIGINT lands in the ``.pth`` file's bare ``except:`` around
    ``import coverage`` and is lost (the run then ended completed, 2 rounds); the stop recorded
    in the folder is answered before the next round."""
    runs = tmp_path / "runs"
    interrupted = asyncio.run(after_round_1(str(runs), "interrupted"))

    async def go() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with in_process_session(runs, tmp_path) as s:  # the launched process is the point
            resumed = await call(s, "resume_run", run_id=interrupted)
            stopped = await call(s, "stop_run", run_id=interrupted)
            pid = pid_of(resumed)
            assert pid is not None
            wait_until(lambda: gone(pid), "the stopped process exits")
            return resumed, stopped, await call(s, "get_run", run_id=interrupted)

    resumed, stopped, after = asyncio.run(go())
    pid = pid_of(resumed)
    assert stopped["pid"] == pid
    assert stopped["message"] == (
        f"stopping {interrupted} (pid {pid}): it ends 'interrupted'; resume it with resume_run "
        f"(run_id '{interrupted}')"
    )  # the tool to call, not the CLI's command
    assert (after["status"], after["rounds_played"]) == ("interrupted", 1)
