"""A command's imports run with the cyclic collector paused, then what they made is frozen."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from glossogen.cli._startup import loading_modules

{before}
frozen = gc.get_freeze_count()
with loading_modules():
    during = gc.isenabled()
    made = [[n] for n in range(1000)]
print(during, gc.isenabled(), gc.get_freeze_count() - frozen >= 1000)
"""


def _probe(before: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(before=before)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_collector_is_paused_while_modules_load_then_on_with_what_they_made_frozen() -> None:
    assert _probe("gc.enable()") == "False True True"


def test_a_collector_turned_off_before_stays_off() -> None:
    assert _probe("gc.disable()") == "False False True"
