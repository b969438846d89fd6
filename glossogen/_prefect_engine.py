"""``python -m glossogen._prefect_engine``: Prefect's flow-run engine, its collector tuned.

The command each flow run of a glossogen work pool starts with
(``deployments.pools.ENGINE_COMMAND``): Prefect's own ``python -m prefect.engine``, run after
the collector's thresholds are set as a Prefect server's are (:mod:`glossogen._prefect_cli`).
A flow-run process spends most of its life importing Prefect, pydantic-ai and the flow's
modules, and with CPython's default thresholds the collector ran over that growing heap
again and again. Measured with ``gc.callbacks`` in the flow runs of
``tests/orchestration/test_limits.py`` and ``test_stop_through_prefect.py`` (stop 54): the
collector took 2.10 of 4 flow runs' 14.7 CPU-s (14.3%) as ``python -m prefect.engine``, 0.52 of
5 flow runs' 15.3 (3.4%) as this module.
"""

from __future__ import annotations

import runpy

from glossogen._prefect_cli import tune_collector


def main() -> None:
    """Set the collector's thresholds, then run Prefect's engine as ``python -m`` would."""
    tune_collector()
    runpy.run_module("prefect.engine", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
