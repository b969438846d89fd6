"""A run played on the real clock (a hosted seat, no virtual-clock setting), replayed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from glossogen.engine import Clock, SystemClock
from glossogen.eventlog import EventLogWriter, RoundEnded, RunView
from glossogen.launch import VIRTUAL_CLOCK_SETTING
from glossogen.replay import ReplayRequest, replay_run
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import pd_player
from tests.replay.record_tapes import HTTP_RUNS, play_over_http

RATE = 10.0
"""How much faster than the wall :class:`FasterClock`'s time passes."""


class FasterClock(SystemClock):
    """The real clock, :data:`RATE` times faster.

    Its time passes on its own, while the models answer too, as the product's real clock's
    does (a phase's limit passes whatever the run does); a phase lasts a tenth of its seconds.
    The process logs ``clock: real``.
    """

    def __init__(self) -> None:
        self._origin = (time.monotonic(), datetime.now(UTC))

    def now(self) -> float:
        return (time.monotonic() - self._origin[0]) * RATE

    def wall(self) -> datetime:
        return self._origin[1] + timedelta(seconds=self.now())

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds / RATE)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        return await super().wait(event, timeout / RATE)


def _faster(_: EventLogWriter) -> FasterClock:
    return FasterClock()


@pytest.mark.parametrize(
    # a round that settled, on the faster real clock (the real seconds of its scripted seat's
    # latency, 2 s a call, and of each idle floor, a tenth); rounds that ended by their
    # 1-second limit, on the product's own real clock
    ("limit", "trigger", "clock_of"),
    [([], "settled", _faster), (["max_round_duration_seconds=1"], "timeout", None)],
)
def test_a_run_over_http_on_the_real_clock_replays_identically(
    limit: list[str],
    trigger: str,
    clock_of: Callable[[EventLogWriter], Clock] | None,
    model_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(VIRTUAL_CLOCK_SETTING)  # the real clock, as a run of a real provider
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    model_stub.responder = pd_player
    overrides = HTTP_RUNS["prisoners_dilemma"] + limit
    run_dir = asyncio.run(
        play_over_http(tmp_path, "prisoners_dilemma", overrides, clock_of=clock_of)
    )
    recorded = RunView.load(f"{run_dir}/prisoners_dilemma.jsonl")
    ends = [e.trigger for e in recorded.events if isinstance(e, RoundEnded)]
    assert ends == [trigger, trigger]
    assert recorded.started is not None and recorded.started.clock == "real"
    monkeypatch.delenv("OPENAI_API_KEY")
    report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=str(tmp_path / "r")))
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert report.identical
