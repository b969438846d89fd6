"""Which step of ``python -m tests`` each argument after ``--`` goes to, and what is refused
before anything starts (:func:`route`; ``tests/__main__.py`` calls it first)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
"""The folder every test path given after ``--`` must be in (:func:`route`)."""
SECOND = "tests/orchestration"
"""The second step's folder (the first step ignores it)."""
VALUED_OPTIONS = frozenset({
    "-k", "-m", "-p", "-o", "-c", "-n", "-W", "-r", "--deselect", "--ignore", "--ignore-glob",
    "--rootdir", "--basetemp", "--dist", "--maxfail", "--timeout", "--durations", "--tb",
    "--junitxml", "--junit-xml", "--cov-report", "--cov-config", "--confcutdir", "--log-file",
    "--log-level", "--log-cli-level", "--capture", "--color", "--import-mode",
})  # fmt: skip
"""pytest options whose value is the next argument (never taken for a path to route)."""
ONE_PROCESS_OPTIONS = frozenset({"--pdb", "--trace"})
"""pytest options that cannot work on xdist workers (as ``-p no:xdist``): refused before anything
starts (passed on, ``--pdb`` was refused by pytest after the command's 15 s of set-up)."""


class RefusedArgument(ValueError):
    """An argument after ``--`` refused before anything starts (:func:`route`); its line."""


def not_a_test_path(arg: str) -> RefusedArgument:
    """The refusal of ``arg``: neither an option nor a test path under ``tests/``."""
    return RefusedArgument(
        f"{arg!r} names no test file or folder under {TESTS} "
        "(a pytest option's value not named here goes as --option=value)"
    )


def missing_value(option: str) -> RefusedArgument:
    """The refusal of ``option`` (one of :data:`VALUED_OPTIONS`) given without its value."""
    return RefusedArgument(f"{option} needs a value after it")


COV_REFUSED = (
    "both steps' coverage is python -m tests --coverage (each step's own --cov wrote the same "
    ".coverage, and took a path after it for its source)"
)
"""Why pytest-cov's ``--cov`` is refused, before ``--`` or after it: the same line both ways."""


def route(args: list[str]) -> tuple[list[str], list[str] | None, list[str] | None]:
    """Split the pytest arguments after ``--`` into options and each step's paths.

    A path (a file, folder or test id of the checkout, relative to it or absolute) goes to the
    step whose tests it names: under :data:`SECOND` to the second, else to the first; a folder
    holding both (``tests``) to each (the first ignores :data:`SECOND`, the second takes
    :data:`SECOND`). Given to both runs as they were, ``python -m tests -- tests/orchestration``
    ran the orchestration tests in both steps (an explicit path overrides ``--ignore``).

    Returns:
        ``(options, first, second)``: the arguments that are not paths, then each step's paths:
        None when no path was given (the step runs all of its tests), an empty list when paths
        were given and none is that step's (the step is skipped).

    An argument that is neither an option (``-x``, ``--tb=short``) nor the value after one of
    :data:`VALUED_OPTIONS` must name a test file or folder under ``tests/`` (of a test id, its
    file: whether the test is there is pytest's to say); the value of any other pytest option
    goes as ``--option=value``.

    Raises:
        RefusedArgument: such an argument names nothing under ``tests/`` (a typo,
            ``README.md``, a path outside the checkout), or one of :data:`VALUED_OPTIONS` comes
            last or before another option. Passed on before, a typo started every server and
            both steps, which collected nothing and exited 5 after 37 to 90 s without naming
            it; ``README.md`` or ``..`` ran as a path of the first step; a trailing ``-k``
            took the second step's folder for its value (186 s, then "no tests ran"). So are a
            folder holding no test file (``tests/fixtures``) and a file that is not one
            (``tests/conftest.py``), which also ran to "no tests ran" (35 to 55 s).
            And so is pytest-cov's ``--cov``: both steps run at once and each wrote its data to
            the same ``.coverage``; its value is optional, so a path after it was taken for its
            source (``python -m tests --coverage`` combines both steps' data). So are
            :data:`ONE_PROCESS_OPTIONS` and ``-p no:xdist``.
    """
    options: list[str] = []
    first: list[str] = []
    second: list[str] = []
    previous = ""
    for arg in args:
        target = (REPO / arg.split("::", 1)[0]).resolve()
        an_option = arg.startswith("-") and arg[1:2] not in ("", *"0123456789")
        if previous in VALUED_OPTIONS and an_option:
            raise missing_value(previous)
        if arg == "--cov" or arg.startswith("--cov="):
            raise RefusedArgument(f"{arg}: {COV_REFUSED}")
        if (
            arg in ONE_PROCESS_OPTIONS
            or (previous == "-p" and arg == "no:xdist")
            or (arg in ("-pno:xdist", "-p=no:xdist"))
        ):
            shown = f"-p {arg}" if previous == "-p" else arg
            raise RefusedArgument(
                f"{shown} works only with the tests in one process, and both steps spread them "
                f"over pytest-xdist workers: run pytest itself (python -m pytest {shown} tests/...)"
            )
        if an_option or previous in VALUED_OPTIONS:
            options.append(arg)
        elif not arg or not target.is_relative_to(TESTS) or not target.exists():
            raise not_a_test_path(arg)
        elif not named_test_files([arg], within=TESTS):
            kind = "is not a test file" if target.is_file() else "holds no test file"
            raise RefusedArgument(f"{arg!r} {kind} (test_*.py)")
        elif target.is_relative_to(REPO / SECOND):
            second.append(arg)
        else:
            first.append(arg)
            if (REPO / SECOND).is_relative_to(target):
                second.append(SECOND)
        previous = arg
    if previous in VALUED_OPTIONS:
        raise missing_value(previous)
    if not first and not second:
        return options, None, None
    return options, first, second


