"""How fast ``glossogen evaluate`` is over a cohort and on one run, against limits measured here.

Builds a cohort under a scratch folder (``--keep DIR`` to reuse one): one scripted veyru run of
``--rounds`` rounds played through the library on a virtual clock, copied ``--runs`` times with
new run ids (folder name and ``simulation_started.run_id``). Then, each a whole process
(wall s, CPU s, peak resident MiB from ``wait4``):

1. limit: a bare parse of every line of every log of the cohort (orjson), and of one log;
2. ``glossogen evaluate --runs-dir`` over the cohort, every deterministic metric, against a
   running Prefect server (``PREFECT_API_URL``, else one started here): runs per second;
   with the CPU the Prefect server spent on it, when the server is the one started here;
3. the same command again: every run's report is up to date, so all are skipped;
4. ``glossogen evaluate <scenario> --run-dir`` on one run with the server, and with no Prefect
   API configured (scored in-process);
5. when ``GLOSSOGEN_ORIGINAL`` names the original platform's executable (one line says the
   comparison was skipped otherwise): ours in-process and the original evaluating the same
   GlossoGen 0.5 run (the only logs it reads; it evaluates one run per process, with no server)
   with the deterministic metrics both ship under one name, alternately ``--original-repeats``
   times from a fresh copy: median CPU seconds and their ratio.

Every ratio printed is against a figure measured in this run. Run:
``python bench/evaluate_cohort.py --runs 1000`` (a few minutes on a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.baselines import (  # noqa: E402
    bare_parse,
    children_cpu,
    original,
    process,
    side_by_side,
)

BASE_TS = 1796100000
CASE_05 = ROOT / "tests" / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
SHARED_METRICS = ("round_success", "mean_chars_per_message", "mean_chars_per_round",
                  "gzip_compression_ratio")  # fmt: skip
"""The deterministic metrics both we and the original ship under the same name."""


def _play_template(folder: Path, rounds: int) -> Path:
    from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend

    async def play() -> Path:
        request = RunRequest(
            scenario="veyru", model="scripted", provider="scripted", runs_dir=str(folder),
            config="knobs_default", overrides=[f"round_count={rounds}"],
        )  # fmt: skip
        plan = plan_run(request)
        claimed = claim_run(plan, request.runs_dir, now_unix=BASE_TS - 1)
        session = open_session(plan, claimed, clock_start=datetime(2026, 11, 29, tzinfo=UTC))
        for n in range(1, rounds + 1):
            await session.play_round(n)
        session.finish(price_spend(claimed), "completed")
        return Path(claimed.url)

    return asyncio.run(play())


def build_cohort(scratch: Path, runs: int, rounds: int) -> tuple[Path, Path, int]:
    """Create (or reuse) the cohort; return (runs dir, one run's folder, events per log)."""
    cohort = scratch / f"runs-{runs}"
    template = scratch / "template"
    if not cohort.exists():
        shutil.rmtree(template, ignore_errors=True)
        played = _play_template(template, rounds)
        log = (played / "veyru.jsonl").read_bytes()
        config = (played / "config.json").read_bytes()
        source = f"veyru/{played.name}".encode()
        head, _, rest = log.partition(b"\n")
        for i in range(runs):
            folder = cohort / "veyru" / str(BASE_TS + i)
            folder.mkdir(parents=True)
            new_head = head.replace(source, f"veyru/{BASE_TS + i}".encode())
            (folder / "veyru.jsonl").write_bytes(new_head + b"\n" + rest)
            (folder / "config.json").write_bytes(config)
    one = scratch / "one" / "veyru" / str(BASE_TS)
    events = sum(1 for line in (cohort / "veyru" / str(BASE_TS) / "veyru.jsonl").open("rb"))
    return cohort, one, events


def _fresh_05(run: Path) -> None:
    """Put a fresh copy of the GlossoGen 0.5 test run at ``run`` (no report, no cache)."""
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(CASE_05, run)


def _fresh_one(cohort: Path, one: Path) -> None:
    shutil.rmtree(one.parent.parent, ignore_errors=True)
    one.parent.mkdir(parents=True)
    shutil.copytree(cohort / "veyru" / str(BASE_TS), one, ignore=shutil.ignore_patterns("*report*"))


def main() -> None:
    """Build the cohort, measure, print the table and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--keep", help="Folder to build (or reuse) the cohort in.")
    parser.add_argument(
        "--original-repeats", type=int, default=5, metavar="N",
        help="Paired runs of ours and the original on one run (default 5; the medians are "
        "printed); only when GLOSSOGEN_ORIGINAL names the original's executable.",
    )  # fmt: skip
    args = parser.parse_args()
    if args.runs < 1 or args.rounds < 1 or args.original_repeats < 1:
        parser.error(f"--runs, --rounds and --original-repeats must be at least 1, got "
                     f"{args.runs}, {args.rounds}, {args.original_repeats}")  # fmt: skip
    # Before anything is spent: a GLOSSOGEN_ORIGINAL naming no executable stops here.
    exe = original()
    from glossogen.evaluation import get_metric, metric_names

    deterministic = ",".join(n for n in metric_names() if get_metric(n).kind == "deterministic")
    scratch = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="eval-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cohort, one, events = build_cohort(scratch, args.runs, args.rounds)
    for report in cohort.glob("*/*/*_report.json"):
        report.unlink()  # a reused cohort starts unevaluated
    print(f"cohort: {args.runs} runs of {args.rounds} rounds ({events} events per log), "
          f"ready in {time.perf_counter() - t0:.1f} s under {scratch}")  # fmt: skip
    glossogen = [sys.executable, "-m", "glossogen"]
    rows: list[tuple[str, float, float, float]] = []
    server: dict[str, float] = {}
    with ExitStack() as stack:
        from deployments.local_server import QUIET_ENV, local_prefect_server

        own_server = not os.environ.get("PREFECT_API_URL")
        api = os.environ.get("PREFECT_API_URL") or stack.enter_context(local_prefect_server())

        def served_by(name: str, cmd: list[str]) -> tuple[float, float, float]:
            before = children_cpu() if own_server else None
            measured = process(cmd, with_api)
            after = children_cpu() if own_server else None
            if before is not None and after is not None:
                server[name] = after - before
            return measured

        with_api = {**QUIET_ENV, "PREFECT_API_URL": api}
        _fresh_one(cohort, one)
        process([*glossogen, "--help"])  # warm the bytecode and page cache once
        limit_all = bare_parse(cohort)
        limit_one = bare_parse(one.parent.parent)
        rows.append((f"limit: bare parse of {args.runs} logs (orjson)", *limit_all))
        rows.append(("limit: bare parse of one log (orjson)", *limit_one))
        rows.append(("limit: glossogen --help (CLI start-up)", *process([*glossogen, "--help"])))
        cohort_cmd = [*glossogen, "evaluate", "--runs-dir", str(cohort), "--metrics", deterministic]
        first = served_by("cohort", cohort_cmd)
        rows.append((f"evaluate --runs-dir, {args.runs} runs (server)", *first))
        again = served_by("again", cohort_cmd)
        rows.append((f"evaluate --runs-dir again: {args.runs} skipped", *again))
        single = [
            *glossogen,
            "evaluate",
            "veyru",
            "--run-dir",
            str(one),
            "--metrics",
            deterministic,
        ]
        served = served_by("one", single)
        rows.append(("evaluate --run-dir, one run (server)", *served))
        _fresh_one(cohort, one)
        no_api = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        no_api["PREFECT_HOME"] = str(scratch / "no-prefect-home")
        alone = process(single, no_api, inherit=False)
        rows.append(("evaluate --run-dir, one run (no API: in-process)", *alone))
    print(f"{'process':<52} {'wall s':>7} {'CPU s':>7} {'peak MiB':>9}")
    for name, wall, cpu, peak in rows:
        print(f"{name:<52} {wall:>7.2f} {cpu:>7.2f} {peak:>9.1f}")
    print(f"cohort: {args.runs / first[0]:.1f} runs/s wall, {args.runs / first[1]:.1f} runs/CPU-s, "
          f"{first[1] / limit_all[1]:.1f}x the CPU of a bare parse of the same logs; "
          f"skipping all: {again[1] / limit_all[1]:.1f}x")  # fmt: skip
    print(f"one run, server: {served[1]:.2f} CPU-s = {served[1] / limit_one[1]:.1f}x a bare "
          f"parse process; in-process: {alone[1]:.2f} CPU-s = {alone[1] / limit_one[1]:.1f}x")  # fmt: skip
    if server:
        print(f"Prefect server CPU-s: cohort {server['cohort']:.2f}, again {server['again']:.2f}, "
              f"one run {server['one']:.2f}; cohort, command and server together: "
              f"{first[1] + server['cohort']:.2f} CPU-s = "
              f"{(first[1] + server['cohort']) / limit_all[1]:.1f}x a bare parse")  # fmt: skip
    else:
        print("Prefect server CPU: not measured (PREFECT_API_URL names a server not started here)")
    if exe is not None:
        # The original reads only its own log format, evaluates one run per process and has no
        # server: both evaluate the same GlossoGen 0.5 run, a fresh copy each time, ours
        # in-process, with the deterministic metrics both ship under one name.
        run = scratch / "original-05" / "veyru" / CASE_05.name
        metrics = ",".join(SHARED_METRICS)
        evaluate = ["evaluate", "veyru", "--run-dir", str(run), "--metrics", metrics]
        # The original builds its judge's client before it knows no metric calls it, and that
        # needs a key; these metrics make no call, so the key is never sent anywhere.
        theirs_env = {**no_api, "ANTHROPIC_API_KEY": "not-used-by-deterministic-metrics"}
        paired = side_by_side(
            {"ours": ([*glossogen, *evaluate], no_api),
             "original": ([exe, *evaluate, "--model", "claude-haiku-4-5", "--provider",
                           "anthropic"], theirs_env)},
            args.original_repeats, reset=lambda: _fresh_05(run),
        )  # fmt: skip
        ours, theirs = paired["ours"], paired["original"]
        print(f"original platform, one GlossoGen 0.5 run ({metrics}), medians of "
              f"{args.original_repeats} paired runs: ours in-process {ours[1]:.2f} CPU-s, wall "
              f"{ours[0]:.2f} s; original {theirs[1]:.2f} CPU-s, wall {theirs[0]:.2f} s; "
              f"ours/original CPU {ours[1] / theirs[1]:.2f}x")  # fmt: skip
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
