"""Package fixtures of the orchestration tests: one Prefect server of their own, the pools and
limits of a test limits file, every deployment of prefect.yaml, and a process worker per pool.

Package scope: once the last test here ends, the workers stop, the server stops and
``PREFECT_API_URL`` is restored, so later tests of the session see none of it.

prefect.yaml is deployed from a scratch project folder (a copy of the file, ``flows/`` linked
to the checkout's), never from the checkout: Prefect's pull step runs every flow in the folder
it was deployed from, so a relative ``runs_dir`` (``reconcile``'s ``./runs``, when a test's
kill fires the crash automation; its 5-minute schedule is registered but the test server's
scheduler is off: ``ORCHESTRATION_SERVER_SETTINGS``) resolves there and never reaches the
checkout's own ``./runs``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from deployments.local_server import ProcessWorker
from glossogen.cli import main
from glossogen.launch import VIRTUAL_CLOCK_SETTING
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.prefect_server import REPO, StartWorker, orchestration_server, worker_starter
from tests.orchestration.flow_runs import close_api_clients

TEST_LIMITS = """\
defaults: {pool_concurrency: 2, llm_concurrency: 4}
providers:
  openai: {pool_concurrency: 4, llm_concurrency: 2}
  scripted: {pool_concurrency: 4, llm_concurrency: null}
  self-hosted: {pool_concurrency: 4, llm_concurrency: null}
shared_pool: {name: glossogen, pool_concurrency: 2}
"""
# Crash tests run on self-hosted, whose calls are not limited here: a killed process's slots
# stay held until their lease ends (60 s), which would only slow the resumed runs down.
STUB_KEY = "sk-orchestration-test-0123456789"


def run_cli(*argv: str) -> int:
    """Run ``glossogen ARGV`` in this process and return its exit code."""
    try:
        main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


SLOWEST_FIRST = (
    "test_a_2x2x2_sweep_runs_every_cell_on_the_worker_then_launches_nothing",
    "test_a_spec_of_the_same_name_elsewhere_or_after_its_runs_were_deleted_plays_its_own_runs",
    "test_a_crashed_simulate_run_is_resumed_by_the_automation",
    "test_killing_a_worker_mid_run_then_reconcile_finishes_every_run",
    "test_a_hung_run_is_cancelled_then_resumed_by_reconcile",
    "test_stop_cancels_a_worker_played_run_through_prefect_and_resume_finishes_it",
    "test_a_prefect_retry_of_a_crashed_run_resumes_it",
    "test_a_provider_limit_of_2_is_never_exceeded",
    "test_a_simulate_run_through_a_process_worker_completes",
    "test_nightly_export_writes_the_csvs_to_s3",
    "test_start_run_plays_on_the_deployment_a_worker_serves",
)
"""The tests here that take longest (20-70 s each in CI, the others a few seconds), longest
first.

The test command runs this folder on two pytest-xdist workers (``--dist load``), which hand
out tests in collection order, a few at a time: collected by file, the two sweeps of
``test_sweep_through_workers.py`` came last and one worker played both (2 x 65 s) while the
other had nothing left. Sent first, the long tests are shared out while short ones remain to
even the two workers out at the end.
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move this folder's tests into :data:`SLOWEST_FIRST` order, the rest after them as
    collected; tests of other folders keep their places."""
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if item.path.is_relative_to(here)]
    rank = {name: n for n, name in enumerate(SLOWEST_FIRST)}
    mine = sorted(
        (items[i] for i in slots),
        key=lambda item: rank.get(
            item.originalname if isinstance(item, pytest.Function) else item.name,
            len(SLOWEST_FIRST),
        ),
    )
    for slot, item in zip(slots, mine, strict=True):
        items[slot] = item


@pytest.fixture(scope="package")
def orchestration_api() -> Iterator[str]:
    """The API URL of a Prefect server started for these tests alone, exported meanwhile."""
    with orchestration_server() as api_url:
        try:
            yield api_url
        finally:
            close_api_clients()


@pytest.fixture(scope="package")
def project_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The scratch project deployed here: ``prefect.yaml`` copied, ``flows/`` linked.

    On exit, checks that the checkout gained no ``runs`` folder (nothing ran in it).
    """
    had_runs = (REPO / "runs").exists()
    folder = tmp_path_factory.mktemp("project")
    shutil.copy(REPO / "prefect.yaml", folder / "prefect.yaml")
    (folder / "flows").symlink_to(REPO / "flows", target_is_directory=True)
    yield folder.resolve()
    assert had_runs or not (REPO / "runs").exists(), "a deployed flow wrote into the checkout"


@pytest.fixture(scope="package")
def process_workers(orchestration_api: str, project_dir: Path) -> Iterator[StartWorker]:
    """``start(pool, env=None, name=None)``: a process worker on ``orchestration_api``."""
    with worker_starter(orchestration_api, cwd=project_dir) as start:
        yield start


@pytest.fixture(scope="session")
def limits_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A limits file: ``llm:openai`` at 2 calls, the openai pool at 4 runs."""
    path = tmp_path_factory.mktemp("limits") / "limits.yaml"
    path.write_text(TEST_LIMITS)
    return path


@pytest.fixture(scope="package")
def deployed(orchestration_api: str, limits_file: Path, project_dir: Path) -> str:
    """Apply the test limits and register prefect.yaml's deployments (``glossogen deploy``)
    from the scratch project."""
    limits = str(limits_file)
    assert run_cli("deploy", "--limits", limits, "--project-dir", str(project_dir)) == 0
    return orchestration_api


@pytest.fixture(scope="package")
def scripted_worker(deployed: str, process_workers: StartWorker) -> ProcessWorker:
    """A process worker on ``glossogen-scripted``."""
    return process_workers("glossogen-scripted")


@pytest.fixture(scope="package")
def openai_worker_env(model_stub_server: StubModelServer) -> dict[str, str]:
    """What an openai worker's flow runs need: the stub's URL, a key, and game time."""
    return {
        "OPENAI_BASE_URL": model_stub_server.openai_base_url,
        "OPENAI_API_KEY": STUB_KEY,
        VIRTUAL_CLOCK_SETTING: "1",  # the stub is on loopback: no run waits on real seconds
    }


@pytest.fixture(scope="package")
def openai_worker(
    deployed: str, process_workers: StartWorker, openai_worker_env: dict[str, str]
) -> ProcessWorker:
    """A process worker on ``glossogen-openai`` whose runs call the session's stub server."""
    return process_workers("glossogen-openai", env=openai_worker_env)


SELF_HOSTED_MODELS = ("llama-a", "llama-b")


@pytest.fixture(scope="package")
def self_hosted_env(model_stub_server: StubModelServer) -> dict[str, str]:
    """What a self-hosted worker's flow runs need: two model names served by the stub."""
    urls = {m: model_stub_server.openai_base_url for m in SELF_HOSTED_MODELS}
    return {
        "SELF_HOSTED_BASE_URLS": json.dumps(urls),
        "SELF_HOSTED_API_KEY": STUB_KEY,
        VIRTUAL_CLOCK_SETTING: "1",  # the stub is on loopback: no run waits on real seconds
    }


@pytest.fixture(scope="package")
def self_hosted_worker(
    deployed: str, process_workers: StartWorker, self_hosted_env: dict[str, str]
) -> ProcessWorker:
    """A process worker on ``glossogen-self-hosted`` (a crash test kills it and starts another)."""
    return process_workers("glossogen-self-hosted", env=self_hosted_env)
