"""``python -m glossogen._prefect_cli server start ...``: Prefect's own CLI, its collector tuned.

Every Prefect server this project starts (a run's or a sweep's temporary server,
:func:`glossogen.cli._server.start_prefect_server`; the tests' and benchmarks' servers and
process workers, ``deployments/local_server.py``; the tests' database migrations), and
``glossogen deploy``'s ``prefect deploy``, runs Prefect's CLI through this module, with the same
arguments and the same behaviour (a pool's flow runs start through
:mod:`glossogen._prefect_engine`, likewise). Only CPython's cyclic
garbage collector is set differently first. A server holds a large heap for as long as it runs
(FastAPI's routes, SQLAlchemy, pydantic's schemas) and allocates many short-lived objects for
each request, so with CPython's default thresholds (700, 10, 10) its collections walked that
heap again and again. Measured with ``gc.callbacks`` in the nine servers of five test files
(``tests/scenarios/test_turn_limit_runs.py``, ``tests/replay/test_replay.py``,
``tests/derive/test_resume.py``, ``tests/cli/test_stop_command.py``, ``tests/sweep/test_sweep.py``;
stop 54): the collector took 9.6 of their 66 CPU-s (14.5%) with the defaults, 3.2 of 61 (5.2%)
with these thresholds. Freezing the API's modules after loading them as well (``gc.freeze``)
took it to 3.3 of 68: no gain, so they are not frozen.

A plain module rather than a typer command: it hands ``sys.argv`` to Prefect's CLI untouched and
loads nothing of the product.
"""

from __future__ import annotations

import gc
import runpy
import sys

YOUNG_COLLECTION_THRESHOLD = 10_000
"""Allocations between two young collections (CPython's default: 700)."""
OLDER_COLLECTION_THRESHOLDS = (50, 100)
"""Young collections per middle one, middle ones per full one (CPython's defaults: 10, 10)."""


def tune_collector() -> None:
    """Set this process's collector thresholds (:data:`YOUNG_COLLECTION_THRESHOLD`, ...)."""
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *OLDER_COLLECTION_THRESHOLDS)


def main() -> None:
    """Set the collector's thresholds, then run Prefect's CLI on ``sys.argv``."""
    tune_collector()
    sys.argv[0] = "prefect"
    runpy.run_module("prefect", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
