"""The pinned 30-run cohort (``tests/evaluation/cohort30.py``): every report and sidecar a cohort
evaluation writes is byte for byte what the code before batching wrote, through the batched
path (each log read once, only the events the metrics read parsed) and the one-run path alike;
a second pass skips every run and rewrites nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.evaluation import (
    CohortRun,
    check_request,
    evaluate_batch,
    plan_request,
    run_evaluation,
)
from tests.evaluation.cohort30 import NOW, assemble, deterministic_metrics, expected, written

KINDS = {"deterministic": deterministic_metrics, "all": lambda: "all"}


def _runs(runs: Path, pinned: dict[str, str]) -> list[CohortRun]:
    return [CohortRun(run_id=r, run_url=str(runs / r), scenario=r.split("/")[0]) for r in pinned]


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_batched_path_writes_the_pinned_bytes_and_then_skips_every_run(
    kind: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    pinned = assemble(runs)
    inputs = {p for p in runs.rglob("*") if p.is_file()}
    request = check_request(KINDS[kind]())
    seen: list[str] = []
    done = asyncio.run(
        evaluate_batch(_runs(runs, pinned), request, lambda o: seen.append(o.run_id), NOW)
    )
    assert [(o.run_id, o.state, o.exit_code) for o in done.outcomes] == [
        (r, "scored", 0) for r in pinned
    ]
    assert seen == list(pinned)
    assert done.unreadable == {}
    skipped = {o.run_id: o.log_lines_skipped.model_dump() for o in done.outcomes}
    assert skipped["veyru/1797000003"] == {"invalid": 1, "unknown": 1, "truncated_tail": False}
    assert skipped["veyru/1797000004"] == {"invalid": 1, "unknown": 0, "truncated_tail": False}
    assert skipped["veyru/1797000005"] == {"invalid": 2, "unknown": 1, "truncated_tail": False}
    want = expected(kind, pinned)
    assert len(want) == (56 if kind == "all" else 30)
    got = written(runs, inputs)
    assert sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []
    again = asyncio.run(evaluate_batch(_runs(runs, pinned), request, now=NOW))
    assert {o.state for o in again.outcomes} == {"skipped"}
    assert len(again.outcomes) == 30
    assert written(runs, inputs) == want  # nothing rewritten


def test_the_one_run_path_writes_the_same_pinned_bytes(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    pinned = assemble(runs)
    inputs = {p for p in runs.rglob("*") if p.is_file()}
    request = check_request(deterministic_metrics())
    for run_id in pinned:
        plan = plan_request(str(runs / run_id), run_id.split("/")[0], request)
        asyncio.run(run_evaluation(plan, now=NOW))
    want = expected("deterministic", pinned)
    got = written(runs, inputs)
    assert sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []
