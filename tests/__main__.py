"""The test command: ``python -m tests`` sets up what the suite needs, then runs both steps.

README's test command and ``.ci/run`` call this same module, so a newcomer's machine runs what
CI runs:

1. Debian's ``chromium`` for the browser tests (``tests/server/test_browser_ui.py``) is installed
   with ``apt-get`` when ``/usr/bin/chromium`` is missing (once, quietly; its log is printed
   only if the install fails); so is Debian's ``postgresql`` when ``initdb``/``pg_ctl`` are
   missing (:func:`ensure_postgresql`: the second step's servers need a PostgreSQL cluster).
2. The project's own packages are compiled to bytecode, and pytest's assert-rewritten form of
   every test module written where pytest reads it (``__pycache__``, ignored by git;
   :mod:`tests._bytecode`): the machines this project runs on set ``PYTHONDONTWRITEBYTECODE=1``,
   so otherwise every process the tests start compiled the modules of ``glossogen`` it imports
   again, and every test worker rewrote every test module again. This runs on a thread beside
   the database migrations below, and ends before either step starts.
3. One Prefect database is migrated to head (:func:`migrated_database`, about 8 CPU-s): the
   first step's servers start on copies of it, and so do the tests' temporary servers that
   start on a migrated database (``fresh_prefect_home``), instead of one migration each and
   one per test worker. Unless ``PREFECT_API_URL`` names a server, one Prefect server per
   pytest-xdist worker of the
   first step is started, each with a throwaway home and a port the OS hands it when it binds
   (:func:`deployments.local_server.local_prefect_server`), and listed in the test-only
   ``GLOSSOGEN_TEST_PREFECT_API_URLS`` (worker ``gwN`` takes the Nth: ``tests/conftest.py``).
   The first step's flows play in its test processes, so these servers run without the
   services of deployments, workers, automations and the UI's events and task runs
   (:data:`deployments.local_server.PLAYING_ONLY_SERVICES`): those spent CPU the tests share.
   Before the second step, one throwaway PostgreSQL cluster is started and one Prefect database
   migrated to head there (:func:`second_template`); each of its workers' servers starts on a
   new database PostgreSQL copies from that one (``CREATE DATABASE ... TEMPLATE``), instead of
   a cluster of its own that the server migrated as it started (about 5 CPU-s of the server's
   and an ``initdb`` per worker).
4. The first step runs every test but ``tests/orchestration`` on ``FIRST_WORKERS`` workers
   (fewer when the paths given name fewer test files: :func:`tests._arguments.named_test_files`),
   file by file (``--dist loadfile``: a file's tests run on one worker, so its module
   fixtures, a played cohort, a stub, a server, are set up once; ``loadgroup`` was meant to do
   this with a group per file, but pytest 9.2 keeps a test's id apart from the ``_nodeid``
   pytest-xdist 3.8 appends the group to, so every test was sent alone, turn about to either
   worker, and most module fixtures were set up on both). Beside it, the second runs
   ``tests/orchestration`` on ``WORKERS`` workers, test by test (``--dist load``; each
   worker's package fixtures start a Prefect server of its own on PostgreSQL, deploy
   ``prefect.yaml`` there and start real process workers on it, so the two never share a
   server, a work pool or a limit; its tests have no module fixtures to set up twice); its
   output is kept and printed once the first step has ended, and under ``--coverage`` each
   step writes a data file of its own, combined after both. Both steps always run; the
   command exits with the first step's code when it failed, else the second's. Measured on a
   quiet 2-core machine of this kind (stop 51, same tree, no coverage): 625 s on 2 first-step
   workers (1,086 CPU-s: 163% CPU), 577 s on 3 (1,093 CPU-s: 182%).
   ``--apart`` runs the second step after the first (as before stop 51; its template
   database is made only then).

In every process the command starts, its own Prefect servers included, ``SSL_CERT_FILE`` names
one certificate that trusts no server, whatever the machine set it to: each of their HTTP
clients loaded a bundle of about 150 for plain HTTP to 127.0.0.1 (:mod:`tests._trust_store`).

``--coverage`` runs both steps under line and branch coverage (``[tool.coverage]`` in
``pyproject.toml``, subprocesses included; the second step appends to the first's data and
prints the whole figure). Options after ``--`` go to both pytest runs; a path after it (a
file, folder or test id) goes to the step whose tests it names, and a step that none of the
paths names is skipped, with its Prefect servers (:func:`route`). pytest reads those options
first, without the suite (:func:`tests._arguments.pytest_refusal`, about half a second): one it
refuses is refused in one line before anything starts.

This is a plain script (argparse, subprocess) rather than a typer command of the product: it
runs the product's tests and must not import the product before pytest does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import NoReturn

from tests._arguments import (
    COV_REFUSED,
    REPO,
    SECOND,
    TESTS,
    RefusedArgument,
    named_test_files,
    pytest_refusal,
    route,
)
from tests._trust_store import trust_no_server

Paths = list[str] | None
"""A step's paths (:func:`tests._arguments.route`): None runs all of its tests, [] none."""
WORKERS = 2
"""pytest-xdist workers of the second step (the machines this project runs on have 2 cores)."""
FIRST_WORKERS = 3
"""pytest-xdist workers of the first step: one more than the cores, because its tests wait on
real processes, servers and browsers for much of their wall time. Measured on a quiet 2-core
machine of this kind (stop 51, same tree, both steps together): 625 s on 2 workers, 163% CPU;
577 s on 3, 182%. Each worker has its own Prefect server, stub model servers and moto server."""
CHROMIUM = Path("/usr/bin/chromium")
MIGRATED_DB = "GLOSSOGEN_TEST_MIGRATED_PREFECT_DB"
"""Test-only: the database :func:`migrated_database` made (``tests/fixtures/prefect_server``)."""
POSTGRES_TEMPLATE = "GLOSSOGEN_TEST_PREFECT_POSTGRES_TEMPLATE"
"""Test-only: the second step's migrated PostgreSQL database (``tests/fixtures/prefect_server``)."""


