"""Sweep throughput under ``llm:<provider>`` limits, and the gate's cost per model call (issue 7).

Starts a Prefect server of its own (or uses ``--api-url``), backed by a throwaway PostgreSQL
cluster when the machine has ``initdb`` (``--database postgres``, the default then) or by
SQLite; sets ``llm:openai`` and ``llm:anthropic`` to 4 calls at once, and points each provider
at its own stub model server (300 ms per answer; each stub in its own process on 127.0.0.1, so
its CPU is not ours). The 40 runs are prisoners' dilemmas: 2 models (one per provider) x
round_count 1|2 x 10 trials.

1. **Gate cost** (first, on a quiet server): 40 sequential model calls of one pydantic-ai
   agent against a 0 ms stub with the open gate, then with the Prefect gate, three times in
   turn; prints the best of each and the added milliseconds per call.
2. **Runs through the gate** (the baseline of what the limits allow): the 40 runs play at
   once in this process through the library (no flows), every model call taking a slot of
   ``llm:<provider>`` from the Prefect server.
3. **The sweep** (the product path): ``glossogen sweep`` plays the same 40 runs as in-process
   ``simulate`` subflows, all at once (``--concurrency 40``; 16 on SQLite, whose API answers
   503 to flow-run writes past that on 2 cores), Prefect flow and task overhead included.

For 2 and 3, from the stubs' own records (arrival and answer time of every request): per
provider the requests, the most in flight at once and the achieved concurrency
(request-seconds over the provider's busy window); and the throughput as a ratio to the ideal
measured in the same run: ideal window = max over providers of (request-seconds / 4), over the
actual window from the first request to the last answer (target for the sweep: >= 0.8).

Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/sweep_throughput.py [--database sqlite]
[--api-url URL] [--concurrency N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LATENCY_SECONDS = 0.3
LIMIT = 4
TRIALS = 10
ROUNDS = (1, 2)
MODELS = {"openai": "gpt-5.4", "anthropic": "claude-sonnet-4-6"}
KNOBS = ["idle_floor_seconds=0.05", "postmortem_enabled=false"]
GATE_CALLS = 40
GATE_REPEATS = 3
SWEEP_CONCURRENCY = {"postgres": 40, "sqlite": 16}
"""Sweep runs in flight by server database: all 40 on PostgreSQL; 16 on SQLite, which on 2
cores answers 503 to flow-run writes at 40 (runs then fail after the client's retries)."""
KEY = "sk-bench-0123456789"
SPEC = """\
scenario: prisoners_dilemma
config: knobs_default
runs_dir: ./runs
knobs:
  idle_floor_seconds: 0.05
  postmortem_enabled: false
grid:
  models: [{{model: gpt-5.4, provider: openai}}, {{model: claude-sonnet-4-6, provider: anthropic}}]
  round_count: [1, 2]
trials: {trials}
spend_cap_usd: 1000.0
"""
SERVE = """
import json, sys
sys.path.insert(0, {root!r})
from tests.fixtures.model_stubs import StubModelServer
from tests.providers.test_wire_formats import pd_player
server = StubModelServer(latency={latency}).start()
server.responder = pd_player
print(server.openai_base_url, server.anthropic_base_url, flush=True)
for line in sys.stdin:
    if line.strip() == "stats":
        print(json.dumps({{"spans": server.spans, "max": server.max_concurrent}}), flush=True)
    elif line.strip() == "plain":
        server.responder = None
        print("{{}}", flush=True)
    elif line.strip() == "reset":
        server.reset()
        server.responder = pd_player
        server.latency = {latency}
        print("{{}}", flush=True)
"""


class Stub:
    """A stub model server in its own process, asked for its records over stdin."""

    def __init__(self, latency: float) -> None:
        """Start it and read its two base URLs."""
        self.proc = subprocess.Popen(  # noqa: S603 (our own stub)
            [sys.executable, "-c", SERVE.format(root=str(ROOT), latency=latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.openai_url, self.anthropic_url = self.proc.stdout.readline().split()

    def ask(self, command: str) -> dict:
        """Send ``stats`` or ``reset``; return the JSON answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        """Stop the stub's process."""
        self.proc.kill()
        self.proc.wait()


async def set_limits() -> None:
    """Create (or reset) ``llm:openai`` and ``llm:anthropic`` at ``LIMIT`` calls, active."""
    from deployments.pools import LimitsFile, ProviderLimits, apply_limits

    limits = ProviderLimits(pool_concurrency=2, llm_concurrency=LIMIT)
    await apply_limits(LimitsFile(defaults=limits))


async def play_one(runs_dir: str, provider: str, rounds: int) -> str:
    """Play one run through the library (no flows); return its status."""
    from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend

    plan = plan_run(
        RunRequest(
            scenario="prisoners_dilemma",
            model=MODELS[provider],
            provider=provider,
            runs_dir=runs_dir,
            config="knobs_default",
            overrides=[*KNOBS, f"round_count={rounds}"],
        )
    )
    claimed = claim_run(plan, runs_dir)
    session = open_session(plan, claimed)
    for n in range(1, rounds + 1):
        await session.play_round(n)
    return session.finish(price_spend(claimed), "completed").status


async def play_all(runs_dir: str) -> list[str | BaseException]:
    """Play the 40 runs at once, every model call through the Prefect gate."""
    from glossogen.concurrency import install_gate
    from orchestration.gate import PrefectCallGate

    gate = PrefectCallGate()
    install_gate(gate)
    try:
        return await asyncio.gather(
            *(
                play_one(runs_dir, provider, rounds)
                for provider in MODELS
                for rounds in ROUNDS
                for _ in range(TRIALS)
            ),
            return_exceptions=True,
        )
    finally:
        # The slots kept for a next call go back now, as a run's end does: one whose timed
        # release had not started when this loop ended would stay held on the server until
        # its lease ran out (60 s), a slot fewer for the sweep that follows.
        await gate.release_idle()
        install_gate(None)


async def held_slots() -> dict[str, int]:
    """Slots of each ``llm:<provider>`` limit held on the server now."""
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return {
            p: (await client.read_global_concurrency_limit_by_name(f"llm:{p}")).active_slots
            for p in MODELS
        }


def play_sweep(api_url: str, stubs: dict[str, Stub], concurrency: int) -> float:
    """Run the sweep in a subprocess; return its wall time (seconds)."""
    folder = Path(tempfile.mkdtemp(prefix="glossogen-bench-sweep-"))
    (folder / "bench.yaml").write_text(SPEC.format(trials=TRIALS))
    env = {**os.environ, "PREFECT_API_URL": api_url, "OPENAI_BASE_URL": stubs["openai"].openai_url,
           "OPENAI_API_KEY": KEY, "ANTHROPIC_BASE_URL": stubs["anthropic"].anthropic_url,
           "ANTHROPIC_API_KEY": KEY, "PREFECT_LOGGING_LEVEL": "WARNING"}  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 (our own CLI)
        [
            sys.executable,
            "-m",
            "glossogen",
            "sweep",
            "bench.yaml",
            "--concurrency",
            str(concurrency),
        ],  # fmt: skip
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    census = [line for line in done.stdout.splitlines() if line.startswith("sweep bench:")]
    print(census[-1] if census else done.stderr[-4000:])
    if done.returncode not in (0, 1):  # 1: some runs failed; what ran is still measured
        raise SystemExit(f"sweep exited {done.returncode}")
    return time.monotonic() - started


def report(label: str, stubs: dict[str, Stub]) -> float:
    """Print per-provider concurrency and the throughput ratio; return the ratio."""
    first, last, ideal = float("inf"), 0.0, 0.0
    lines = []
    for provider, stub in stubs.items():
        stats = stub.ask("stats")
        spans = stats["spans"]
        start, end = min(s for s, _ in spans), max(e for _, e in spans)
        busy = sum(e - s for s, e in spans)
        first, last, ideal = min(first, start), max(last, end), max(ideal, busy / LIMIT)
        lines.append(
            f"  {provider:9s}: {len(spans)} requests, at most {stats['max']} in flight, "
            f"achieved concurrency {busy / (end - start):.2f} of {LIMIT} over {end - start:.1f} s"
        )
    ratio = ideal / (last - first)
    print(f"{label}:", *lines, sep="\n")
    print(
        f"  model-call window {last - first:.1f} s, ideal {ideal:.1f} s: "
        f"throughput ratio {ratio:.2f} (target >= 0.8)"
    )
    return ratio


async def time_calls(count: int) -> float:
    """Make ``count`` sequential model calls through ``build_model``; return seconds per call."""
    from pydantic_ai import Agent

    from glossogen.concurrency import current_gate
    from glossogen.models import build_model

    agent = Agent(build_model("openai", "gpt-5.4"), instructions="Answer.")
    await agent.run("warm up")
    started = time.perf_counter()
    for _ in range(count):
        await agent.run("hi")
    took = (time.perf_counter() - started) / count
    await current_gate().release_idle()  # the last slot goes back before this loop ends
    return took


def gate_cost(openai_url: str) -> tuple[float, float]:
    """Return seconds per call with the open gate and with the Prefect gate (best of repeats)."""
    from glossogen.concurrency import install_gate
    from orchestration.gate import PrefectCallGate

    saved = os.environ.get("OPENAI_BASE_URL", "")
    os.environ["OPENAI_BASE_URL"] = openai_url
    open_gate, gated = [], []
    try:
        for _ in range(GATE_REPEATS):  # interleaved, so drift on a shared machine hits both
            install_gate(None)
            open_gate.append(asyncio.run(time_calls(GATE_CALLS)))
            install_gate(PrefectCallGate())  # a gate's slots belong to one event loop
            gated.append(asyncio.run(time_calls(GATE_CALLS)))
    finally:
        install_gate(None)
        os.environ["OPENAI_BASE_URL"] = saved
    return min(open_gate), min(gated)


def main() -> None:
    """Run the measurements and print the figures."""
    from deployments.local_postgres import local_postgres, postgres_available

    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--api-url",
        default=None,
        help="Use this Prefect server instead of starting one (its llm:* limits are set to 4).",
    )
    parser.add_argument(
        "--database",
        choices=["postgres", "sqlite"],
        default="postgres" if postgres_available() else "sqlite",
        help="The database of the server this bench starts (postgres when initdb is on PATH).",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=0,
        help="Sweep runs in flight (0: 40 on postgres, 16 on sqlite).",
    )
    args = parser.parse_args()
    from deployments.local_server import QUIET_ENV, local_prefect_server

    os.environ.update(QUIET_ENV)
    concurrency = args.concurrency or SWEEP_CONCURRENCY[args.database]
    with ExitStack() as stack:
        if args.api_url:
            api_url, where = args.api_url, f"Prefect server {args.api_url}"
        else:
            url = stack.enter_context(local_postgres()) if args.database == "postgres" else None
            api_url = stack.enter_context(local_prefect_server(database_url=url))
            where = f"a Prefect server of its own on {args.database}"
        os.environ["PREFECT_API_URL"] = api_url  # before anything imports Prefect's settings
        stubs = {p: Stub(LATENCY_SECONDS) for p in MODELS}
        quick = Stub(0.0)
        for stub in (*stubs.values(), quick):
            stack.callback(stub.close)
        os.environ.update({"OPENAI_BASE_URL": stubs["openai"].openai_url, "OPENAI_API_KEY": KEY,
                           "ANTHROPIC_BASE_URL": stubs["anthropic"].anthropic_url,
                           "ANTHROPIC_API_KEY": KEY})  # fmt: skip
        if not os.environ.get("BENCH_NO_LIMITS"):
            asyncio.run(set_limits())
        print(f"40 runs, {LATENCY_SECONDS * 1000:.0f} ms per answer, llm:<provider> = {LIMIT} "
              f"({where})")  # fmt: skip
        quick.ask("plain")
        open_gate, gated = gate_cost(quick.openai_url)
        print(
            f"gate cost: {open_gate * 1000:.1f} ms per call open, {gated * 1000:.1f} ms with the "
            f"Prefect gate: {(gated - open_gate) * 1000:+.1f} ms per call "
            f"(ratio {gated / open_gate:.2f})"
        )
        started = time.monotonic()
        statuses = asyncio.run(play_all(tempfile.mkdtemp(prefix="glossogen-bench-runs-")))
        wall = time.monotonic() - started
        report(f"runs through the gate, no flows ({statuses.count('completed')}/40 completed, "
               f"{wall:.1f} s)", stubs)  # fmt: skip
        for stub in stubs.values():
            stub.ask("reset")
        if not os.environ.get("BENCH_NO_LIMITS"):
            held = asyncio.run(held_slots())
            print("slots held before the sweep:", ", ".join(f"{p} {n}" for p, n in held.items()))
        wall = play_sweep(api_url, stubs, concurrency)
        report(f"glossogen sweep --concurrency {concurrency} ({wall:.1f} s wall, process start "
               "and planning included)", stubs)  # fmt: skip


if __name__ == "__main__":
    main()
