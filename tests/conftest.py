"""Session-wide fixtures: real servers on 127.0.0.1 (Prefect, moto S3), loaded as plugins.

The suite runs in parallel under pytest-xdist (``python -m tests``, README): its first step
``-n 3 --dist loadfile``, so each test file runs on one worker and its module fixtures are set
up once. Each worker is a session of its own, so it has its own stub model servers and moto
server; ``tests/__main__.py`` starts one Prefect server per worker and lists them in
``GLOSSOGEN_TEST_PREFECT_API_URLS``, and a worker takes its own before anything imports Prefect:
run ids are unix seconds and flow runs are named after them, so two workers on one server could
read each other's flow runs and artifacts. Without that list each worker starts a server of its own (``prefect_api``), unless
``PREFECT_API_URL`` names one for all. README's test command runs ``tests/orchestration``
as a second step beside the first, test by test on two workers (``--dist load``): each worker
then has its own server, deployments and process workers (its package fixtures, once per
worker).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

from glossogen._prefect_cli import OLDER_COLLECTION_THRESHOLDS, YOUNG_COLLECTION_THRESHOLD
from tests._trust_store import trust_no_server

COLLECTOR_THRESHOLDS = (YOUNG_COLLECTION_THRESHOLD, *OLDER_COLLECTION_THRESHOLDS)
"""The collector's thresholds in a test process: the ones the Prefect servers get.

A test worker runs hundreds of tests in one process and holds everything they imported (Prefect,
pydantic-ai, the provider SDKs, FastAPI, polars) and cached: with CPython's defaults (700, 10,
10) its collections walked all of it again and again. Measured with ``gc.callbacks`` on the
files that play the longest runs, each in its own worker
(``tests/scenarios/test_turn_limit_runs.py``, ``tests/replay/test_replay.py``,
``tests/derive/test_resume.py``, stop 54): the collector took 6.5 CPU-s of their 67 (10%) with
the defaults, 2.4 with these thresholds and what collection loaded frozen
(:func:`pytest_collection_finish`)."""


def pytest_configure(config: pytest.Config) -> None:
    """Fewer collections in this test process (:data:`COLLECTOR_THRESHOLDS`)."""
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection imported to the collector's permanent generation (``gc.freeze``).

    The test modules, the product and its libraries stay loaded for the whole session; frozen,
    no later collection walks them again.
    """
    gc.collect()
    gc.freeze()


# Every HTTP client of this process and of the processes its tests start trusts one certificate
# that trusts no server (tests/_trust_store.py; set already under `python -m tests`): each
# loaded a bundle of about 150 for plain HTTP to 127.0.0.1.
os.environ.update(trust_no_server(os.environ))

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_SERVERS = os.environ.get("GLOSSOGEN_TEST_PREFECT_API_URLS", "").split()
if _WORKER.startswith("gw") and _SERVERS:
    os.environ["PREFECT_API_URL"] = _SERVERS[int(_WORKER[2:]) % len(_SERVERS)]

pytest_plugins = [
    "tests.fixtures.s3_server",
    "tests.fixtures.prefect_server",
    "tests.fixtures.model_stubs",
    "tests.fixtures.ports",
]

_CONSOLE_LEVEL = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


@pytest.fixture(autouse=True)
def _prefect_console_level_as_found() -> Iterator[None]:
    """Put Prefect's console level back after each test.

    ``glossogen pools`` and ``deploy`` set it (WARNING) for their own process; called in-process
    by a test, they would leave it to every later test's subprocesses, whose Prefect lines would
    then reach stderr where ``glossogen run`` keeps them off (CRITICAL, its default).
    """
    before = os.environ.get(_CONSOLE_LEVEL)
    yield
    if before is None:
        os.environ.pop(_CONSOLE_LEVEL, None)
    else:
        os.environ[_CONSOLE_LEVEL] = before