def _say(text: str) -> None:
    print(f"tests: {text}", flush=True)


def ensure_chromium() -> None:
    """Install Debian's chromium with apt-get when it is missing; exit 70 if that fails."""
    if not os.access(CHROMIUM, os.X_OK):
        _apt_install("chromium", f"{CHROMIUM} is missing", "the browser tests",
                     lambda: os.access(CHROMIUM, os.X_OK))  # fmt: skip


def ensure_postgresql() -> None:
    """Install Debian's PostgreSQL server with apt-get when ``initdb``/``pg_ctl`` are missing.

    The second step's Prefect servers run on a throwaway PostgreSQL cluster
    (``tests/fixtures/prefect_server.orchestration_server``); without one they fall back to
    SQLite, which refuses a write whenever another committed since the request's read: on a
    loaded fresh machine without PostgreSQL (stop 43) the step failed four ways, a launch got
    503, a sweep found no worker online and played in-process, and two recovery tests never
    ended.
    """
    from deployments.local_postgres import postgres_available

    if not postgres_available():
        _apt_install("postgresql", "PostgreSQL's initdb and pg_ctl are missing",
                     "the orchestration tests' Prefect servers", postgres_available)  # fmt: skip


def _apt_install(package: str, missing: str, needed_by: str, present: Callable[[], bool]) -> None:
    """Install Debian's ``package`` (once, quietly; its log is printed only if that fails)."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        sys.exit(
            f"tests: error: {missing} and only root can install them here: "
            f"run `apt-get install -y {package}` as root, then this command again"
        )
    _say(f"{missing}: installing Debian's {package} for {needed_by} (once)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Two test commands started at once on a new machine both install: the second waits for
    # dpkg's lock (up to 10 minutes) instead of failing, then finds the package installed.
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    update = subprocess.run(
        ["apt-get", *wait, "update", "-q"], env=env, capture_output=True, text=True
    )
    install = subprocess.run(
        ["apt-get", *wait, "install", "-y", "-q", package],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if install.returncode or not present():
        print(update.stdout[-2000:], update.stderr[-2000:], install.stdout[-4000:],
              install.stderr[-4000:], sep="\n", file=sys.stderr)  # fmt: skip
        sys.exit(f"tests: error: apt-get install {package} failed (exit {install.returncode})")


def write_bytecode() -> None:
    """Write the project's bytecode and the test modules' rewritten bytecode
    (:mod:`tests._bytecode`)."""
    from tests._bytecode import compile_bytecode, rewrite_test_modules

    compile_bytecode()
    rewrite_test_modules()


@contextmanager
def migrated_database() -> Iterator[Path]:
    """Migrate one Prefect database to head for the whole command; yield its path, then remove it.

    The Prefect servers of the first step start on copies of it (:func:`prefect_servers`), and
    each test worker's temporary servers too (``tests/fixtures/prefect_server.MIGRATED_DB``):
    one migration instead of one per server and one per worker (each about 8 CPU-s).
    """
    from tests.fixtures.prefect_server import migrate_prefect_database

    # A TemporaryDirectory, not mkdtemp and a finally: its finalizer removes the folder even
    # when a Ctrl-C lands before the block is entered (u57b: an empty one was left in /tmp).
    with tempfile.TemporaryDirectory(
        prefix="glossogen-tests-migrated-", ignore_cleanup_errors=True
    ) as home:
        yield migrate_prefect_database(Path(home))


@contextmanager
def prefect_servers(count: int, database: Path) -> Iterator[list[str]]:
    """Start ``count`` Prefect servers at once, each on a copy of ``database``; yield their URLs."""
    from deployments.local_server import PLAYING_ONLY_SERVICES, local_prefect_server

    with ExitStack() as stack, ThreadPoolExecutor(count) as pool:
        copies = []
        for _ in range(count):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="glossogen-tests-prefect-db-", ignore_cleanup_errors=True
            )))  # fmt: skip
            copies.append(shutil.copy(database, folder / "prefect.db"))
        servers = [
            local_prefect_server(f"sqlite+aiosqlite:///{copy}", env=PLAYING_ONLY_SERVICES)
            for copy in copies
        ]
        started = list(pool.map(lambda server: server.__enter__(), servers))
        for server in servers:
            stack.push(server.__exit__)
        yield started


def second_template(stack: ExitStack, env: dict[str, str]) -> None:
    """Start the second step's PostgreSQL cluster with one Prefect database migrated to head, and
    name it in ``env`` (:data:`POSTGRES_TEMPLATE`) until ``stack`` closes; nothing without
    PostgreSQL (its servers then run on SQLite)."""
    from deployments.local_postgres import postgres_available
    from tests.fixtures.prefect_server import migrated_postgres

    if postgres_available():
        _say("migrating one Prefect database on PostgreSQL for the second step's servers")
        env[POSTGRES_TEMPLATE] = stack.enter_context(migrated_postgres())


def second_template_beside(stack: ExitStack, env: dict[str, str]) -> Callable[[], None]:
    """Make :func:`second_template` on a thread while the first step's database and servers are
    made (its cluster's ``initdb`` and migration, about 6 s, off the command's start-up);
    return the wait for it. ``stack`` stops its cluster after the thread has ended."""
    template = stack.enter_context(ExitStack())  # closed after the thread is joined
    making = stack.enter_context(ThreadPoolExecutor(1)).submit(second_template, template, env)
    return making.result


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a step still running when the command exits (SIGTERM, then SIGKILL after 60 s)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)  # bound: a teardown's escalation to SIGKILL, no verdict
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _ended_at(process: subprocess.Popen[bytes]) -> Callable[[], float]:
    """Wait for ``process`` on a thread; return the wait for the monotonic time it ended at (the
    second step's own wall time, though its end is read only after the first step's)."""
    ended: list[float] = []

    def wait() -> None:
        process.wait()
        ended.append(time.monotonic())

    watcher = threading.Thread(target=wait, daemon=True)
    watcher.start()

    def when() -> float:
        watcher.join()
        return ended[0]

    return when


def _pytest_command(args: list[str]) -> list[str]:
    _say(" ".join(["pytest", *args]))
    return [sys.executable, "-m", "pytest", *args]


def _count(text: str) -> int:
    """``--durations``' value: a whole number, 0 or more (pytest took -3 and ran everything)."""
    if not (text.isascii() and text.isdigit()):  # "³" is a digit to str.isdigit, not to int()
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (0 or more)")
    return int(text)


