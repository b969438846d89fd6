"""The Python interpreter the project runs on, against another CPython 3.11 on the same files.

README installs the project on Debian's ``/usr/bin/python3.11`` (``uv sync --python``): the
machines this project runs on also have pyenv's CPython 3.11 first on ``PATH``, built as a
shared library without profile-guided optimisation, and every process the test suite starts
(its workers, Prefect servers, flow runs, the CLI) ran slower on it. This bench runs the same
two workloads alternately on this environment's interpreter and on ``--against`` (default:
the ``python3.11`` first on ``PATH``, resolved to its real executable), both reading the same
installed packages and the same checkout (``PYTHONPATH``), so only the interpreter differs:

- ``import``: one process importing what ``glossogen run`` imports to play a run;
- ``run``: one process playing a ``--rounds``-round scripted run of ``--scenario`` through the
  engine (no Prefect server), its imports included.

It prints each side's median CPU seconds over ``--repeats`` paired runs and the ratio
(this interpreter / the other): below 1 is faster here.

    VIRTUAL_ENV= uv run --no-sync python bench/interpreter.py [--against PATH] [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.baselines import ROOT, process  # noqa: E402
from glossogen.scenario import scenario_names  # noqa: E402

IMPORT = "import flows.simulate, glossogen.cli.run"

RUN = """
import asyncio, sys
from bench.engine_overhead import _engine_run, _request

asyncio.run(_engine_run(_request(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
"""


def real_executable(python: str) -> str:
    """The executable ``python`` runs as (a pyenv shim or a venv link resolved)."""
    found = subprocess.run(
        [python, "-c", "import sys; print(sys.executable)"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    return os.path.realpath(found.stdout.strip())


def _on_path(name: str) -> list[str]:
    """Every executable called ``name`` in the folders of ``PATH``, in order."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return [str(p) for f in folders if f and os.access(p := Path(f) / name, os.X_OK)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--against",
        help="the other interpreter (default: the first python3.11 on PATH that is not this one)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="paired runs (default 5)")
    parser.add_argument("--scenario", default="veyru", help="the run's scenario (default veyru)")
    parser.add_argument("--rounds", type=int, default=4, help="the run's rounds (default 4)")
    args = parser.parse_args()
    if args.repeats < 1 or args.rounds < 1:
        parser.error(f"--repeats and --rounds must be at least 1: {args.repeats}, {args.rounds}")
    if args.scenario not in (names := scenario_names()):
        parser.error(f"--scenario {args.scenario!r}: no such scenario ({', '.join(names)})")
    # The venv's base interpreter (CPython's attribute; typeshed does not list it).
    here = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    if args.against is None:
        found = [real_executable(p) for p in _on_path("python3.11")]
        others = [p for p in found if p != here]
        if not others:
            parser.error(f"no python3.11 on PATH but this one ({here}): name one with --against")
        other = others[0]
    elif not shutil.which(args.against):
        parser.error(f"--against {args.against!r}: no such interpreter")
    else:
        other = real_executable(args.against)
    if other == here:
        parser.error(f"--against {args.against} is this interpreter ({here}): name another")
    # Both read the same installed packages and the same checkout: only the interpreter differs.
    env = {"PYTHONPATH": os.pathsep.join([sysconfig.get_paths()["purelib"], str(ROOT)])}
    sides = {"here": sys.executable, "other": other}
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as runs_dir, tempfile.TemporaryDirectory() as home:
        env["PREFECT_HOME"] = home
        workloads = {
            "import": ["-c", IMPORT],
            "run": ["-c", RUN, runs_dir, args.scenario, str(args.rounds)],
        }
        for python in sides.values():  # one warm-up each: bytecode and the page cache
            process([python, "-c", IMPORT], env)
        for _ in range(args.repeats):
            for name, argv in workloads.items():
                for side, python in sides.items():
                    _, seconds, _ = process([python, *argv], env)
                    cpu.setdefault((name, side), []).append(seconds)
    print(f"this interpreter: {here} (Python {sys.version.split()[0]})")
    print(f"against:          {other}")
    for name in ("import", "run"):
        mine = statistics.median(cpu[(name, "here")])
        theirs = statistics.median(cpu[(name, "other")])
        print(
            f"{name:7} median CPU over {args.repeats}: {mine:.2f} s here, {theirs:.2f} s against;"
            f" here/against {mine / theirs:.2f}"
        )


if __name__ == "__main__":
    main()
