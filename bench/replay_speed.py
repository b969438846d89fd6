"""How fast a run replays from its log, against how long the original run took (issue 34).

For each shipped scenario: plays a scripted run in-process (``glossogen.testing.play``, the
virtual clock), then replays it (``glossogen.replay.replay_run``, as ``glossogen replay``
does). With ``--http``, also a prisoners' dilemma whose ``player_a`` is a hosted model over the
stub model server's HTTP (its replies in the style of a hosted model), played on the real
clock, as a run of a real provider is. Prints, per run: its events, the original run's wall
seconds and events per second, the replay's, the ratio of the two rates, and whether the replay
was identical (0 divergences).
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/replay_speed.py [--rounds N] [--http]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossogen.launch import VIRTUAL_CLOCK_SETTING  # noqa: E402
from glossogen.replay import ReplayRequest, replay_run  # noqa: E402
from glossogen.testing import play  # noqa: E402

SCENARIOS = ("prisoners_dilemma", "veyru", "signal_game", "orbital_anomaly",
             "drive_module_repair", "spot_the_difference")  # fmt: skip


def _line(name: str, events: int, original: float, run_dir: str, scratch: str) -> None:
    """Replay ``run_dir`` and print its row."""
    began = time.perf_counter()
    report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=scratch))
    replayed = time.perf_counter() - began
    was, now = events / original, events / replayed
    verdict = "identical" if report.identical else "DIVERGED"
    print(
        f"{name:<30} {events:>6} events  original {original:7.2f} s ({was:8.0f} events/s)  "
        f"replay {replayed:6.2f} s ({now:6.0f} events/s)  replay/original {now / was:7.2f}x  "
        f"{verdict}",
        flush=True,
    )


def _http_run(scratch: str, rounds: int) -> tuple[str, int, float]:
    """A prisoners' dilemma over the stub's HTTP on the real clock: its folder, events, seconds."""
    from glossogen.eventlog import RunView
    from tests.fixtures.model_stubs import StubModelServer
    from tests.fixtures.winning_players import pd_player
    from tests.replay.record_tapes import HTTP_RUNS, play_over_http

    os.environ.pop(VIRTUAL_CLOCK_SETTING, None)  # the real clock, as a real provider's run
    with StubModelServer() as stub:
        os.environ["OPENAI_BASE_URL"] = stub.openai_base_url
        os.environ["OPENAI_API_KEY"] = "sk-bench-replay"
        stub.responder = pd_player
        overrides = [*HTTP_RUNS["prisoners_dilemma"], f"round_count={rounds}"]
        began = time.perf_counter()
        run_dir = asyncio.run(play_over_http(Path(scratch), "prisoners_dilemma", overrides))
        seconds = time.perf_counter() - began
    del os.environ["OPENAI_API_KEY"]  # the replay sends nothing
    view = RunView.load(f"{run_dir}/prisoners_dilemma.jsonl")
    return run_dir, len(view.events), seconds


def main() -> None:
    """Print one row per run."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each scripted run")
    parser.add_argument("--http", action="store_true", help="also a real-clock run over HTTP")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="glossogen-bench-replay-")
    for scenario in SCENARIOS:
        began = time.perf_counter()
        view = play(scenario, Path(scratch) / "runs", rounds=args.rounds)
        original = time.perf_counter() - began
        assert view.started is not None, f"{scenario}: the run logged no simulation_started"
        run_dir = str(Path(scratch) / "runs" / view.started.run_id)
        _line(f"{scenario} (scripted)", len(view.events), original, run_dir, f"{scratch}/r")
    if args.http:
        run_dir, events, original = _http_run(f"{scratch}/http", 2)
        _line("prisoners_dilemma (HTTP, real)", events, original, run_dir, f"{scratch}/r")


if __name__ == "__main__":
    main()
