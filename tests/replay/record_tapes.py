"""Re-record the committed tapes of ``tests/replay/tapes`` and ``tests/replay/tapes_http``.

``tapes``: one scripted round per scenario. ``tapes_http``: two rounds of every scenario over
the stub model servers in the style of a hosted model (text with tool calls): on OpenAI's
Responses wire prisoners_dilemma's ``player_a``, veyru's in-run judge, signal_game's sender
(``agent_a``), drive_module_repair's field technician and orbital_anomaly's astronaut (their
in-run judge asked over HTTP too, on Anthropic's wire); on Anthropic's wire
spot_the_difference's ``viewer_left_a`` (and its judge); and under ``tapes_http/overlap``
prisoners_dilemma with both seats over HTTP, their calls in flight at once.
Run ``python -m tests.replay.record_tapes`` (or ``... record_tapes SCENARIO...`` to replace only
those scenarios' HTTP tapes) after a change that is meant to alter what seats
send or what a run logs; review the diff of the logs before committing it. A tape of a real
provider is recorded the same way: play the run, then copy its folder (``config.json``,
``labels.json`` and the log) here.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from glossogen.launch import (
    VIRTUAL_CLOCK_SETTING,
    RunRequest,
    claim_run,
    open_session,
    plan_run,
    price_spend,
)
from glossogen.testing import CLOCK_START
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.fixtures.played_runs import play_run
from tests.fixtures.winning_players import PLAYERS, pd_player

TAPES = Path(__file__).parent / "tapes"
HTTP_TAPES = Path(__file__).parent / "tapes_http"
SECOND = 1767225600
"""The launch second every tape's folder is claimed at (its run id)."""


def _hosted(seat: str, model: dict[str, str] | None = None) -> str:
    return (
        f"model_overrides={json.dumps({seat: model or {'model': 'gpt-5.4', 'provider': 'openai'}})}"
    )


HTTP_RUNS = {
    "prisoners_dilemma": ['model_overrides={"player_a": {"model": "gpt-5.4", "provider": "openai"}}'],
    "veyru": ["judge_model=gpt-5.4", "judge_provider=openai"],
    "signal_game": [_hosted("agent_a"), "role_swap_every=0"],
    "drive_module_repair": [_hosted("field_technician"), "module_count_weights=[0, 1]",
                            "fault_count_weights=[1]"],
    "orbital_anomaly": [_hosted("astronaut"), "fault_count_weights=[0, 1]"],
    "spot_the_difference": [_hosted("viewer_left_a", {"model": "claude-sonnet-4-6", "provider": "anthropic"})],
}  # fmt: skip
"""The runs over HTTP: scenario and knob overrides (one seat hosted, on OpenAI's Responses wire
but spot_the_difference's on Anthropic's, the rest scripted; veyru: its judge; a run with a
hosted seat asks its in-run judge over HTTP, Anthropic's default model). Each of
drive_module_repair's rounds repairs two modules with one fault each, each of orbital_anomaly's
clears two stages: small tapes, a new module and a next stage each round."""
OVERLAP_TAPES = HTTP_TAPES / "overlap"
"""Runs over HTTP whose hosted seats had model calls in flight at once (a runs dir)."""
_HOSTED = {"model": "gpt-5.4", "provider": "openai"}
BOTH_HOSTED = {
    "prisoners_dilemma": [
        f"model_overrides={json.dumps({'player_a': _HOSTED, 'player_b': _HOSTED})}"
    ],
}
"""The runs whose every seat is hosted: scenario and knob overrides. Recorded with the stub
holding each request until two are in flight (``hold_until_in_flight = 2``): the seats' calls
overlap, and which answer is taken up first is the event loop's."""


