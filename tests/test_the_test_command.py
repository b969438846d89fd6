"""README's test command, ``python -m tests``: which step each path after ``--`` goes to, and
what it refuses before it installs, migrates or starts anything (``tests/__main__.py``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.__main__ import REPO, SECOND, TESTS, NotATestPath, route


def test_options_go_to_both_steps_and_each_path_to_the_step_of_its_tests():
    test_id = f"{SECOND}/test_limits.py::test_a_provider_limit_of_2_is_never_exceeded"
    assert route(["-x", "-k", "sweep and not s3", "--tb=short", "tests/cli", test_id]) == (
        ["-x", "-k", "sweep and not s3", "--tb=short"],
        ["tests/cli"],
        [test_id],
    )


def test_the_tests_folder_goes_to_both_steps_and_no_path_runs_all_of_both():
    assert route(["tests"]) == ([], ["tests"], [SECOND])
    assert route(["--lf"]) == (["--lf"], None, None)


def test_a_path_of_one_step_skips_the_other():
    assert route([f"{REPO / SECOND}"]) == ([], [], [f"{REPO / SECOND}"])
    assert route(["tests/cli/test_run_command.py"]) == ([], ["tests/cli/test_run_command.py"], [])


@pytest.mark.parametrize(
    "arg",
    [
        "nosuch",  # a typo, or the value of an option route does not know
        "tests/no_such_file.py",
        "tests/cli/test_no_such_file.py::test_x",
        "README.md",  # in the checkout, not a test
        "tests/../README.md",
        "..",  # the checkout's parent
        "/etc",
    ],
)
def test_an_argument_that_names_no_test_under_tests_is_refused(arg):
    with pytest.raises(NotATestPath) as refused:
        route(["-x", arg])
    assert str(refused.value) == (
        f"{arg} is no test file, folder or test id under {TESTS} "
        "(a pytest option's value not named here goes as --option=value)"
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--", "nosuch"], f"nosuch is no test file, folder or test id under {TESTS} "
         "(a pytest option's value not named here goes as --option=value)"),
        (["--together"], "--together is gone: both steps run at once by default "
         "(--apart: one after the other)"),
        (["--cov"], "unrecognized arguments: --cov"),
    ],
)  # fmt: skip
def test_the_command_refuses_it_in_one_line_before_anything_starts(args, error):
    done = subprocess.run(
        [sys.executable, "-m", "tests", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,  # bound: a refusal exits at once; one that regressed would run a suite
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == f"python -m tests: error: {error}"