class _OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose refusal is its one error line (no usage lines before it), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str], Paths, Paths]:
    """The command's options, then pytest's options and each step's paths (:func:`route`);
    a refusal exits 2 with its one line, before anything starts."""
    parser = _OneLineParser(
        prog="python -m tests",
        description=__doc__.split("\n")[0].replace("``", ""),
        allow_abbrev=False,  # --cov is pytest-cov's option, not short for --coverage
    )
    parser.add_argument("--coverage", action="store_true", help="line and branch coverage")
    parser.add_argument(
        "--durations", type=_count, default=0, help="list the N slowest tests (N >= 0)"
    )
    parser.add_argument(
        "--apart",
        action="store_true",
        help="run the second step after the first (by default the two run at once)",
    )
    parser.add_argument("--together", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "pytest_args", nargs="*", help="after --: options for both pytest runs, paths to their step"
    )
    options, unknown = parser.parse_known_args(argv)
    for arg in unknown:
        if arg == "--cov" or arg.startswith("--cov="):
            parser.error(f"{arg}: {COV_REFUSED}")
    if unknown:  # the hint keeps the paths given after -- (they are options.pytest_args)
        parser.error(
            f"unrecognized arguments: {' '.join(unknown)} (pytest's own options go after --: "
            f"python -m tests -- {' '.join([*unknown, *options.pytest_args])})"
        )
    if options.together:  # the option of stops 49 and 50
        parser.error(
            "--together is gone: both steps run at once by default (--apart: one after the other)"
        )
    try:
        pytest_options, first, second = route(options.pytest_args)
    except RefusedArgument as refused:
        parser.error(str(refused))
    pytests_refusal = pytest_refusal(pytest_options)
    if pytests_refusal is not None:
        parser.error(str(pytests_refusal))
    return options, pytest_options, first, second


