"""Our overhead per model call against a stub provider over real HTTP (issue 3).

Plays the same 3-round scripted-by-stub prisoners' dilemma against the Anthropic-format stub
server (a separate process on 127.0.0.1, so its CPU is not ours) with 0 ms and 200 ms of stub
latency, and measures, per model call:
- the CPU time of this process (engine + pydantic-ai + HTTP client);
- the same for a bare pydantic-ai ``Agent`` making the same kind of calls (the baseline);
- their difference: our own time per call (target: under 5 ms), and the ratio.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/provider_overhead.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVE = """
import sys, time
sys.path.insert(0, {root!r})
from tests.fixtures.model_stubs import StubModelServer
from tests.providers.test_wire_formats import pd_player
server = StubModelServer(latency={latency}).start()
server.responder = pd_player
print(server.anthropic_base_url, flush=True)
while True:
    time.sleep(3600)
"""


def start_stub(latency: float) -> tuple[subprocess.Popen[str], str]:
    """Start the stub server in its own process; return it and its Anthropic base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE.format(root=str(ROOT), latency=latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def play(runs_dir: str) -> int:
    """Play the run through the library (no Prefect); return the number of model calls."""
    from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend

    plan = plan_run(
        RunRequest(
            scenario="prisoners_dilemma",
            model="claude-sonnet-4-6",
            provider="anthropic",
            runs_dir=runs_dir,
            config="knobs_default",
            overrides=["round_count=3", "idle_floor_seconds=0.01", "postmortem_enabled=false"],
        )
    )
    claimed = claim_run(plan, runs_dir)
    session = open_session(plan, claimed)
    for n in range(1, 4):
        await session.play_round(n)
    session.finish(price_spend(claimed), "completed")
    return sum(1 for r in session.engine.runners.values() for _ in range(r.turns))


async def bare_calls(n: int) -> None:
    """Make ``n`` model requests with a bare pydantic-ai agent (two tool calls, then text)."""
    from pydantic_ai import Agent

    from glossogen.models import build_model

    agent = Agent(build_model("anthropic", "claude-sonnet-4-6"), instructions="You are a player.")

    @agent.tool_plain
    def send_message(channel_id: str, text: str) -> dict[str, str]:
        """Send a message."""
        return {"status": "sent"}

    @agent.tool_plain
    def lock_in(move: str) -> dict[str, str]:
        """Lock in a move."""
        return {"status": "locked"}

    done = 0
    while done < n:
        # The stub's player reads its phase from this briefing's wording: it talks, locks in,
        # then answers in text, so each run is three requests.
        await agent.run(
            "Round 1 begins. Talk on 'table', then lock in a move.",
            model_settings={"max_tokens": 16384, "max_retries": 0},
        )
        done += 3


def measure(latency: float) -> tuple[int, float, float, float]:
    """Return (calls, our CPU ms/call, bare pydantic-ai CPU ms/call, wall ms/call)."""
    proc, url = start_stub(latency)
    try:
        os.environ["ANTHROPIC_BASE_URL"] = url
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench")
        runs_dir = tempfile.mkdtemp(prefix="glossogen-bench-")
        asyncio.run(play(runs_dir))  # warm-up: imports, schemas, connections
        c0, w0 = time.process_time(), time.perf_counter()
        calls = asyncio.run(play(runs_dir))
        ours, wall = time.process_time() - c0, time.perf_counter() - w0
        asyncio.run(bare_calls(4))
        c0 = time.process_time()
        asyncio.run(bare_calls(calls))
        bare = time.process_time() - c0
    finally:
        proc.kill()
    return calls, 1000 * ours / calls, 1000 * bare / calls, 1000 * wall / calls


def main() -> None:
    """Print the figures for 0 ms and 200 ms of stub latency."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help
    for latency in (0.0, 0.2):
        calls, ours, bare, wall = measure(latency)
        print(
            f"stub latency {1000 * latency:.0f} ms: {calls} model calls; CPU per call: glossogen run "
            f"{ours:.2f} ms, bare pydantic-ai {bare:.2f} ms -> our own time {ours - bare:+.2f} ms "
            f"per call (target < 5 ms), ratio {ours / bare:.2f}x; wall per call {wall:.1f} ms"
        )


if __name__ == "__main__":
    main()
