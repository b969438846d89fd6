"""``--judge-cache``: the same question asked of the same judge again is answered at $0.

Over real HTTP (the stub model server): an evaluation's judged metric scored twice on two
copies of a run through one cache asks the stub once per (question, replica); an in-run judge
playing the same run twice through one cache asks nothing the second time and logs each ruling
``cached`` with cost 0.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from glossogen.evaluation import plan_evaluation, run_evaluation
from glossogen.eventlog import JudgeCalled, RunView
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend
from glossogen.storage import RunFolder
from tests.evaluation._logs import RunLog
from tests.evaluation.test_judged import REPETITION, canned
from tests.fixtures.model_stubs import StubModelServer, StubReply
from tests.fixtures.played_runs import CLOCK_START

FO, SE = "field_observer", "stabilization_engineer"


def test_an_evaluation_through_the_cache_pays_once_per_question(
    openai_stub: StubModelServer, tmp_path: Path
) -> None:
    openai_stub.responder = canned(REPETITION)
    log = RunLog(tmp_path / "a")
    log.round(1).say(1, FO, "aab aab").say(1, SE, "brace jade").verdict(1, True)
    log.round(2).say(2, FO, "L4 L4").verdict(2, True)
    first = log.end().write()
    second = tmp_path / "b" / first.relative_to(tmp_path / "a")
    shutil.copytree(first, second)
    cache = str(tmp_path / "judge-cache")

    def score(run_dir: Path) -> tuple[float | None, float | None, int | None, int | None]:
        plan = plan_evaluation(str(run_dir), "language_repetition", "gpt-4o-mini", "openai",
                               ["temperature=0"], judge_replicas=2, judge_cache=cache)  # fmt: skip
        done = asyncio.run(run_evaluation(plan))
        entry = done.report.metrics["language_repetition"]
        return entry.score, entry.cost_usd, done.judge_cache_hits, done.judge_cache_misses

    score_a, cost_a, hits_a, misses_a = score(first)
    assert (hits_a, misses_a) == (0, 4)  # 2 rounds x 2 replicas, each asked
    assert len(openai_stub.requests) == 4
    assert cost_a is not None and cost_a > 0
    score_b, cost_b, hits_b, misses_b = score(second)
    assert (hits_b, misses_b) == (4, 0)
    assert len(openai_stub.requests) == 4  # nothing sent the second time
    assert (score_b, cost_b) == (score_a, 0.0)


async def _play(runs_dir: str, now_unix: int, cache: str) -> RunFolder:
    request = RunRequest(
        scenario="veyru", model="scripted", provider="scripted", runs_dir=runs_dir,
        config="knobs_default", judge_cache=cache,
        overrides=["round_count=2", "judge_provider=openai", "judge_model=gpt-4.1-mini",
                   "postmortem_enabled=false", "postmortem_after_swap=false"],
    )  # fmt: skip
    plan = plan_run(request)
    claimed = claim_run(plan, runs_dir, now_unix=now_unix)
    session = open_session(plan, claimed, clock_start=CLOCK_START)
    for n in range(1, 3):
        await session.play_round(n)
    session.finish(price_spend(claimed), "completed")
    return claimed


def test_an_in_run_judge_through_the_cache_logs_hits_at_no_cost(
    openai_stub: StubModelServer, tmp_path: Path
) -> None:
    openai_stub.responder = lambda req: StubReply(
        tool_calls=[("final_result", {"success": True, "reason": "done"})]
    )
    runs, cache = str(tmp_path / "runs"), str(tmp_path / "judge-cache")
    first = RunView.load(asyncio.run(_play(runs, 1796200000, cache)).log_url)
    asked = len(openai_stub.requests)
    rulings = [e for e in first.counted if isinstance(e, JudgeCalled)]
    distinct = {(r.instructions, r.question) for r in rulings}
    assert asked == len(distinct) > 0
    assert [r.cached for r in rulings].count(False) == len(distinct)
    assert all((r.cost_usd or 0) > 0 for r in rulings if not r.cached)

    second = RunView.load(asyncio.run(_play(runs, 1796200001, cache)).log_url)
    again = [e for e in second.counted if isinstance(e, JudgeCalled)]
    assert len(openai_stub.requests) == asked  # the same run again: every ruling from the cache
    assert [(r.cached, r.cost_usd, r.input_tokens, r.request_ids) for r in again] == [
        (True, 0.0, 0, [])
    ] * len(rulings)
    assert [r.success for r in again] == [r.success for r in rulings]
    assert second.verdicts == first.verdicts
    assert second.spend.judge_cost_usd == 0.0


def test_a_judge_cache_that_is_a_file_is_refused_before_anything_is_claimed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from glossogen.cli import main

    file = tmp_path / "cache.json"
    file.write_text("{}")
    runs = tmp_path / "runs"
    with pytest.raises(SystemExit) as exited:
        main(["run", "veyru", "--model", "scripted", "--provider", "scripted",
              "--runs-dir", str(runs), "--config", "knobs_default", "--judge-cache", str(file)])  # fmt: skip
    assert exited.value.code == 64
    err = capsys.readouterr().err
    assert err == f"glossogen: error: --judge-cache {str(file)!r} is a file, not a folder\n"
    assert not runs.exists()

    # evaluate refuses it the same way, by its flag, before any run is read
    with pytest.raises(SystemExit) as exited:
        main(["evaluate", "veyru", "--run-dir", str(runs), "--judge-cache", str(file)])
    assert exited.value.code == 64
    err = capsys.readouterr().err
    assert err == f"glossogen: error: --judge-cache {str(file)!r}: not a folder\n"
