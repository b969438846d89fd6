"""Re-record the committed tapes of ``tests/replay/tapes`` (one scripted round per scenario).

Run ``python -m tests.replay.record_tapes`` after a change that is meant to alter what seats
send or what a run logs; review the diff of the logs before committing it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fixtures.played_runs import play_run
from tests.replay.test_replay import SCENARIOS, TAPES


def main() -> None:
    """Replace every tape with a fresh recording."""
    shutil.rmtree(TAPES, ignore_errors=True)
    for scenario in SCENARIOS:
        folder = play_run(str(TAPES), scenario=scenario, rounds=1, now_unix=1767225600)
        (Path(folder.url) / ".writer.lock").unlink(missing_ok=True)
        print(folder.run_id)


if __name__ == "__main__":
    main()
