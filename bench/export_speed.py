"""How fast ``glossogen export`` is, and how its memory grows with the selection.

Builds cohorts under a scratch folder (``--keep DIR`` to reuse one):

- 1,000 runs of 10 rounds (veyru, 2 agents): one scripted run is played through the library on
  a virtual clock, evaluated by a small report (the contract's shape: ``round_success`` per
  round, ``mean_chars_per_message`` per agent), then copied 1,000 times with new run ids
  (folder, ``simulation_started.run_id``), varied labels and seeds in ``config.json``;
- the first 100 of them as a second cohort;
- 1,000 copies of the real GlossoGen 0.5 run folder (``tests/cases/glossogen-0.5-runs``): no
  ``config.json``, no summaries to lean on, every log scanned.

Each figure is one whole ``glossogen export`` process (``python -m glossogen export``): wall
seconds (the fastest of three for the quick ones: the machine is shared), CPU seconds and peak
resident memory (``wait4``'s rusage; a child's peak includes the bench's own peak when it starts
the child, so on the run that builds the cohorts no figure reads below about 90 MiB: build them
once with ``--keep DIR`` and measure on a second run). Every ratio printed is against a baseline measured in the
same run on the same logs (``bench/baselines.py``): the CLI's own start-up, and the limit of any
reader of these logs, a process that parses every line of every log (orjson, and the standard
library's json); and, when ``GLOSSOGEN_ORIGINAL`` names its executable (skipped with one line
otherwise), the original platform exporting the 1,000 GlossoGen 0.5 folders (the only logs it
reads) with the same arguments as ours, both tables sets, ours and the original run alternately
``--original-repeats`` times from the same folders: median CPU seconds and their ratio.

Run: ``python bench/export_speed.py`` (about a minute on a 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.baselines import bare_parse, original, process, side_by_side  # noqa: E402

CASE_05 = ROOT / "tests" / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
BASE_TS = 1796000000
ROUNDS = 10


def _play_template(folder: Path) -> Path:
    """Play one 10-round scripted veyru run into ``folder`` and return its run folder."""
    from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend

    async def play() -> Path:
        request = RunRequest(
            scenario="veyru",
            model="scripted",
            provider="scripted",
            runs_dir=str(folder),
            config="knobs_default",
            overrides=[f"round_count={ROUNDS}"],
        )
        plan = plan_run(request)
        claimed = claim_run(plan, request.runs_dir, now_unix=BASE_TS - 1)
        session = open_session(plan, claimed, clock_start=datetime(2026, 11, 29, tzinfo=UTC))
        for n in range(1, ROUNDS + 1):
            await session.play_round(n)
        session.finish(price_spend(claimed), "completed")
        return Path(claimed.url)

    return asyncio.run(play())


def _report(run_id: str, verdicts: list[bool]) -> dict:
    def entry(name: str, unit: str, score: float, **extra: object) -> dict:
        base = {
            "name": name, "kind": "deterministic", "version": 1, "unit": unit, "status": "ok",
            "score": score, "summary": name, "rounds": ROUNDS, "per_round": [], "per_agent": [],
            "replicas": None, "agreement": None, "judge": None, "cost_usd": 0.0,
            "sidecar": None, "error": None,
        }  # fmt: skip
        base.update(extra)
        return base

    won = [{"round_number": i + 1, "value": float(ok), "team_id": "team", "note": None}
           for i, ok in enumerate(verdicts)]  # fmt: skip
    return {
        "report_version": 1, "run_id": run_id, "scenario": "veyru", "log_sha256": "0" * 64,
        "updated_at": "2026-11-29T12:00:00Z",
        "metrics": {
            "round_success": entry("round_success", "share of rounds won",
                                   sum(verdicts) / len(verdicts), per_round=won),
            "mean_chars_per_message": entry(
                "mean_chars_per_message", "characters", 30.0,
                per_agent=[{"agent_id": "field_observer", "value": 28.0, "note": None},
                           {"agent_id": "stabilization_engineer", "value": 32.0, "note": None}],
            ),
        },
        "evaluation_cost": {"judge_usd": 0.0, "probe_usd": 0.0, "total_usd": 0.0},
    }  # fmt: skip


def build_cohorts(scratch: Path) -> tuple[Path, Path, Path]:
    """Create (or reuse) the 1,000-run, 100-run and 0.5 cohorts under ``scratch``."""
    big, small, old = scratch / "runs-1000", scratch / "runs-100", scratch / "runs-05"
    if big.exists() and small.exists() and old.exists():
        return big, small, old
    template = _play_template(scratch / "template")
    log = (template / "veyru.jsonl").read_bytes()
    config = json.loads((template / "config.json").read_text())
    verdicts = [
        json.loads(line)["success"]
        for line in log.splitlines()
        if b'"round_result_recorded"' in line
    ]
    source_id = f"veyru/{template.name}".encode()
    for target, count in ((big, 1000), (small, 100)):
        for i in range(count):
            ts = BASE_TS + i
            folder = target / "veyru" / str(ts)
            folder.mkdir(parents=True)
            head, _, rest = log.partition(b"\n")
            (folder / "veyru.jsonl").write_bytes(
                head.replace(source_id, f"veyru/{ts}".encode()) + b"\n" + rest
            )
            (folder / "config.json").write_text(json.dumps({**config, "seed": i}))
            labels = {"budget": str(100 * (i % 8 + 1)), f"batch_{i % 3}": True}
            (folder / "labels.json").write_text(json.dumps(labels))
            (folder / "veyru_report.json").write_text(json.dumps(_report(f"veyru/{ts}", verdicts)))
    for i in range(1000):
        shutil.copytree(CASE_05, old / "veyru" / str(BASE_TS + i))
    return big, small, old


def _pristine(old: Path, out: Path) -> None:
    """Return the 0.5 cohort to its copied state (only each run's log) and remove ``out``."""
    for path in old.glob("*/*/*"):
        if path.name != "veyru.jsonl":
            path.unlink()
    shutil.rmtree(out, ignore_errors=True)


def _process(args: list[str]) -> tuple[float, float, float]:
    """Run one process; return (wall seconds, CPU seconds, peak RSS MiB)."""
    return process(args)


def measure(runs_dir: Path, out: Path, frames: str, repeats: int = 1) -> tuple[float, float, float]:
    """Run ``glossogen export`` ``repeats`` times; return the fastest (wall s, CPU s, MiB).

    The machine is shared, so the fastest of a few runs is the figure least disturbed by
    other work; CPU seconds are printed beside it as a load-independent check.
    """
    best: tuple[float, float, float] | None = None
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        got = _process([sys.executable, "-m", "glossogen", "export", "--runs-dir",
                        str(runs_dir), "--out", str(out), "--frames", frames])  # fmt: skip
        best = got if best is None or got[0] < best[0] else best
    assert best is not None
    return best


def main() -> None:
    """Build the cohorts, measure each export, print the figures and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="Folder to build (or reuse) the cohorts in.")
    parser.add_argument(
        "--original-repeats", type=int, default=5, metavar="N",
        help="Paired runs of ours and the original per table set (default 5; the medians are "
        "printed); only when GLOSSOGEN_ORIGINAL names the original's executable.",
    )  # fmt: skip
    args = parser.parse_args()
    if args.original_repeats < 1:
        parser.error(f"--original-repeats must be at least 1, got {args.original_repeats}")
    # Before anything is spent: a GLOSSOGEN_ORIGINAL naming no executable stops here.
    exe = original()
    scratch = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="export-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    big, small, old = build_cohorts(scratch)
    _pristine(old, scratch / "out")  # a kept cohort the original has read holds its caches
    print(f"cohorts ready in {time.perf_counter() - t0:.1f} s under {scratch}")
    default = "run_level,round_level,agent_level"
    out = scratch / "out"
    measure(small, out, "run_level")  # warm the page cache and bytecode once
    startup = min(_process([sys.executable, "-m", "glossogen", "--help"]) for _ in range(3))
    both = "message_level,round_context"
    rows: list[tuple[str, float, float, float]] = [
        ("baseline: glossogen --help (CLI start-up)", *startup),
        ("limit: bare parse, 1,000 logs (orjson)", *bare_parse(big)),
        ("limit: bare parse, 1,000 logs (stdlib json)", *bare_parse(big, "json")),
        ("limit: bare parse, 1,000 0.5 logs (orjson)", *bare_parse(old)),
        ("default tables, 100 runs", *measure(small, out, default, 3)),
        ("default tables, 1,000 runs", *measure(big, out, default, 3)),
        ("message_level,round_context, 100 runs", *measure(small, out, both)),
        ("message_level,round_context, 1,000 runs", *measure(big, out, both)),
        ("0.5 folders, default tables, 1,000", *measure(old, out, default, 3)),
        ("0.5 folders, message_level,round_context, 1,000", *measure(old, out, both)),
    ]  # fmt: skip
    print(f"{'process':<50} {'wall s':>7} {'CPU s':>6} {'peak MiB':>9}")
    for name, wall, cpu, peak in rows:
        print(f"{name:<50} {wall:>7.2f} {cpu:>6.2f} {peak:>9.1f}")
    fig = {name: (wall, cpu, peak) for name, wall, cpu, peak in rows}
    parse, parse_json = (
        fig["limit: bare parse, 1,000 logs (orjson)"],
        fig["limit: bare parse, 1,000 logs (stdlib json)"],
    )
    for name in ("default tables, 1,000 runs", "message_level,round_context, 1,000 runs"):
        cpu = fig[name][1]
        print(f"{name}: {cpu:.2f} CPU-s = {cpu / parse[1]:.2f}x a bare orjson parse of the same "
              f"logs, {cpu / parse_json[1]:.2f}x a stdlib json parse")  # fmt: skip
    old_parse = fig["limit: bare parse, 1,000 0.5 logs (orjson)"][1]
    for name in (
        "0.5 folders, default tables, 1,000",
        "0.5 folders, message_level,round_context, 1,000",
    ):
        print(f"{name}: {fig[name][1] / old_parse:.2f}x a bare orjson parse of the same logs")
    for table, small_name, big_name in (
        ("default tables", "default tables, 100 runs", "default tables, 1,000 runs"),
        ("message_level,round_context", "message_level,round_context, 100 runs",
         "message_level,round_context, 1,000 runs"),
    ):  # fmt: skip
        growth = fig[big_name][2] / fig[small_name][2]
        print(f"{table}: peak memory 100 -> 1,000 runs {fig[small_name][2]:.0f} -> "
              f"{fig[big_name][2]:.0f} MiB (x{growth:.2f})")  # fmt: skip
    for frames in (default, both) if exe else ():
        # The original reads only its own log format (ours fails its validation of
        # simulation_ended), so both read the 0.5 folders; each process starts from the same
        # folders (the original writes a run_summary_cache.json into each run it reads).
        export = ["export", "--runs-dir", str(old), "--out", str(out), "--frames", frames]
        paired = side_by_side(
            {"ours": ([sys.executable, "-m", "glossogen", *export], None),
             "original": ([str(exe), *export], None)},
            args.original_repeats, reset=lambda: _pristine(old, out),
        )  # fmt: skip
        ours, theirs = paired["ours"], paired["original"]
        print(f"original platform, 0.5 folders, {frames}, 1,000 runs, medians of "
              f"{args.original_repeats} paired runs: ours {ours[1]:.2f} CPU-s, wall {ours[0]:.2f} s, "
              f"{ours[2]:.0f} MiB; original {theirs[1]:.2f} CPU-s, wall {theirs[0]:.2f} s, "
              f"{theirs[2]:.0f} MiB; ours/original CPU {ours[1] / theirs[1]:.2f}x")  # fmt: skip
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
