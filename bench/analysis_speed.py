"""How fast ``glossogen analyze`` answers a two-key grouped mean with intervals over a cohort.

Builds a synthetic cohort under a scratch folder (``--keep DIR`` to reuse one): one 10-round
scripted veyru run is played through the library on a virtual clock, given a small report
(``round_success`` per round), and copied ``--runs`` times (default 10,000) with new run ids
and, in ``config.json``, a seed and one of two ``round_budget_chars`` and two
``channel_noise_level`` values (copies of ``bench/export_speed.py``'s template and report).

The query: the round grain, by ``round_budget_chars`` and ``channel_noise_level``,
``round_success:mean`` with its 95% interval (a cluster bootstrap, 2,000 resamples, whole runs
resampled).

*CLI cold* and *CLI warm* time ``glossogen analyze ... --json`` as a whole process (interpreter
start and imports included): wall seconds, and CPU seconds (user plus system, which a machine
shared with other work inflates less; the 1-minute load average is printed before and after).
Cold runs with no projection cache under the runs dir (every log read, the cache written),
warm is the same command again (the cache read, each run's files stamped).
Each one's peak memory is its own ``ru_maxrss`` (``os.wait4``). Then, in a child process (so
its peak memory is its own): the same answer through the library warm (``answer``, the cache),
and without the cache (``answer(..., cache=False)``, every log read, as before the cache), which
must equal the CLI's JSON; the parts of the warm answer (reading the cache file, selecting
through it, the round rows); and a bare polars group-by mean of the same numbers (the round rows'
two keys and ``round_success``), with the ratio of each warm answer to it.

Run: ``python bench/analysis_speed.py`` (``--runs 1000`` for a quick look).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
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


def measure(runs_dir: str, runs: int, out: str) -> dict[str, float]:
    """Time the query through the library with and without the cache, its parts, a bare group-by.

    Writes the uncached answer's JSON to ``out`` (the parent compares the CLI's with it).
    """
    import polars as pl

    from glossogen.analysis import Measure, Query, answer
    from glossogen.analysis._projection import Projection
    from glossogen.analysis._select import select_rows

    query = Query(grain="round", by=["round_budget_chars", "channel_noise_level"],
                  measures=[Measure(field="round_success", agg="mean")], max_runs=runs)  # fmt: skip
    figures: dict[str, float] = {"peak MiB before": _peak_mib()}
    t0 = time.perf_counter()
    result = answer(runs_dir, query)
    figures["warm, library s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    Projection.open(runs_dir)
    figures["read the cache file s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, frame, *_ = select_rows(runs_dir, query.selection, runs, "round")
    figures["select and round rows through the cache s"] = time.perf_counter() - t0
    figures["peak MiB, warm"] = _peak_mib()
    assert frame is not None
    keys = ["knob.round_budget_chars", "knob.channel_noise_level"]
    numbers = frame.select([*keys, "metric.round_success"])
    best = float("inf")
    for _ in range(3):  # the fastest of three: the first call also starts polars' threads
        t0 = time.perf_counter()
        bare = numbers.group_by(keys).agg(pl.col("metric.round_success").mean()).sort(keys)
        best = min(best, time.perf_counter() - t0)
    figures["bare group-by s"] = best
    del frame, numbers
    gc.collect()
    t0 = time.perf_counter()
    plain = answer(runs_dir, query, cache=False)
    figures["no cache, library s"] = time.perf_counter() - t0
    assert plain == result, "the cached answer differs from the answer read from the logs"
    Path(out).write_text(plain.model_dump_json())
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


def cli(runs_dir: Path, runs: int, out: Path) -> tuple[float, float, float]:
    """Run ``glossogen analyze`` once: its wall seconds, CPU seconds (user + system) and peak
    MiB (its JSON into ``out``)."""
    command = [str(Path(sys.executable).with_name("glossogen")), "analyze", "--runs-dir",
               str(runs_dir), "--grain", "round", "--by", "round_budget_chars,channel_noise_level",
               "--measure", "round_success:mean", "--max-runs", str(runs), "--json"]  # fmt: skip
    with out.open("wb") as stdout:
        t0 = time.perf_counter()
        child = subprocess.Popen(command, stdout=stdout)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - t0
    assert os.waitstatus_to_exitcode(status) == 0, f"{command} exited {status}"
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    """Build the cohort, measure in a child process, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="Runs in the cohort.")
    parser.add_argument("--keep", help="Folder to build (or reuse) the cohort in.")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the child: a built runs dir
    parser.add_argument("--out", help=argparse.SUPPRESS)  # the child: where its answer goes
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.runs, args.out)))
        return
    if args.keep:
        scratch = Path(args.keep)
        scratch.mkdir(parents=True, exist_ok=True)
        report(scratch, args.runs)
        return
    # The 10,000-run cohort is ~14 GB: a scratch one is removed however the bench ends (it was
    # left behind, and two runs of the bench filled this machine's disk).
    with tempfile.TemporaryDirectory(prefix="analysis-bench-") as scratch_dir:
        report(Path(scratch_dir), args.runs)


