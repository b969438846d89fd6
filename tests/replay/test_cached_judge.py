"""A run whose in-run judge answered from ``--judge-cache`` replays identically.

A cached ruling sent no request: its ``judge_called`` logs the judge cache key it was found
under, and the replay's judge finds the recorded ruling at the same place, logs the key it asked
with, and the comparison checks that key as it checks a sent request's fingerprint. Over real
HTTP (the stub model server): veyru's judge on ``openai``, played twice through one cache (the
second run's every ruling cached), each replayed with no key and nowhere to send a request.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from glossogen.eventlog import JudgeCalled, RunView
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import veyru_player
from tests.replay.record_tapes import HTTP_RUNS, play_over_http


@pytest.fixture
def cached_runs(
    model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """The first run (its repeated questions cached) and the second (every ruling cached)."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    model_stub.responder = veyru_player
    runs, cache = tmp_path / "runs", str(tmp_path / "judge-cache")
    veyru = HTTP_RUNS["veyru"]  # the judge on openai (gpt-5.4), every seat scripted
    first = asyncio.run(play_over_http(runs, "veyru", veyru, 1796300000, cache))
    second = asyncio.run(play_over_http(runs, "veyru", veyru, 1796300001, cache))
    monkeypatch.delenv("OPENAI_API_KEY")  # no key: nothing may be sent
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # and nowhere to send it
    return first, second


def _rulings(run_dir: str) -> list[JudgeCalled]:
    return [e for e in RunView.load(f"{run_dir}/veyru.jsonl").counted if isinstance(e, JudgeCalled)]


def test_a_run_judged_from_the_cache_replays_identically(
    cached_runs: tuple[str, str], model_stub: StubModelServer, tmp_path: Path
) -> None:
    first, second = cached_runs
    served = len(model_stub.requests)
    asked, again = _rulings(first), _rulings(second)
    assert [r.cached for r in again] == [True] * len(asked)  # the second: every ruling cached
    assert all(r.cache_key is not None and len(r.cache_key) == 64 for r in again)
    assert [r.cache_key is None for r in asked] == [not r.cached for r in asked]
    for number, run_dir in enumerate((first, second)):
        report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=str(tmp_path / f"r{number}")))
        assert (report.fingerprinted, report.divergence, report.event_diff) == (True, None, None)
        assert (report.identical, report.verdicts_equal, report.spend_equal) == (True, True, True)
        assert [r.cache_key for r in _rulings(report.replay_url)] == [
            r.cache_key for r in _rulings(run_dir)
        ]
    assert len(model_stub.requests) == served  # nothing was sent by either replay


def test_a_cached_ruling_asked_of_another_question_is_the_first_divergence(
    cached_runs: tuple[str, str], tmp_path: Path
) -> None:
    _, second = cached_runs
    log = Path(second) / "veyru.jsonl"
    lines = log.read_text().splitlines()
    for index, line in enumerate(lines):  # the first ruling's question: another key
        event = json.loads(line)
        if event["event_type"] == "judge_called":
            recorded = event["cache_key"]
            event["cache_key"] = "0" * 64
            lines[index] = json.dumps(event)
            round_number = event["round_number"]
            break
    log.write_text("\n".join(lines) + "\n")
    report = replay_run(ReplayRequest(run_dir=second, runs_dir=str(tmp_path / "r")))
    assert report.divergence is not None
    assert report.divergence.line() == (
        f"first divergence: judge call 1 (round {round_number}): request sha256 "
        f"{recorded[:12]}, recorded 000000000000"
    )
