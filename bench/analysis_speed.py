"""How fast ``glossogen analyze`` answers a two-key grouped mean with intervals over a cohort.

Builds a synthetic cohort under a scratch folder (``--keep DIR`` to reuse one): one 10-round
scripted veyru run is played through the library on a virtual clock, given a small report
(``round_success`` per round), and copied ``--runs`` times (default 10,000) with new run ids
and, in ``config.json``, a seed and one of two ``round_budget_chars`` and two
``channel_noise_level`` values (copies of ``bench/export_speed.py``'s template and report).

The query, through the library the CLI, REST and MCP call (``glossogen.analysis.answer``):
the round grain, by ``round_budget_chars`` and ``channel_noise_level``, ``round_success:mean``
with its 95% interval (a cluster bootstrap, 2,000 resamples, whole runs resampled).

It is timed in a child process started after the cohort is written (so the child's peak
memory is its own): *cold*, the first answer in that process (imports done, nothing read yet);
*warm*, the same query again in the same process. There is no per-run projection cache yet,
so a warm answer re-reads every log as a cold one does (the page cache is warm for both: the
cohort was just written). *warm, serve's run cache* is the same answer selected through the
run list's in-process cache of run records (``server/_run_index.RunCache``, keyed by each
file's stamp), as ``glossogen serve``'s analysis routes select. Beside them, in the same child: the selection alone
(``select_runs``), the round rows alone (``grain_frame``), and a bare polars group-by mean of
the same numbers (the round rows' two keys and ``round_success``), with the ratio of the warm
answer to it. Peak memory is the child's ``ru_maxrss``.

Run: ``python bench/analysis_speed.py`` (``--runs 1000`` for a quick look).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.export_speed import BASE_TS, _play_template, _report  # noqa: E402

BUDGETS = (300, 600)
NOISES = (0.0, 0.1)


def build_cohort(folder: Path, runs: int) -> Path:
    """Create (or reuse) ``runs`` copies of one played run under ``folder/runs-<runs>``."""
    target = folder / f"runs-{runs}"
    if (target / "complete").exists():
        return target
    template = _play_template(folder / "template")
    log = (template / "veyru.jsonl").read_bytes()
    config = json.loads((template / "config.json").read_text())
    verdicts = [json.loads(line)["success"] for line in log.splitlines()
                if b'"round_result_recorded"' in line]  # fmt: skip
    source_id = f"veyru/{template.name}".encode()
    head, _, rest = log.partition(b"\n")
    for i in range(runs):
        ts = BASE_TS + i
        run = target / "veyru" / str(ts)
        run.mkdir(parents=True, exist_ok=True)
        (run / "veyru.jsonl").write_bytes(
            head.replace(source_id, f"veyru/{ts}".encode()) + b"\n" + rest
        )
        knobs = {"seed": i, "round_budget_chars": BUDGETS[i % 2],
                 "channel_noise_level": NOISES[(i // 2) % 2]}  # fmt: skip
        (run / "config.json").write_text(json.dumps({**config, **knobs}))
        # Vary the outcome so the groups differ: drop the first win in every third run.
        won = list(verdicts)
        if i % 3 == 0 and True in won:
            won[won.index(True)] = False
        (run / "veyru_report.json").write_text(json.dumps(_report(f"veyru/{ts}", won)))
    (target / "complete").write_text(str(runs))
    return target


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(runs_dir: str, runs: int) -> dict[str, float]:
    """Time the query cold and warm, its parts, and the bare group-by (in this process)."""
    import polars as pl

    from glossogen.analysis import Measure, Query, answer, answer_records, grain_frame
    from glossogen.export import select_runs

    query = Query(grain="round", by=["round_budget_chars", "channel_noise_level"],
                  measures=[Measure(field="round_success", agg="mean")], max_runs=runs)  # fmt: skip
    figures: dict[str, float] = {"peak MiB before": _peak_mib()}
    t0 = time.perf_counter()
    result = answer(runs_dir, query)
    figures["cold s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = answer(runs_dir, query)
    figures["warm s"] = time.perf_counter() - t0
    assert again == result
    figures["peak MiB, cold and warm"] = _peak_mib()
    t0 = time.perf_counter()
    records = select_runs(runs_dir, query.selection, max_runs=runs).records
    figures["select s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    frame = grain_frame(records, "round")
    figures["round rows s"] = time.perf_counter() - t0
    keys = ["knob.round_budget_chars", "knob.channel_noise_level"]
    numbers = frame.select([*keys, "metric.round_success"])
    best = float("inf")
    for _ in range(3):  # the fastest of three: the first call also starts polars' threads
        t0 = time.perf_counter()
        bare = numbers.group_by(keys).agg(pl.col("metric.round_success").mean()).sort(keys)
        best = min(best, time.perf_counter() - t0)
    figures["bare group-by s"] = best
    del again, records, frame, numbers
    gc.collect()
    from glossogen.server._run_index import RunCache  # imports the server's stack too

    cache = RunCache()  # what `glossogen serve` selects through (REST's analysis routes)
    select_runs(runs_dir, query.selection, max_runs=runs, load=cache.load)
    t0 = time.perf_counter()
    cached = select_runs(runs_dir, query.selection, max_runs=runs, load=cache.load).records
    figures["select, run cache warm s"] = time.perf_counter() - t0
    assert answer_records(cached, query) == result
    del cached
    t0 = time.perf_counter()
    answer_records(select_runs(runs_dir, query.selection, max_runs=runs, load=cache.load).records,
                   query)  # fmt: skip
    figures["warm, serve's run cache s"] = time.perf_counter() - t0
    figures["peak MiB, all"] = _peak_mib()
    figures["runs"] = result.runs
    figures["rows"] = result.rows
    for group in result.groups:
        cell = group.cells[0]
        assert cell.interval is not None
        print(f"  {group.keys}: mean {cell.value:.4f} n {cell.n} runs {cell.runs} "
              f"[{cell.interval.low:.4f}, {cell.interval.high:.4f}] {cell.interval.method}")  # fmt: skip
    engine = sorted(round(g.cells[0].value or 0.0, 12) for g in result.groups)
    assert engine == sorted(round(v, 12) for v in bare["metric.round_success"].to_list())
    return figures


def main() -> None:
    """Build the cohort, measure in a child process, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="Runs in the cohort.")
    parser.add_argument("--keep", help="Folder to build (or reuse) the cohort in.")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the child: a built runs dir
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.runs)))
        return
    scratch = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="analysis-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs_dir = build_cohort(scratch, args.runs)
    print(f"cohort of {args.runs} runs ready in {time.perf_counter() - t0:.1f} s: {runs_dir}")
    child = subprocess.run(
        [sys.executable, __file__, "--runs", str(args.runs), "--measure", str(runs_dir)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    *groups, last = child.stdout.splitlines()
    print("groups (round_budget_chars, channel_noise_level):", *groups, sep="\n")
    fig = json.loads(last)
    print(f"{'figure':<44} {'value':>10}")
    for name in ("runs", "rows", "cold s", "warm s", "select s", "round rows s",
                 "select, run cache warm s", "warm, serve's run cache s", "bare group-by s",
                 "peak MiB before", "peak MiB, cold and warm", "peak MiB, all"):  # fmt: skip
        print(f"{name:<44} {fig[name]:>10.3f}")
    bare = fig["bare group-by s"]
    served = fig["warm, serve's run cache s"]
    print(f"warm answer / bare polars group-by of the same numbers: {fig['warm s'] / bare:.0f}x; "
          f"with serve's run cache warm: {served / bare:.0f}x")  # fmt: skip
    print("target for 10,000 runs: warm <= 2 s, cold <= 30 s, peak < 500 MiB "
          "(no per-run projection cache yet: warm re-reads every log)")  # fmt: skip


if __name__ == "__main__":
    main()
