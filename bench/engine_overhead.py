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
different grain). When ``GLOSSOGEN_ORIGINAL`` names the original platform's executable (one line
says the comparison was skipped otherwise): our ``run`` process and the original's, the same
scenario and rounds over one stub Anthropic server (it has no scripted provider), every seat
passing, alternately ``--original-repeats`` times: median CPU seconds and their ratio.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/engine_overhead.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


STUB = """
import re
import sys
sys.path.insert(0, sys.argv[1])
from tests.fixtures.model_stubs import StubModelServer, StubReply

DONE = re.compile(r'"type":\\s*"done"')


def passer(request):
    # Every seat passes on whatever it is told. The original's seats hear of news only by
    # calling read_notifications (it blocks until there is some) and stop once it answers
    # "done"; ours are given the news as their turn's prompt and end the turn with text.
    if "read_notifications" in request.tool_names:
        if DONE.search(str(request.messages[-1:])):
            return StubReply(text="Done.")
        return StubReply(tool_calls=[("read_notifications", {})])
    return StubReply(text="Done.")


server = StubModelServer().start()
server.responder = passer
print(server.anthropic_base_url, flush=True)
for _ in sys.stdin:  # each line asks how many model requests were answered so far
    print(len(server.served), flush=True)
"""
"""A stub Anthropic server (tests/fixtures/model_stubs.py), its own process, whose seats pass."""

STUB_MODEL = "claude-haiku-4-5"


def _original_knobs(exe: str, scenario: str, rounds: int, folder: Path) -> Path:
    """Write the original's ``knobs_default`` preset of ``scenario`` with ``round_count=rounds``.

    The original takes no knob overrides on its command line, only a preset name or a JSON
    file; the preset is read from the virtual environment its executable is in.

    Raises:
        SystemExit: the preset is not where its package keeps it (the path is shown).
    """
    site = Path(exe).resolve().parent.parent / "lib"
    presets = sorted(
        site.glob(f"python3*/site-packages/glossogen/scenarios/{scenario}/knobs_default.json")
    )
    if not presets:
        raise SystemExit(
            f"no knobs_default.json of {scenario!r} under {site}/python3*/site-packages/glossogen/scenarios (is {exe} the original's?)"
        )
    knobs = {**json.loads(presets[0].read_text()), "round_count": rounds}
    path = folder / f"original-{scenario}-knobs.json"
    path.write_text(json.dumps(knobs))
    return path


def compare_original(
    exe: str, runs_dir: str, scenario: str, rounds: int, repeats: int, api_url: str
) -> str:
    """Time our ``run`` process and the original's on the same stub, paired; return the line.

    The original has no scripted provider, so both play the scenario over real HTTP against one
    stub Anthropic server on 127.0.0.1 (a process of its own: its CPU is neither's), every seat
    passing on all it is told; ours with the Prefect server (``api_url``), as its runs go.
    """
    from bench.baselines import side_by_side

    stub = subprocess.Popen(
        [sys.executable, "-c", STUB, str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, cwd=ROOT,
    )  # fmt: skip
    assert stub.stdin is not None and stub.stdout is not None
    try:
        url = stub.stdout.readline().strip()
        if not url:
            raise SystemExit(f"the stub model server did not start (exit {stub.wait()})")

        def served() -> int:
            assert stub.stdin is not None and stub.stdout is not None
            stub.stdin.write("\n")
            stub.stdin.flush()
            return int(stub.stdout.readline())

        env = {**os.environ, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-bench-stub"}
        knobs = _original_knobs(exe, scenario, rounds, Path(runs_dir))
        common = [scenario, "--model", STUB_MODEL, "--provider", "anthropic"]
        # Each its own runs folder: both name a run folder by its start second.
        theirs_dir = f"{runs_dir}-original"
        calls: dict[str, int] = {}
        count = [served()]

        def count_calls(side: str) -> None:
            now = served()
            calls[side], count[0] = now - count[0], now

        paired = side_by_side(
            {"ours": ([sys.executable, "-m", "glossogen", "run", *common, "--runs-dir", runs_dir,
                       "--config", "knobs_default", f"round_count={rounds}"],
                      {**env, **QUIET_ENV, "PREFECT_API_URL": api_url}),
             "original": ([exe, "run", *common, "--runs-dir", theirs_dir, "--config",
                           str(knobs)], env)},
            repeats, after=count_calls,
        )  # fmt: skip
    finally:
        stub.kill()
        stub.wait()
    ours, theirs = paired["ours"], paired["original"]
    return (f"original platform, the same {rounds}-round {scenario} run over a stub Anthropic server "
          f"(every seat passes), medians of {repeats} paired runs: ours {ours[1]:.2f} CPU-s, wall "
          f"{ours[0]:.1f} s, {calls['ours']} model calls; original {theirs[1]:.2f} CPU-s, wall "
          f"{theirs[0]:.1f} s, {calls['original']} model calls (its seats poll for news by tool); "
          f"ours/original CPU {ours[1] / theirs[1]:.2f}x")  # fmt: skip


def main() -> None:
    """Measure and print the three figures and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="veyru")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--original-repeats", type=int, default=5, metavar="N",
        help="Paired runs of ours and the original over the stub (default 5; the medians are "
        "printed); only when GLOSSOGEN_ORIGINAL names the original's executable.",
    )  # fmt: skip
    args = parser.parse_args()
    if min(args.rounds, args.repeats, args.original_repeats) < 1:
        parser.error(f"--rounds, --repeats and --original-repeats must be at least 1, got "
                     f"{args.rounds}, {args.repeats}, {args.original_repeats}")  # fmt: skip
    # Before anything is spent: a GLOSSOGEN_ORIGINAL naming no executable stops here.
    exe = original()
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
        versus = (
            compare_original(
                exe, runs_dir, args.scenario, args.rounds, args.original_repeats, api_url
            )
            if exe is not None
            else None
        )
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
    if versus is not None:
        print(versus)


if __name__ == "__main__":
    main()