async def play_over_http(
    runs_dir: Path,
    scenario: str,
    overrides: list[str],
    now_unix: int | None = None,
    judge_cache: str | None = None,
) -> str:
    """Play 2 rounds of ``scenario`` (seats scripted but as ``overrides`` say); its folder.

    ``judge_cache``: the ``--judge-cache`` its in-run judge asks first.
    """
    request = RunRequest(scenario=scenario, model="scripted", provider="scripted",
                         runs_dir=str(runs_dir), config="knobs_default", judge_cache=judge_cache,
                         overrides=["round_count=2", *overrides])  # fmt: skip
    plan = plan_run(request)
    folder = claim_run(plan, request.runs_dir, now_unix=now_unix)
    session = open_session(plan, folder, clock_start=CLOCK_START)
    for round_number in (1, 2):
        await session.play_round(round_number)
    await session.settle_requests()
    session.finish(price_spend(folder), "completed")
    return folder.url


def paired(stub: StubModelServer) -> Callable[[RecordedRequest], StubReply]:
    """``pd_player`` over ``stub`` holding each request until both seats' are in flight
    (``hold_until_in_flight = 2``, set by the caller) until a seat's first answer of text alone
    (it stops asking for the phase): from then on every request is answered as it comes, so a
    seat never waits for a partner that no longer asks (a conflicted message costs a seat one
    call more than the other)."""

    def respond(request: RecordedRequest) -> StubReply:
        reply = pd_player(request)
        if not reply.tool_calls:
            stub.end_holds()
        return reply

    return respond


def record_overlapping(stub: StubModelServer) -> None:
    """Record the runs of :data:`BOTH_HOSTED` into :data:`OVERLAP_TAPES` over ``stub``."""
    shutil.rmtree(OVERLAP_TAPES, ignore_errors=True)
    stub.responder, stub.hold_until_in_flight = paired(stub), 2
    try:
        for scenario, overrides in BOTH_HOSTED.items():
            asyncio.run(play_over_http(OVERLAP_TAPES, scenario, overrides, SECOND))
    finally:
        stub.hold_until_in_flight = None


def _stub_env(stub: StubModelServer) -> None:
    """Point both SDKs at ``stub`` and run on the virtual clock."""
    os.environ[VIRTUAL_CLOCK_SETTING] = "1"
    os.environ["OPENAI_BASE_URL"] = stub.openai_base_url
    os.environ["OPENAI_API_KEY"] = "sk-test-replay"
    os.environ["ANTHROPIC_BASE_URL"] = stub.anthropic_base_url
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test-replay"


def record_http(scenarios: list[str]) -> None:
    """Replace only the HTTP tapes of ``scenarios`` (the others stay as committed)."""
    with StubModelServer() as stub:
        _stub_env(stub)
        for scenario in scenarios:
            shutil.rmtree(HTTP_TAPES / scenario, ignore_errors=True)
            stub.responder = PLAYERS[scenario]
            asyncio.run(play_over_http(HTTP_TAPES, scenario, HTTP_RUNS[scenario], SECOND))
    for lock in HTTP_TAPES.rglob(".writer.lock"):
        lock.unlink()


def main() -> None:
    """Replace every tape with a fresh recording (with scenario names: only their HTTP tapes)."""
    if sys.argv[1:]:
        unknown = [name for name in sys.argv[1:] if name not in HTTP_RUNS]
        if unknown:
            sys.exit(
                f"record_tapes: no HTTP run for {unknown[0]!r} (known: {', '.join(HTTP_RUNS)})"
            )
        record_http(sys.argv[1:])
        return
    shutil.rmtree(TAPES, ignore_errors=True)
    shutil.rmtree(HTTP_TAPES, ignore_errors=True)
    for scenario in ("prisoners_dilemma", "veyru", "signal_game", "orbital_anomaly",
                     "drive_module_repair", "spot_the_difference"):  # fmt: skip
        play_run(str(TAPES), scenario=scenario, rounds=1, now_unix=SECOND)
    with StubModelServer() as stub:
        _stub_env(stub)
        for scenario, overrides in HTTP_RUNS.items():
            stub.responder = PLAYERS[scenario]
            asyncio.run(play_over_http(HTTP_TAPES, scenario, overrides, SECOND))
        record_overlapping(stub)
    for lock in [*TAPES.rglob(".writer.lock"), *HTTP_TAPES.rglob(".writer.lock")]:
        lock.unlink()


if __name__ == "__main__":
    main()