def report(scratch: Path, runs: int) -> None:
    """Build (or reuse) the cohort under ``scratch``, measure it, print the figures."""
    args = argparse.Namespace(runs=runs)
    t0 = time.perf_counter()
    runs_dir = build_cohort(scratch, args.runs)
    print(f"cohort of {args.runs} runs ready in {time.perf_counter() - t0:.1f} s: {runs_dir}")
    shutil.rmtree(runs_dir / ".glossogen", ignore_errors=True)  # cold: no projection cache
    fig: dict[str, float] = {}
    fig["load average before"] = os.getloadavg()[0]
    for run in ("cold", "warm"):
        wall, cpu, peak = cli(runs_dir, args.runs, scratch / f"{run}.json")
        fig[f"CLI {run} s"], fig[f"CLI {run} CPU s"], fig[f"CLI {run} peak MiB"] = wall, cpu, peak
    cache = runs_dir / ".glossogen" / "analysis_projection.zip"
    fig["cache file MiB"] = cache.stat().st_size / 2**20
    plain = scratch / "plain.json"
    child = subprocess.run(
        [sys.executable, __file__, "--runs", str(args.runs), "--measure", str(runs_dir),
         "--out", str(plain)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    for name in ("cold.json", "warm.json"):
        assert json.loads((scratch / name).read_text()) == json.loads(plain.read_text()), name
    *groups, last = child.stdout.splitlines()
    print("groups (round_budget_chars, channel_noise_level):", *groups, sep="\n")
    fig |= json.loads(last)
    print(f"{'figure':<44} {'value':>10}")
    fig["load average after"] = os.getloadavg()[0]
    for name in ("runs", "rows", "load average before", "load average after", "CLI cold s",
                 "CLI cold CPU s", "CLI warm s", "CLI warm CPU s", "CLI cold peak MiB",
                 "CLI warm peak MiB", "cache file MiB", "warm, library s",
                 "read the cache file s", "select and round rows through the cache s",
                 "no cache, library s", "bare group-by s", "peak MiB before", "peak MiB, warm",
                 "peak MiB, all"):  # fmt: skip
        print(f"{name:<44} {fig[name]:>10.3f}")
    bare = fig["bare group-by s"]
    print(f"warm CLI / bare polars group-by of the same numbers: {fig['CLI warm s'] / bare:.0f}x; "
          f"warm library answer / bare group-by: {fig['warm, library s'] / bare:.0f}x")  # fmt: skip
    print("the CLI's JSON, cold and warm, equals the library's answer read from the logs")
    print("target for 10,000 runs: CLI warm <= 2 s, cold <= 30 s, peak < 500 MiB")


if __name__ == "__main__":
    main()
