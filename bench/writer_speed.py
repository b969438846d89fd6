"""Speed of the event-log writer against a plain json-lines write of the same events.

Appends ``EVENTS`` message events (200 characters each) with a round boundary (flush + fsync)
every 100, through :class:`glossogen.eventlog.EventLogWriter`; the baseline dumps the same
events with pydantic's ``model_dump_json`` to a file opened once, with the same fsyncs.
Prints CPU seconds of each and the writer's ratio to the baseline.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/writer_speed.py [EVENTS]`` (default 1000).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossogen.eventlog import EventLogWriter, MessageSent  # noqa: E402


def events(n: int) -> list[MessageSent]:
    """``n`` message events of 200 characters."""
    text = "x" * 200
    return [
        MessageSent(channel_id="main", sender_id="a1", text=text, delivered_text=text, chars=200)
        for _ in range(n)
    ]


def with_writer(path: Path, batch: list[MessageSent]) -> float:
    """CPU seconds to append ``batch`` through the writer, a boundary every 100 events."""
    start = time.process_time()
    with EventLogWriter(str(path)) as writer:
        for i, event in enumerate(batch):
            writer.append(event)
            if i % 100 == 99:
                writer.round_boundary()
    return time.process_time() - start


def baseline(path: Path, batch: list[MessageSent]) -> float:
    """CPU seconds to write the same lines with one open file and the same fsyncs."""
    start = time.process_time()
    with path.open("w") as out:
        for i, event in enumerate(batch):
            out.write(event.model_dump_json() + "\n")
            if i % 100 == 99:
                out.flush()
                os.fsync(out.fileno())
    return time.process_time() - start


def main() -> None:
    """Measure both, three times each, and print the best of each and their ratio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("events", nargs="?", type=int, default=1000)
    n = parser.parse_args().events
    batch = events(n)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ours = min(with_writer(root / f"w{i}.jsonl", batch) for i in range(3))
        plain = min(baseline(root / f"b{i}.jsonl", batch) for i in range(3))
    print(f"events {n}: writer {ours * 1000:.1f} ms CPU, plain json lines {plain * 1000:.1f} ms")
    print(f"ratio writer / plain: {ours / plain:.2f}")


if __name__ == "__main__":
    main()