def _importing(frame: FrameType | None) -> bool:
    """Whether ``frame`` or a caller of it is importlib's own code (a module lock held)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _interrupted_once(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT: ``KeyboardInterrupt``, and every later one ignored, so that stopping
    what the command started (its ExitStacks) is not itself cut short.

    ``uv run`` without a terminal forwards a SIGINT its group already got, so one Ctrl-C in CI
    or under ``timeout -s INT`` arrived twice: the second cut the wait for the second step's
    ``initdb`` short, which went on alone, and its 39 MB cluster folder was left in /tmp (u57).

    One that comes while this thread is inside importlib is asked again 50 ms later: raised
    there, ``KeyboardInterrupt`` can leave an import lock held, and the set-up's threads, which
    import too, then waited for it for ever (the command hung at its exit).
    """
    if _importing(frame):
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _say("interrupted: stopping what the command started (another Ctrl-C waits for that)")
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the suite as the module docstring says; return the exit code."""
    options, pytest_options, first_paths, second_paths = parse(argv)
    signal.signal(signal.SIGINT, _interrupted_once)
    ensure_chromium()
    ensure_postgresql()
    # Here, not in `env`: the command's own Prefect servers start from this process's environment.
    os.environ.update(trust_no_server(os.environ))
    env = {
        **os.environ,
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # Two test workers share the two cores: llama.cpp's decode threads would spin against
        # the other worker (measured: tests/local 84 s with 2 threads, 65 s with 1, same texts).
        "GLOSSOGEN_LOCAL_THREADS": os.environ.get("GLOSSOGEN_LOCAL_THREADS", "1"),
    }
    with ExitStack() as stack:
        if "PREFECT_HOME" not in env:
            # The tests' own Prefect settings and database, not the user's ~/.prefect; removed
            # when the command ends, passed, failed or interrupted (63 were left in /tmp): what
            # a failure needs is in its own output and its servers' kept logs.
            env["PREFECT_HOME"] = stack.enter_context(tempfile.TemporaryDirectory(
                prefix="glossogen-tests-prefect-", ignore_cleanup_errors=True
            ))  # fmt: skip
        return _steps(options, pytest_options, first_paths, second_paths, env)


def _steps(
    options: argparse.Namespace,
    pytest_options: list[str],
    first_paths: Paths,
    second_paths: Paths,
    env: dict[str, str],
) -> int:
    """Start the servers and run both steps (the module docstring); return the exit code."""
    durations = [f"--durations={options.durations}"] if options.durations else []
    cov = ["--cov", "--cov-branch"] if options.coverage else []
    first_runs, second_runs = first_paths != [], second_paths != []
    workers = FIRST_WORKERS  # a worker per test file named, up to FIRST_WORKERS (named_test_files)
    if first_paths:
        workers = min(workers, max(1, len(named_test_files(first_paths, TESTS, REPO / SECOND))))
    together = not options.apart and first_runs and second_runs
    with ExitStack() as stack:
        first_env = dict(env)
        bytecode = stack.enter_context(ThreadPoolExecutor(1)).submit(write_bytecode)
        template_made = second_template_beside(stack, env) if together else None
        if first_runs:
            _say("migrating one Prefect database for the servers and workers of the command")
            database = stack.enter_context(migrated_database())
            env[MIGRATED_DB] = first_env[MIGRATED_DB] = str(database)
            if not env.get("PREFECT_API_URL"):
                # Run ids are unix seconds and flow runs are named after them: each worker
                # reads flow runs and artifacts of a server no other worker writes to.
                servers = "1 Prefect server" if workers == 1 else f"{workers} Prefect servers"
                _say(f"starting {servers} on 127.0.0.1 (ports from the OS)")
                urls = stack.enter_context(prefect_servers(workers, database))
                first_env["GLOSSOGEN_TEST_PREFECT_API_URLS"] = " ".join(urls)
                first_env["PREFECT_API_URL"] = env["PREFECT_API_URL"] = urls[0]
        first_args = ["-n", str(workers), "--dist", "loadfile", f"--ignore={SECOND}",
                      *durations, *pytest_options, *(first_paths or [])]  # fmt: skip
        second_args = ["-n", str(WORKERS), "--dist", "load", *durations, *pytest_options,
                       *(second_paths or [SECOND])]  # fmt: skip
        if template_made is not None:
            template_made()
        bytecode.result()  # before any test process imports a module
        second_env = dict(env)
        if cov and together:
            # Each step writes a data file of its own (either may end first), combined after.
            data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="glossogen-cov-")))
            second_env["COVERAGE_FILE"] = str(data / ".coverage")
            first_args += [*cov, "--cov-report="]
            second_args += [*cov, "--cov-report="]
        elif cov:
            # The second step appends to the first's data and prints the whole figure.
            report = "--cov-report=" if second_runs else "--cov-report=term:skip-covered"
            first_args += [*cov, report]
            second_args += [*cov, *(["--cov-append"] if first_runs else []),
                            "--cov-report=term:skip-covered"]  # fmt: skip
        started = time.monotonic()
        beside: subprocess.Popen[bytes] | None = None
        if together:
            output = stack.enter_context(tempfile.TemporaryFile())
            _say("the second step runs beside the first; its output follows the first's")
            beside = subprocess.Popen(_pytest_command(second_args), cwd=REPO, env=second_env,
                                      stdout=output, stderr=subprocess.STDOUT)  # fmt: skip
            stack.callback(_stop, beside)  # an interrupted first step stops it too
            second_ended = _ended_at(beside)
        first = 0
        if first_runs:
            first = subprocess.run(_pytest_command(first_args), cwd=REPO, env=first_env).returncode
            _say(f"first step: exit {first}, {time.monotonic() - started:.0f} s wall")
        else:
            _say(f"first step: skipped (each path given is under {SECOND})")
        second_started = time.monotonic()
        second = 0
        if beside is not None:
            second = beside.wait()
            output.seek(0)
            sys.stdout.flush()
            shutil.copyfileobj(output, sys.stdout.buffer)
            sys.stdout.flush()
            _say(f"second step (beside the first): exit {second}, "
                 f"{second_ended() - started:.0f} s wall")  # fmt: skip
            if cov:
                coverage = [sys.executable, "-m", "coverage"]
                subprocess.run([*coverage, "combine", "--append", "-q", second_env["COVERAGE_FILE"]],
                               cwd=REPO, check=True)  # fmt: skip
                subprocess.run([*coverage, "report", "--skip-covered"], cwd=REPO, check=False)
        elif second_runs:
            second_template(stack, env)
            second = subprocess.run(_pytest_command(second_args), cwd=REPO, env=env).returncode
            _say(f"second step: exit {second}, {time.monotonic() - second_started:.0f} s wall")
        else:
            _say(f"second step: skipped (no path given is under {SECOND})")
        _say(f"both steps: {time.monotonic() - started:.0f} s wall")
    return first or second


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # what it started is stopped by then (its ExitStack)
        print("tests: interrupted", file=sys.stderr)
        sys.exit(130)
