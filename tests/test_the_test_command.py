"""README's test command, ``python -m tests``: which step each path after ``--`` goes to, and
what it refuses before it installs, migrates or starts anything (``tests/__main__.py``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests._arguments import REPO, SECOND, TESTS, RefusedArgument, named_test_files, route
from tests._bytecode import rewrite_test_modules
from tests._trust_store import NO_SERVER_TRUSTED, machine_trust, trust_no_server


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
        "",  # named as '' in the refusal
        "-",
    ],
)
def test_an_argument_that_names_no_test_under_tests_is_refused(arg):
    with pytest.raises(RefusedArgument) as refused:
        route(["-x", arg])
    assert str(refused.value) == (
        f"{arg!r} names no test file or folder under {TESTS} "
        "(a pytest option's value not named here goes as --option=value)"
    )


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["-k"], "-k"),  # it took the second step's folder for its value: 186 s, no test ran
        (["tests/cli", "--timeout"], "--timeout"),
        (["-p", "-x", "tests/cli"], "-p"),
    ],
)
def test_an_option_without_its_value_is_refused(args, option):
    with pytest.raises(RefusedArgument) as refused:
        route(args)
    assert str(refused.value) == f"{option} needs a value after it"


@pytest.mark.parametrize("arg", ["--cov", "--cov=glossogen"])
def test_pytest_covs_own_option_is_refused_for_the_commands(arg):
    with pytest.raises(RefusedArgument) as refused:
        route([arg, "tests/cli"])
    assert str(refused.value) == (
        f"{arg}: both steps' coverage is python -m tests --coverage (each step's own --cov "
        "wrote the same .coverage, and took a path after it for its source)"
    )


def test_a_folder_holding_no_test_file_or_a_file_that_is_none_is_refused():
    with pytest.raises(RefusedArgument) as refused:
        route(["tests/fixtures"])  # it ran every server and both steps to "no tests ran"
    assert str(refused.value) == "'tests/fixtures' holds no test file (test_*.py)"
    with pytest.raises(RefusedArgument) as refused:
        route(["tests/fixtures/ports.py::x"])
    assert str(refused.value) == "'tests/fixtures/ports.py::x' is not a test file (test_*.py)"


def test_the_first_step_has_a_worker_per_test_file_named_up_to_three():
    cli = sorted((TESTS / "cli").glob("test_*.py"))
    named = [
        "tests/cli/test_run_command.py::test_x",  # a test id: its file
        "tests/cli/test_run_command.py",  # the same file again
        "tests/stubs",  # a folder: its two test files
    ]
    assert named_test_files(named, TESTS, REPO / SECOND) == {
        TESTS / "cli/test_run_command.py",
        TESTS / "stubs/test_model_stubs.py",
        TESTS / "stubs/test_stub_faults.py",
    }
    assert named_test_files(["tests/cli"], TESTS, REPO / SECOND) == set(cli)
    whole = named_test_files(["tests"], TESTS, REPO / SECOND)
    assert whole == {f for f in TESTS.rglob("test_*.py") if not f.is_relative_to(REPO / SECOND)}


def test_an_options_value_may_look_like_a_number_or_be_empty():
    assert route(["--maxfail", "-1", "-k", "", "tests/cli"]) == (
        ["--maxfail", "-1", "-k", ""],
        ["tests/cli"],
        [],
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--", "nosuch"], f"'nosuch' names no test file or folder under {TESTS} "
         "(a pytest option's value not named here goes as --option=value)"),
        (["--", "-k"], "-k needs a value after it"),
        (["--", "--cov", "tests/cli/test_small_lines.py"], "--cov: both steps' coverage is "
         "python -m tests --coverage (each step's own --cov wrote the same .coverage, and took "
         "a path after it for its source)"),
        (["--together"], "--together is gone: both steps run at once by default "
         "(--apart: one after the other)"),
        (["--cov"], "--cov: both steps' coverage is python -m tests --coverage (each step's own "
         "--cov wrote the same .coverage, and took a path after it for its source)"),
        (["--cov=glossogen", "--", "tests/cli"], "--cov=glossogen: both steps' coverage is python "
         "-m tests --coverage (each step's own --cov wrote the same .coverage, and took a path "
         "after it for its source)"),
        (["-x", "--", "tests/cli"], "unrecognized arguments: -x (pytest's own options go after "
         "--: python -m tests -- -x tests/cli)"),
        (["--durations", "-3"], "argument --durations: '-3' is not a count (0 or more)"),
        (["--", "tests/conftest.py"], "'tests/conftest.py' is not a test file (test_*.py)"),
        (["-x"], "unrecognized arguments: -x (pytest's own options go after --: "
         "python -m tests -- -x)"),
        (["--", "--bogus", "tests/cli"], "pytest refuses --bogus: unrecognized arguments: "
         "--bogus"),
        (["--", "-W", "bogus:::"], "pytest refuses -W bogus:::: while parsing the following "
         "warning configuration: invalid action: 'bogus'"),
        (["--", "--pdb", "tests/cli"], "--pdb works only with the tests in one process, and both "
         "steps spread them over pytest-xdist workers: run pytest itself (python -m pytest --pdb "
         "tests/...)"),
        (["--", "-p", "no:xdist"], "-p no:xdist works only with the tests in one process, and "
         "both steps spread them over pytest-xdist workers: run pytest itself (python -m pytest "
         "-p no:xdist tests/...)"),
        (["--durations", "\u00b3"], "argument --durations: '\u00b3' is not a count (0 or more)"),
        (["--", "-k", "and"], "pytest refuses -k and: Wrong expression passed to '-k': and: at "
         "column 1: expected not OR left parenthesis OR identifier; got and"),
        (["--", "--tb=bogus"], "pytest refuses --tb=bogus: argument --tb: invalid choice: "
         "'bogus' (choose from 'auto', 'long', 'short', 'no', 'line', 'native')"),
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
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"python -m tests: error: {error}\n",
    )


FAILING = """\
def test_sum():
    total = sum([1, 2])
    assert total == 4
