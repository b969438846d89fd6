"""How fast the run browser answers: the run list over 5,000 runs, and a live event's delay.

1. **Run list.** One scripted prisoners_dilemma run is played through the library on a virtual
   clock, then laid out 5,000 times under new run ids (each folder's log a hard link to the
   played one, its own ``config.json`` and ``labels.json``). The first page of ``/`` is
   fetched over real HTTP from ``create_app`` served by uvicorn on 127.0.0.1: once cold (a
   fresh server: every run's record read), then warm (the cache keyed by each log's size and
   modification time: nothing read again). Printed: cold seconds, the median of 5 warm fetches,
   and warm / cold.
2. **Live delay.** A run folder whose writer lock this process holds (so the stream stays
   open) gets one event line appended every 0.25 s; a real headless Chromium (Debian's, through
   Playwright) has the run page's ``EventSource`` open on
   ``/api/g/local/runs/<run>/events``. The delay is the browser's ``Date.now()`` at arrival
   minus the wall time of the append (one machine, one clock). Printed: median and worst of 20
   events, and the ratio of the median to the stream's poll interval (the floor of a polling
   reader; 0.5 would be an average wait of half a poll).

Run: ``python bench/browser_speed.py`` (about a minute on a 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = 5000
BASE_TS = 1790000000


def _play(folder: Path) -> Path:
    from tests.fixtures.played_runs import play_run

    run = play_run(str(folder), scenario="prisoners_dilemma", rounds=1,
                   overrides=("postmortem_enabled=false",))  # fmt: skip
    return Path(run.url)


def _lay_out(template: Path, runs: Path) -> None:
    log = template / "prisoners_dilemma.jsonl"
    config = json.loads((template / "config.json").read_text())
    for i in range(RUNS):
        folder = runs / "prisoners_dilemma" / str(BASE_TS + i)
        folder.mkdir(parents=True)
        os.link(log, folder / "prisoners_dilemma.jsonl")
        (folder / "config.json").write_text(json.dumps({**config, "seed": i}))
        (folder / "labels.json").write_text(json.dumps({"arm": f"a{i % 7}"}))


class _Server:
    """``create_app(runs_dir)`` under uvicorn in a thread, on a loopback socket bound here
    (port from the OS) and handed to uvicorn, so no other process can take the port first."""

    def __init__(self, runs_dir: str) -> None:
        import uvicorn

        from glossogen.server import create_app

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        config = uvicorn.Config(create_app(runs_dir), log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def run_list(runs: Path) -> None:
    import httpx

    with _Server(str(runs)) as base:
        started = time.perf_counter()
        first = httpx.get(base + "/", timeout=600)
        cold = time.perf_counter() - started
        assert first.status_code == 200 and "showing 50 of 5000" in first.text, first.text[-300:]
        warm = []
        for _ in range(5):
            started = time.perf_counter()
            httpx.get(base + "/", timeout=600).raise_for_status()
            warm.append(time.perf_counter() - started)
    median = statistics.median(warm)
    print(f"run list, first page over {RUNS} runs: cold {cold:.3f} s, warm {median:.3f} s "
          f"(median of 5), warm / cold = {median / cold:.3f}")  # fmt: skip


def live_delay(scratch: Path) -> None:
    from playwright.sync_api import sync_playwright

    from glossogen.server._live_routes import POLL_SECONDS
    from glossogen.storage import RunStore

    runs = scratch / "live"
    template = _play(runs)
    lines = (template / "prisoners_dilemma.jsonl").read_text().splitlines(keepends=True)
    head, body = lines[:6], [ln for ln in lines[6:] if '"simulation_ended"' not in ln][:20]
    log = template / "prisoners_dilemma.jsonl"
    log.write_text("".join(head))
    folder = RunStore(str(runs)).open_run(f"prisoners_dilemma/{template.name}")
    lock = folder.lock()  # the run is live while this process holds its writer lock
    sent: dict[str, float] = {}
    try:
        with _Server(str(runs)) as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])  # fmt: skip
            page = browser.new_page()
            page.goto(f"{base}/runs/{folder.run_id}")
            page.evaluate(
                """url => { window.arrivals = {}; const s = new EventSource(url);
                   s.onmessage = null;
                   ['message_sent','tool_call_invoked','tool_result_received','llm_response_received',
                    'agent_history_appended','round_ended','round_result_recorded','round_completed',
                    'prisoners_dilemma_move_locked','prisoners_dilemma_round_scored',
                    'injection_delivered','round_started']
                   .forEach(t => s.addEventListener(t, m => { window.arrivals[m.lastEventId] = Date.now(); })); }""",
                f"/api/g/local/runs/{folder.run_id}/events?last_event_id="
                + json.loads(head[-1])["event_id"],
            )
            time.sleep(1.0)
            for line in body:
                with log.open("a") as f:
                    f.write(line)
                    f.flush()
                sent[json.loads(line)["event_id"]] = time.time() * 1000
                time.sleep(0.25)
            time.sleep(1.0)
            arrivals = page.evaluate("window.arrivals")
            browser.close()
    finally:
        lock.release()
    delays = [(arrivals[i] - t) / 1000 for i, t in sent.items() if i in arrivals]
    assert len(delays) == len(sent), f"{len(sent) - len(delays)} events never arrived"
    median = statistics.median(delays)
    print(f"live delay, append to arrival in the browser over {len(delays)} events: median "
          f"{median:.3f} s, worst {max(delays):.3f} s; median / poll interval "
          f"({POLL_SECONDS} s) = {median / POLL_SECONDS:.2f}")  # fmt: skip


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help
    scratch = Path(tempfile.mkdtemp(prefix="glossogen-browser-bench-"))
    try:
        template = _play(scratch / "template")
        runs = scratch / "runs"
        _lay_out(template, runs)
        run_list(runs)
        live_delay(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
