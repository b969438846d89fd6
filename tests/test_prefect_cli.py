"""``python -m glossogen._prefect_cli``: Prefect's CLI with the collector tuned for a server.

Every Prefect server, process worker and database migration the product and its tests start runs
through it (each temporary server of the suite is one: ``tests/fixtures/processes.the_server_of``
checks its command line); what it changes is the collector's thresholds alone.
"""

from __future__ import annotations

import subprocess
import sys

import prefect

PROBE = """
import gc, sys
from glossogen import _prefect_cli
sys.argv = ["-m", "version"]
try:
    _prefect_cli.main()
finally:  # Prefect's CLI ends by SystemExit
    print("thresholds", gc.get_threshold())
"""


def test_prefects_command_runs_with_its_arguments_on_the_tuned_thresholds() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert shown[0] == f"Version:              {prefect.__version__}"
    assert shown[-1] == "thresholds (10000, 50, 100)"