"""


def _pytest_in(folder, *options: str) -> subprocess.CompletedProcess[str]:
    """Plain pytest on ``folder`` as the test command's workers run it: bytecode never written."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(folder),
         *options, str(folder)],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_pytest_reads_the_rewritten_test_modules_written_before_the_steps(tmp_path):
    (tmp_path / "test_sum.py").write_text(FAILING)
    (tmp_path / "conftest.py").write_text("")
    assert rewrite_test_modules(tmp_path) == 2
    assert rewrite_test_modules(tmp_path) == 0  # current: nothing written again

    ran = _pytest_in(tmp_path, "--debug=debug.log")

    assert ran.returncode == 1
    assert "assert 3 == 4" in ran.stdout  # the rewritten module's introspection
    log = (tmp_path / "debug.log").read_text()
    assert f"found cached rewritten pyc for {tmp_path / 'test_sum.py'}" in log
    assert f"rewriting {tmp_path / 'test_sum.py'!r}" not in log  # nor rewritten by pytest


def test_a_test_module_edited_after_its_rewrite_is_rewritten_again(tmp_path):
    source = tmp_path / "test_sum.py"
    source.write_text(FAILING)
    assert rewrite_test_modules(tmp_path) == 1
    source.write_text(FAILING.replace("== 4", "== 5"))

    ran = _pytest_in(tmp_path, "--debug=debug.log")

    assert "assert 3 == 5" in ran.stdout  # pytest checks the source's hash, not a stale file
    assert f"rewriting {source!r}" in (tmp_path / "debug.log").read_text()
    assert rewrite_test_modules(tmp_path) == 1


def test_the_tests_trust_no_server_and_uv_build_gets_the_machines_trust_back():
    """Every process of the command trusts one certificate that trusts no server, whatever
    ``SSL_CERT_FILE`` the machine set (these machines set Debian's bundle in every shell); the
    subprocess that must reach the internet gets the machine's value back."""
    ours = str(NO_SERVER_TRUSTED)
    machine = {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "HOME": "/root"}
    tests = {**machine, **trust_no_server(machine)}
    assert tests == {
        "SSL_CERT_FILE": ours,
        "GLOSSOGEN_TESTS_MACHINE_SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "PREFECT_API_SSL_CERT_FILE": ours,
        "HOME": "/root",
    }
    assert trust_no_server(tests) == {}  # conftest, under the command
    assert machine_trust(tests) == machine
    bare = {"HOME": "/root"}
    assert machine_trust({**bare, **trust_no_server(bare)}) == bare
    # A Prefect API of the user's own: an https:// server keeps its own trust store.
    https = {"PREFECT_API_URL": "https://prefect.example.com/api"}
    assert trust_no_server(https) == {
        "SSL_CERT_FILE": ours,
        "GLOSSOGEN_TESTS_MACHINE_SSL_CERT_FILE": "",
    }
    own = {"PREFECT_API_SSL_CERT_FILE": "/etc/mine.pem"}
    assert "PREFECT_API_SSL_CERT_FILE" not in trust_no_server(own)


def _processes_naming(text: str) -> list[str]:
    """The command lines of this machine's processes that name ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended while it was read
            continue
        if text in line:
            found.append(line)
    return found


def test_two_sigints_during_set_up_stop_all_it_started_and_leave_no_folder(tmp_path):
    """``uv run`` without a terminal (CI, ``timeout -s INT``) forwards a SIGINT its group already
    got, so one Ctrl-C reaches the command twice. The second cut short the wait for the second
    step's ``initdb``, which went on alone, and its cluster folder (39 MB) stayed in /tmp (u57).
    Both come back to back here, to the command alone (``initdb`` gets neither, as under
    ``uv``), as set-up begins: whatever step of it they cut, it ends 130 with nothing left."""
    scratch = Path(tempfile.mkdtemp(prefix="glossogen-tests-interrupted-"))
    scratch.chmod(0o755)  # the cluster's folder in it belongs to an unprivileged user
    try:
        command = subprocess.Popen(
            [sys.executable, "-m", "tests"],
            cwd=REPO,
            env={**os.environ, "TMPDIR": str(scratch)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # the SIGINTs are the command's alone
        )
        assert command.stdout is not None
        said = [command.stdout.readline()]
        while "migrating one Prefect database for the servers" not in said[-1]:
            assert said[-1], f"the command ended before its set-up: {said}"
            said.append(command.stdout.readline())
        command.send_signal(signal.SIGINT)
        command.send_signal(signal.SIGINT)
        said += command.stdout.readlines()
        assert (command.wait(), said[-1]) == (130, "tests: interrupted\n"), said
        assert (list(scratch.iterdir()), _processes_naming(str(scratch))) == ([], [])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
