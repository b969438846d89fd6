"""Cost of rebuilding a run's state from its log, against playing one scripted round (issue 4).

Plays a 20-round scripted veyru run in-process (a larger turn cap so it finishes), then times:
- rebuilding its state from the 20-round log (read + validate every event, fold histories);
- playing one more scripted round (the median of the 20 rounds' play time).
Prints both and their ratio (target: rebuilding is cheaper than playing one round).
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/resume_cost.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossogen.derive import read_state  # noqa: E402
from glossogen.eventlog import read_events  # noqa: E402
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend  # noqa: E402

ROUNDS = 20


async def play(runs_dir: str) -> tuple[str, list[float]]:
    """Play the run; return its log URL and the CPU seconds each round took."""
    plan = plan_run(
        RunRequest(
            scenario="veyru", model="scripted", provider="scripted", runs_dir=runs_dir,
            config="knobs_default", overrides=[f"round_count={ROUNDS}"], max_agent_turns=2000,
        )
    )  # fmt: skip
    claimed = claim_run(plan, runs_dir)
    session = open_session(plan, claimed)
    per_round: list[float] = []
    for n in range(1, ROUNDS + 1):
        c0 = time.process_time()
        await session.play_round(n)
        per_round.append(time.process_time() - c0)
    session.finish(price_spend(claimed), "completed")
    return claimed.log_url, per_round


def main() -> None:
    """Print the rebuild time, the per-round play time and their ratio."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help
    url, per_round = asyncio.run(play(tempfile.mkdtemp(prefix="glossogen-bench-")))
    rebuilds = []
    for _ in range(5):
        c0 = time.process_time()
        events = read_events(url).events
        state = read_state(events[:-1])  # as a resume sees it: simulation_ended cut off
        rebuilds.append(time.process_time() - c0)
    rebuild, round_cpu = statistics.median(rebuilds), statistics.median(per_round)
    print(
        f"log: {len(events)} events, {ROUNDS} rounds; rebuilt histories: "
        f"{ {a: len(h) for a, h in state.histories.items()} } messages"
    )
    print(f"rebuild state from the log: {1000 * rebuild:.1f} CPU ms (median of 5)")
    print(f"play one scripted round: {1000 * round_cpu:.1f} CPU ms (median of {ROUNDS})")
    print(f"ratio rebuild / one round: {rebuild / round_cpu:.2f} (target < 1)")


if __name__ == "__main__":
    main()