def named_test_files(paths: list[str], within: Path, leaving: Path | None = None) -> set[Path]:
    """The test files (``test_*.py``) under ``within`` that ``paths`` name, but those under
    ``leaving``: a file or a test id's file itself, every one under a folder.

    The test command starts as many first-step workers as that (up to its number), each with
    its Prefect server: the first step sends a file's tests to one worker (``--dist loadfile``),
    so one file on three workers started two that ran nothing.
    """
    files: set[Path] = set()
    for path in paths:
        target = (REPO / path.split("::", 1)[0]).resolve()
        named = [target] if target.is_file() else target.rglob("test_*.py")
        files.update(f for f in named if fnmatch(f.name, "test_*.py") and f.is_relative_to(within))
    return {f for f in files if leaving is None or not f.is_relative_to(leaving)}


ERROR_SAID = re.compile(r"error:\s*", re.IGNORECASE)
"""What starts pytest's usage error in its stderr (``ERROR:``, or argparse's ``error:``)."""


def pytest_refusal(options: list[str]) -> RefusedArgument | None:
    """pytest's own refusal of the ``options`` given after ``--`` (one it does not know, a
    ``-k`` expression it cannot read), or None when it takes them.

    Asked of pytest itself, without the suite: ``--collect-only`` of an empty folder without
    any conftest (about half a second, only when options were given). Passed on unread, ``--bogus``
    was refused by both pytest runs after the command had migrated its databases and started
    its servers (about 30 s).
    """
    if not options:
        return None
    with tempfile.TemporaryDirectory(prefix="glossogen-tests-options-") as empty:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--noconftest", "--collect-only", "-q", *options,
             "--", empty],
            cwd=REPO, capture_output=True, text=True, check=False,
        )  # fmt: skip
    if done.returncode != 4:  # pytest's usage error; 5 is "no tests ran", what it ran on
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    said = [line for line in lines if ERROR_SAID.search(line)]
    reason = ERROR_SAID.split(said[-1], 1)[-1].strip() if said else " ".join(lines)
    if reason.endswith(":"):  # "while parsing the following warning configuration:" ... why
        reason = f"{reason} {lines[-1]}"
    return RefusedArgument(f"pytest refuses {' '.join(options)}: {reason}")
