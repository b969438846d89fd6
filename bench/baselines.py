"""Baselines every bench measures in the same run, so each ratio it prints compares like with like.

- :func:`bare_parse`: the limit of any reader of event logs, a process that reads every log of
  a cohort and parses every line (orjson, else the standard library's json) and does nothing
  else; measured as a whole process so its start-up is in it, as in the command it is set
  against.
- :func:`bare_agent_runs`: the limit of any engine on pydantic-ai, ``Agent.run`` with a
  ``FunctionModel`` answering at once, CPU seconds per call, in this process.
- :func:`original` and :func:`side_by_side`: the original platform (GlossoGen 0.5), when
  ``GLOSSOGEN_ORIGINAL`` names its executable, run alternately with ours on the same input
  (paired runs, medians); it is not on the package index (bench/README.md says how to build
  it), so without it one line says the comparison was skipped.
- :func:`process`: wall seconds, CPU seconds and peak resident MiB of one child process.
- :func:`children_cpu`: CPU seconds of this process's live descendants (a Prefect server the
  bench started), read from ``/proc`` once they have settled.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ORIGINAL_ENV = "GLOSSOGEN_ORIGINAL"

_PARSE = """
import sys
from pathlib import Path
try:
    import orjson
    loads = orjson.loads
except ImportError:
    import json
    loads = json.loads
if sys.argv[2] == "json":
    import json
    loads = json.loads
lines = 0
for log in sorted(Path(sys.argv[1]).glob("*/*/*.jsonl")):
    if log.name.endswith("_report.jsonl") or log.parent.name.startswith("."):
        continue
    with open(log, "rb") as f:
        for line in f:
            if line.strip():
                loads(line)
                lines += 1
print(lines)
"""


def process(
    args: list[str], env: dict[str, str] | None = None, inherit: bool = True
) -> tuple[float, float, float]:
    """Run one child process to its end; return (wall s, CPU s, peak RSS MiB).

    ``env`` is added to this process's environment, or with ``inherit=False`` replaces it.

    Raises:
        SystemExit: the process exited non-zero (its stderr is shown).
    """
    # stderr goes to a file, not a pipe: os.wait4 reads nothing while it waits, so a child
    # that writes more than a pipe holds (64 KiB of log lines) would block forever.
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT,
            env={**(os.environ if inherit else {}), **(env or {})},
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            stderr.seek(0)
            err = stderr.read().decode(errors="replace")
            raise SystemExit(f"{' '.join(args[:6])} exited {code}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a process that exited while the table was read
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def children_cpu(settle_seconds: float = 1.0) -> float | None:
    """CPU seconds of this process's live descendants (e.g. the Prefect server it started).

    Read once they settle: a server finishes writing what a command sent it after the command
    has exited, so the figure is taken when a ``settle_seconds`` pause adds under 0.02 s (at
    most 60 s). None where ``/proc`` is not there to read.
    """
    if not Path("/proc/self/stat").exists():
        return None

    def total() -> float:
        cpu = 0.0
        for pid in _descendants(os.getpid()):
            try:
                cpu += _cpu_of(pid)
            except (OSError, IndexError):
                continue
        return cpu

    last, deadline = total(), time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(settle_seconds)
        now = total()
        if now - last < 0.02:
            return now
        last = now
    return last


def bare_parse(runs_dir: Path, parser: str = "orjson") -> tuple[float, float, float]:
    """Parse every line of every ``<scenario>/<ts>/*.jsonl`` under ``runs_dir`` in one process.

    ``parser``: ``orjson`` (the fastest parser installed; falls back to json) or ``json``.
    Sidecar JSONL files of evaluated runs are parsed too (a few lines each).
    """
    return process([sys.executable, "-c", _PARSE, str(runs_dir), parser])


def bare_agent_runs(calls: int) -> float:
    """Return the CPU seconds per ``Agent.run`` of a bare pydantic-ai agent (``FunctionModel``)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(answer), instructions="Answer briefly.")

    async def many() -> None:
        for _ in range(calls):
            await agent.run("go")

    asyncio.run(many())  # warm-up: imports and schema building are not the limit
    start = time.process_time()
    asyncio.run(many())
    return (time.process_time() - start) / calls


def original() -> str | None:
    """Return the original platform's executable when ``GLOSSOGEN_ORIGINAL`` names it, else None.

    Prints the one line saying the comparison was skipped when it is not set.

    Raises:
        SystemExit: ``GLOSSOGEN_ORIGINAL`` names no executable file (the value is shown).
    """
    exe = os.environ.get(ORIGINAL_ENV)
    if not exe:
        print(f"original platform: skipped ({ORIGINAL_ENV} does not name its executable)")
        return None
    if not os.access(exe, os.X_OK) or Path(exe).is_dir():
        raise SystemExit(f"{ORIGINAL_ENV}={exe!r} is not an executable file (bench/README.md)")
    return exe


Figures = tuple[float, float, float]
"""Wall seconds, CPU seconds, peak resident MiB of one whole process (:func:`process`)."""


def side_by_side(
    sides: dict[str, tuple[list[str], dict[str, str] | None]],
    repeats: int,
    reset: Callable[[], None] | None = None,
    after: Callable[[str], None] | None = None,
) -> dict[str, Figures]:
    """Run each side's process in turn, ``repeats`` rounds; return each side's median figures.

    ``sides`` maps a name to (argv, its whole environment, or None for this one's); every round
    runs every side once, in order, so load on a shared machine falls on all sides alike (paired
    runs). ``reset`` runs before each process, to give each the same input (a fresh copy, no
    cache a side wrote); ``after`` runs after each, given the side's name. Each figure is the median over the rounds of that side's wall seconds,
    CPU seconds (user + system of the process and every descendant it waited for, ``wait4``)
    and peak resident MiB, each taken on its own.

    Raises:
        SystemExit: a process exited non-zero (its stderr is shown).
    """
    got: dict[str, list[Figures]] = {name: [] for name in sides}
    for _ in range(repeats):
        for name, (args, env) in sides.items():
            if reset is not None:
                reset()
            got[name].append(process(args, env, inherit=env is None))
            if after is not None:
                after(name)
    return {
        name: (
            statistics.median(f[0] for f in figures),
            statistics.median(f[1] for f in figures),
            statistics.median(f[2] for f in figures),
        )
        for name, figures in got.items()
    }


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(
        description="Baselines the other benches import and measure in their own run; this "
        "module measures nothing alone: run one of the benches (bench/README.md)."
    ).parse_args()
