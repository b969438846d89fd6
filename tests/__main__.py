"""The test command: ``python -m tests`` sets up what the suite needs, then runs both steps.

README's test command and ``.ci/run`` call this same module, so a newcomer's machine runs what
CI runs:

1. Debian's ``chromium`` for the browser tests (``tests/server/test_browser_ui.py``) is installed
   with ``apt-get`` when ``/usr/bin/chromium`` is missing (once, quietly; its log is printed
   only if the install fails).
2. Unless ``PREFECT_API_URL`` names a server, one Prefect server per pytest-xdist worker of the
   first step is started, each with a throwaway home and a port the OS hands it when it binds
   (:func:`deployments.local_server.local_prefect_server`), and listed in the test-only
   ``GLOSSOGEN_TEST_PREFECT_API_URLS`` (worker ``gwN`` takes the Nth: ``tests/conftest.py``).
3. The first step runs every test but ``tests/orchestration`` on ``WORKERS`` workers; the second,
   at the same time, runs ``tests/orchestration`` in one process (its package fixtures start a
   Prefect server, deploy ``prefect.yaml`` and start real process workers; it has a Prefect
   server of its own for its session fixtures, and its output is printed when both have
   ended). Both steps always run; the command exits with the first step's code when it failed,
   else the second's.

``--coverage`` runs both steps under line and branch coverage (``[tool.coverage]`` in
``pyproject.toml``, subprocesses included); each step keeps its data in a folder of its own
and the two are combined into ``.coverage`` and reported as one figure at the end. Arguments
after ``--`` go to both pytest runs.

This is a plain script (argparse, subprocess) rather than a typer command of the product: it
runs the product's tests and must not import the product before pytest does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKERS = 2
"""pytest-xdist workers of the first step (the machines this project runs on have 2 cores)."""
CHROMIUM = Path("/usr/bin/chromium")


def _say(text: str) -> None:
    print(f"tests: {text}", flush=True)


def ensure_chromium() -> None:
    """Install Debian's chromium with apt-get when it is missing; exit 70 if that fails."""
    if os.access(CHROMIUM, os.X_OK):
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        sys.exit(
            f"tests: error: {CHROMIUM} is missing and only root can install it here: "
            "run `apt-get install -y chromium` as root, then this command again"
        )
    _say(f"{CHROMIUM} is missing: installing Debian's chromium for the browser tests (once)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    update = subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, text=True)
    install = subprocess.run(
        ["apt-get", "install", "-y", "-q", "chromium"], env=env, capture_output=True, text=True
    )
    if install.returncode or not os.access(CHROMIUM, os.X_OK):
        print(update.stdout[-2000:], update.stderr[-2000:], install.stdout[-4000:],
              install.stderr[-4000:], sep="\n", file=sys.stderr)  # fmt: skip
        sys.exit(f"tests: error: apt-get install chromium failed (exit {install.returncode})")


@contextmanager
def prefect_servers(count: int) -> Iterator[list[str]]:
    """Start ``count`` Prefect servers at once (each takes 10-30 s to start); yield their URLs."""
    from concurrent.futures import ThreadPoolExecutor

    from deployments.local_server import local_prefect_server

    with ExitStack() as stack, ThreadPoolExecutor(count) as pool:
        servers = [local_prefect_server() for _ in range(count)]
        started = list(pool.map(lambda server: server.__enter__(), servers))
        for server in servers:
            stack.push(server.__exit__)
        yield started


def _pytest_command(args: list[str]) -> list[str]:
    _say(" ".join(["pytest", *args]))
    return [sys.executable, "-m", "pytest", *args]


def _coverage(step: str, scratch: Path, enabled: bool) -> tuple[list[str], dict[str, str]]:
    """pytest-cov's arguments and the ``COVERAGE_FILE`` of one step (a folder of its own: the
    two steps run at once, and each combines the data files its processes wrote beside it)."""
    if not enabled:
        return [], {}
    folder = scratch / step
    folder.mkdir()
    return ["--cov", "--cov-branch", "--cov-report="], {"COVERAGE_FILE": str(folder / ".coverage")}


def main(argv: list[str] | None = None) -> int:
    """Run the suite as the module docstring says; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m tests", description=__doc__.split("\n")[0])
    parser.add_argument("--coverage", action="store_true", help="line and branch coverage")
    parser.add_argument("--durations", type=int, default=0, help="list the N slowest tests")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to both pytest runs")
    options = parser.parse_args(argv)
    ensure_chromium()
    env = {
        **os.environ,
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # Two test workers share the two cores: llama.cpp's decode threads would spin against
        # the other worker (measured: tests/local 84 s with 2 threads, 65 s with 1, same texts).
        "GLOSSOGEN_LOCAL_THREADS": os.environ.get("GLOSSOGEN_LOCAL_THREADS", "1"),
    }
    # The tests' own Prefect settings and database, not the user's ~/.prefect.
    env.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="glossogen-tests-prefect-"))
    scratch = Path(tempfile.mkdtemp(prefix="glossogen-tests-"))
    durations = [f"--durations={options.durations}"] if options.durations else []
    first_cov, first_env = _coverage("first", scratch, options.coverage)
    second_cov, second_env = _coverage("second", scratch, options.coverage)
    first_env, second_env = {**env, **first_env}, {**env, **second_env}
    with ExitStack() as stack:
        if not env.get("PREFECT_API_URL"):
            # Run ids are unix seconds and flow runs are named after them: each session reads
            # flow runs and artifacts of a server no other session writes to.
            _say(f"starting {WORKERS + 1} Prefect servers on 127.0.0.1 (ports from the OS)")
            *urls, second_url = stack.enter_context(prefect_servers(WORKERS + 1))
            first_env["GLOSSOGEN_TEST_PREFECT_API_URLS"] = " ".join(urls)
            first_env["PREFECT_API_URL"] = urls[0]
            second_env["PREFECT_API_URL"] = second_url
        started = time.monotonic()
        # The second step waits on real process workers (they poll every second, and each flow
        # run cold-starts a process) more than it computes: it plays beside the first.
        second_log = scratch / "second-step.log"
        with open(second_log, "wb") as log:
            second_step = subprocess.Popen(
                _pytest_command(["tests/orchestration", *durations, *second_cov,
                                 *options.pytest_args]),
                cwd=REPO, env=second_env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        stack.callback(lambda: second_step.poll() is None and second_step.kill())
        first = subprocess.run(
            _pytest_command(["-n", str(WORKERS), "--dist", "loadgroup",
                             "--ignore=tests/orchestration", *durations, *first_cov,
                             *options.pytest_args]),
            cwd=REPO, env=first_env,
        ).returncode  # fmt: skip
        _say(f"first step: exit {first}, {time.monotonic() - started:.0f} s wall")
        second = second_step.wait()
        _say("second step (tests/orchestration, played beside the first):")
        sys.stdout.flush()
        sys.stdout.buffer.write(second_log.read_bytes())
        _say(f"second step: exit {second}; both steps: {time.monotonic() - started:.0f} s wall")
    if options.coverage:
        _report_coverage(scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    return first or second


def _report_coverage(scratch: Path) -> None:
    """Combine both steps' data into ``.coverage`` and print the whole figure."""
    data = str(REPO / ".coverage")
    coverage = [sys.executable, "-m", "coverage"]
    subprocess.run([*coverage, "combine", f"--data-file={data}", "-q",
                    str(scratch / "first"), str(scratch / "second")], cwd=REPO, check=True)  # fmt: skip
    subprocess.run([*coverage, "report", f"--data-file={data}", "--skip-covered"], cwd=REPO,
                   check=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
