"""The 30-run cohort whose reports are pinned byte for byte (``tests/cases/evaluation-cohort30``).

Its 7 played run folders (logs gzipped; scripted veyru and prisoners_dilemma runs, one resumed
after a kill, one fork) are committed, since a played log holds random event ids: a log played
again hashes differently, and its report says so. With the GlossoGen 0.5 run of ``tests/cases`` they are the
8 originals; :func:`assemble` copies them into 30 folders (22 copies under new folder names, the
copies' logs unchanged), and two copies get damaged lines so skipped lines are counted in their
reports.

``expected/`` holds every report and sidecar a cohort evaluation writes, as the code of
2026-12-02 (before the cohort read each log once, batched) wrote them with ``updated_at`` pinned
to :data:`NOW`, under ``all/`` (``--metrics all``, no judge: the probe answers offline) and
``deterministic/`` (every deterministic metric). Rebuild: ``python -m
tests.evaluation.cohort30 --play`` (new logs, then new expected bytes) or without ``--play``
(new expected bytes from the committed logs; only when the report contract changes on purpose).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import shutil
from datetime import UTC, datetime
from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "cases"
HERE = CASES / "evaluation-cohort30"
SOURCES = HERE / "runs"
EXPECTED = HERE / "expected"
CASE_05 = CASES / "glossogen-0.5-runs" / "veyru" / "1795939736"
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
"""The ``updated_at`` of every pinned report."""

DAMAGED = {
    # A message_sent line without channel or sender (invalid) and a line of an event type
    # nothing installed knows (unknown), after line 30 of the copy's log.
    "veyru/1797000003": (
        30,
        '{"event_type":"message_sent","round_number":1}\n'
        '{"event_id":"x","event_type":"not_installed_anywhere","schema_version":2}\n',
    ),
    # A torn line (a write cut short, then the log went on) after line 12.
    "veyru/1797000004": (12, '{"event_id":"y","event_type":"tool_call_invoked","sche\n'),
    # In this writer's shape: a message_sent without its fields (invalid), an unknown type, a
    # blank line, a round boundary holding NaN (invalid: not JSON), after line 30.
    "veyru/1797000005": (
        30,
        '{"event_id":"00000000-0000-4000-8000-000000000001","event_type":"message_sent",'
        '"schema_version":2,"round_number":1}\n'
        '{"event_id":"00000000-0000-4000-8000-000000000002","event_type":"not_installed_anywhere",'
        '"schema_version":2}\n'
        "\n"
        '{"event_id":"00000000-0000-4000-8000-000000000003","event_type":"round_completed",'
        '"schema_version":2,"round_number":NaN}\n',
    ),
}


def resumed(runs: Path, now_unix: int) -> None:
    """A run killed in round 2 (its log cut there, no ending), then resumed to its end."""
    from tests.export.conftest import _resume, play

    url = Path(play(runs, "veyru", now_unix, "round_count=3", "seed=11"))
    log = url / "veyru.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    second = next(
        i for i, line in enumerate(lines)
        if '"round_started"' in line and '"round_number":2' in line
    )  # fmt: skip
    log.write_text("".join(lines[: second + 6]))
    asyncio.run(_resume(str(url)))
    assert '"run_resumed"' in log.read_text()


def play_sources(dest: Path) -> None:
    """Play the 7 run folders into ``dest``: 5 played, 1 resumed after a kill, 1 fork."""
    from tests.export.conftest import fork, play

    firsts = [
        play(dest, "veyru", 1796000001, "round_count=2", "seed=1"),
        play(dest, "veyru", 1796000002, "round_count=3", "seed=2", "round_budget_chars=200"),
        play(dest, "veyru", 1796000003, "round_count=2", "seed=3"),
        play(dest, "prisoners_dilemma", 1796000004, "round_count=2"),
        play(dest, "prisoners_dilemma", 1796000005, "round_count=3", "seed=5"),
    ]
    resumed(dest, 1796000006)
    fork(dest, firsts[0], 1, 1796000007)


def _commit_sources(dest: Path) -> None:
    """Play the 7 run folders into ``dest`` as committed: logs gzipped, no writer locks."""
    play_sources(dest)
    for lock in dest.glob("*/*/.writer.lock"):
        lock.unlink()
    for log in dest.glob("*/*/*.jsonl"):
        log.with_suffix(".jsonl.gz").write_bytes(gzip.compress(log.read_bytes(), mtime=0))
        log.unlink()


def assemble(runs: Path) -> dict[str, str]:
    """Build the 30-run cohort under ``runs`` from the committed folders.

    Returns:
        Each run id -> the run whose pinned bytes its reports must equal: itself for an
        original or a damaged copy, else the original it copies (a copy's log is the original's
        byte for byte, so its reports are too).
    """
    for packed in sorted(SOURCES.rglob("*.jsonl.gz")):
        log = runs / packed.relative_to(SOURCES).with_suffix("")
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(gzip.decompress(packed.read_bytes()))
    for path in sorted(p for p in SOURCES.rglob("*.json")):
        shutil.copyfile(path, runs / path.relative_to(SOURCES))
    shutil.copytree(CASE_05, runs / "veyru" / CASE_05.name)
    originals = sorted(p for p in runs.glob("*/*") if p.is_dir())
    assert len(originals) == 8
    pinned = {f"{p.parent.name}/{p.name}": f"{p.parent.name}/{p.name}" for p in originals}
    for i in range(22):
        source = originals[i % len(originals)]
        shutil.copytree(source, source.parent / str(1797000000 + i))
        pinned[f"{source.parent.name}/{1797000000 + i}"] = f"{source.parent.name}/{source.name}"
    for run_id, (after, text) in DAMAGED.items():
        log = next((runs / run_id).glob("*.jsonl"))
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join(lines[:after]) + text + "".join(lines[after:]))
        pinned[run_id] = run_id
    return dict(sorted(pinned.items()))


def written(runs: Path, inputs: set[Path]) -> dict[str, bytes]:
    """Every file under ``runs`` that is not one of ``inputs`` (what evaluation wrote)."""
    return {
        str(p.relative_to(runs)): p.read_bytes()
        for p in sorted(runs.rglob("*"))
        if p.is_file() and p not in inputs
    }


def expected(kind: str, pinned: dict[str, str]) -> dict[str, bytes]:
    """What evaluating the cohort with ``kind`` (``all``, ``deterministic``) must write.

    By path under the runs directory, for every run of ``pinned`` (:func:`assemble`).
    """
    root = EXPECTED / kind
    return {
        f"{run_id}/{p.name}": p.read_bytes()
        for run_id, source in pinned.items()
        for p in sorted((root / source).iterdir())
    }


def deterministic_metrics() -> list[str]:
    """Every registered deterministic metric, sorted."""
    from glossogen.evaluation import get_metric, metric_names

    return [n for n in metric_names() if get_metric(n).kind == "deterministic"]


def _pin(kind: str, metrics: str | list[str], scratch: Path) -> None:
    """Evaluate each run of a fresh cohort alone with ``metrics``; keep what was written."""
    from glossogen.evaluation import check_request, plan_request, run_evaluation

    runs = scratch / kind
    pinned = assemble(runs)
    inputs = {p for p in runs.rglob("*") if p.is_file()}
    request = check_request(metrics)
    for folder in sorted(p for p in runs.glob("*/*") if p.is_dir()):
        plan = plan_request(str(folder), folder.parent.name, request)
        asyncio.run(run_evaluation(plan, now=NOW))
    out = EXPECTED / kind
    shutil.rmtree(out, ignore_errors=True)
    files = written(runs, inputs)
    for name, data in files.items():
        run_id, file = name.rsplit("/", 1)
        if pinned[run_id] != run_id:  # a copy: the same bytes as its original's
            assert data == files[f"{pinned[run_id]}/{file}"], name
            continue
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def main() -> None:
    """Rebuild the committed folders (``--play``) and the expected bytes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--play", action="store_true", help="Play the 7 run folders again.")
    parser.add_argument("--scratch", required=True, help="An empty folder to work in.")
    args = parser.parse_args()
    scratch = Path(args.scratch)
    if args.play:
        shutil.rmtree(SOURCES, ignore_errors=True)
        _commit_sources(SOURCES)
    _pin("all", "all", scratch)
    _pin("deterministic", deterministic_metrics(), scratch)


if __name__ == "__main__":
    main()
