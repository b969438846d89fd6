"""Engine and flow overhead of one scripted run (default: 5-round veyru).

Prints, for the same run:
1. the engine in-process (library calls, no Prefect): events, events/s, CPU ms per event;
2. the same run inside the Prefect ``simulate`` flow against a running local Prefect server
   (started here unless PREFECT_API_URL is set): CPU and wall seconds, and the difference to
   (1) per run and per round;
3. the whole ``python -m glossogen run`` process of that run: its CPU seconds.

Targets (issue 2): engine under 1 ms CPU per event; whole process under 5 CPU-s; the flow adds
under 1 s per run and under 50 ms per round. Every ratio is against a baseline measured in the
same run (``bench/baselines.py``): per model call, a bare pydantic-ai ``Agent.run`` with a
``FunctionModel`` (the limit of any engine on pydantic-ai; per event would compare logs of
different grain); and the original platform's ``run`` with the same arguments when
``GLOSSOGEN_ORIGINAL`` names it (skipped with one line otherwise).
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/engine_overhead.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.baselines import bare_agent_runs, original  # noqa: E402
from deployments.local_server import QUIET_ENV, local_prefect_server  # noqa: E402
from glossogen.launch import (  # noqa: E402
    RunRequest,
    claim_run,
    open_session,
    plan_run,
    price_spend,
)


def _request(runs_dir: str, scenario: str, rounds: int) -> RunRequest:
    return RunRequest(
        scenario=scenario,
        model="scripted",
        provider="scripted",
        runs_dir=runs_dir,
        config="knobs_default",
        overrides=[f"round_count={rounds}"],
    )


CALLS: list[int] = []
"""Model calls (``llm_response_received``) of the last in-process run."""


async def _engine_run(request: RunRequest) -> int:
    from glossogen.eventlog import LlmResponseReceived, RunView

    plan = plan_run(request)
    claimed = claim_run(plan, request.runs_dir)
    session = open_session(plan, claimed)
    for n in range(1, plan.knobs.round_count + 1):
        await session.play_round(n)
    session.finish(price_spend(claimed), "completed")
    view = RunView.load(claimed.log_url)
    CALLS[:] = [sum(1 for e in view.events if isinstance(e, LlmResponseReceived))]
    return session.writer.count


def measure_engine(
    runs_dir: str, scenario: str, rounds: int, repeats: int
) -> tuple[int, float, float]:
    """Return (events, median CPU s, median wall s) of in-process runs after one warm-up."""
    asyncio.run(_engine_run(_request(runs_dir, scenario, rounds)))
    cpu, wall, events = [], [], 0
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        events = asyncio.run(_engine_run(_request(runs_dir, scenario, rounds)))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return events, statistics.median(cpu), statistics.median(wall)


def measure_flow(runs_dir: str, scenario: str, rounds: int, repeats: int) -> tuple[float, float]:
    """Return (median CPU s, median wall s) of the same run inside the simulate flow."""
    from flows.simulate import simulate

    asyncio.run(simulate(_request(runs_dir, scenario, rounds)))
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        asyncio.run(simulate(_request(runs_dir, scenario, rounds)))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def measure_process(runs_dir: str, scenario: str, rounds: int) -> tuple[float, float]:
    """Return (CPU s, wall s) of one whole ``python -m glossogen run`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "glossogen",
            "run",
            scenario,
            "--model",
            "scripted",
            "--provider",
            "scripted",
            "--runs-dir",
            runs_dir,
            "--config",
            "knobs_default",
            f"round_count={rounds}",
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    """Measure and print the three figures and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="veyru")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs_dir = tempfile.mkdtemp(prefix="glossogen-bench-")
    events, e_cpu, e_wall = measure_engine(runs_dir, args.scenario, args.rounds, args.repeats)
    ms_per_event = 1000 * e_cpu / events
    print(
        f"engine in-process: {events} events, {events / e_cpu:,.0f} events/CPU-s, "
        f"{ms_per_event:.3f} CPU ms/event (target < 1), wall {e_wall:.3f} s"
    )
    calls = CALLS[0] or 1
    bare = bare_agent_runs(calls)
    per_call = e_cpu / calls
    print(
        f"  per model call: {1000 * per_call:.2f} CPU ms ({calls} calls); a bare pydantic-ai "
        f"Agent.run (FunctionModel): {1000 * bare:.2f} CPU ms: ratio {per_call / bare:.2f}x"
    )
    with ExitStack() as stack:
        api_url = os.environ.get("PREFECT_API_URL") or stack.enter_context(local_prefect_server())
        os.environ.update({**QUIET_ENV, "PREFECT_API_URL": api_url})
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
        f_cpu, f_wall = measure_flow(runs_dir, args.scenario, args.rounds, args.repeats)
        # The same at twice the rounds separates the per-round cost from the per-run cost.
        _, e2_cpu, e2_wall = measure_engine(runs_dir, args.scenario, 2 * args.rounds, args.repeats)
        f2_cpu, f2_wall = measure_flow(runs_dir, args.scenario, 2 * args.rounds, args.repeats)
        p_cpu, p_wall = measure_process(runs_dir, args.scenario, args.rounds)
    d_cpu, d_wall = f_cpu - e_cpu, f_wall - e_wall
    round_cpu = ((f2_cpu - e2_cpu) - d_cpu) / args.rounds
    round_wall = ((f2_wall - e2_wall) - d_wall) / args.rounds
    print(
        f"inside the flow (server {api_url}): CPU {f_cpu:.3f} s, wall {f_wall:.3f} s "
        f"(ratio to the engine: wall {f_wall / e_wall:.2f}x)"
    )
    print(
        f"  flow overhead per run of {args.rounds} rounds: CPU {d_cpu:+.3f} s, wall {d_wall:+.3f} s (target < 1 s)"
    )
    print(
        f"  flow overhead per round (marginal, from {args.rounds} vs {2 * args.rounds} rounds): "
        f"CPU {1000 * round_cpu:+.1f} ms, wall {1000 * round_wall:+.1f} ms (target < 50 ms)"
    )
    print(
        f"  flow overhead per run, rounds excluded: wall {d_wall - args.rounds * round_wall:+.3f} s"
    )
    print(
        f"whole `python -m glossogen run` process: {p_cpu:.2f} CPU-s (target < 5), wall {p_wall:.2f} s"
    )
    theirs = original(["run", args.scenario, "--model", "scripted", "--provider", "scripted",
                       "--runs-dir", runs_dir, "--config", "knobs_default",
                       f"round_count={args.rounds}"])  # fmt: skip
    if theirs is not None:
        print(f"original platform, the same run: {theirs[1]:.2f} CPU-s; ours "
              f"{theirs[1] / p_cpu:.2f}x less CPU per run (not per event: its logs are finer)")  # fmt: skip


if __name__ == "__main__":
    main()
