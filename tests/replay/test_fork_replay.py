"""``fork-at-round --replay``: rounds 1..N replayed from the tape before the fork plays on.

A fork whose source's first rounds replay exactly is the same run as the plain fork: same
events (without ids and times), verdicts and spend, over the scripted provider and over real
HTTP (the stub model server playing one seat or the judge). A source whose log was edited is
refused at the first divergence, exit 1, with no folder made.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from glossogen.cli.derived import fork_at_round
from glossogen.derive import DeriveError, ForkRequest, prepare_fork
from glossogen.eventlog import RunView
from glossogen.launch import ResumeRequest, open_session, plan_resume, price_spend
from glossogen.replay import replayed_fork_point
from glossogen.replay._replay import IGNORED, normalized
from glossogen.testing import play
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import pd_player, veyru_player
from tests.replay.record_tapes import HTTP_RUNS, play_over_http
from tests.replay.test_replay import _edit_first_answer_of


async def _play_on(run_dir: str) -> None:
    plan, point = plan_resume(ResumeRequest(run_dir=run_dir))
    session = open_session(plan, point.folder, resume=point)
    for n in range(session.first_round, plan.knobs.round_count + 1):
        await session.play_round(n)
    await session.settle_requests()
    session.finish(price_spend(point.folder), "completed")


def _fork(scenario: str, source: str, runs: Path, now_unix: int, replay: bool) -> RunView:
    prepared = prepare_fork(
        ForkRequest(scenario, source, 1, str(runs), replay=replay),
        now_unix=now_unix,
        replay_check=replayed_fork_point,
    )
    if replay:
        assert prepared.replayed is not None and prepared.replayed.reproduced
        assert prepared.replayed.calls > 0
    asyncio.run(_play_on(prepared.folder.url))
    return RunView.load(prepared.folder.log_url)


def _same_run(plain: RunView, replayed: RunView) -> None:
    assert replayed.status == plain.status == "completed"
    assert replayed.verdicts == plain.verdicts
    assert replayed.spend.total_cost_usd == plain.spend.total_cost_usd
    assert replayed.inherited_spend.total_cost_usd == plain.inherited_spend.total_cost_usd
    # every event the same but ids and times (and the stub's tool call ids, numbered by the
    # stub's own request count, which goes on between the two forks; the requests that carry
    # them hash differently for that alone)
    assert _events(replayed) == _events(plain)


def _events(view: RunView) -> list[dict[str, object]]:
    ids = (view.started.run_id,) if view.started else ()
    return [normalized(e, ids, IGNORED | {"tool_call_id", "request_sha256"}) for e in view.events]


@pytest.mark.parametrize("scenario", ["prisoners_dilemma", "veyru"])
def test_a_replayed_fork_of_a_scripted_run_is_the_plain_fork(scenario: str, tmp_path: Path) -> None:
    run = play(scenario, tmp_path, rounds=2)
    source = str(tmp_path / run.started.run_id)
    plain = _fork(scenario, source, tmp_path / "plain", 1796300000, replay=False)
    replayed = _fork(scenario, source, tmp_path / "replayed", 1796300000, replay=True)
    _same_run(plain, replayed)
    assert plain.rounds_played == 2


@pytest.mark.parametrize("scenario", ["prisoners_dilemma", "veyru"])
def test_a_replayed_fork_of_a_run_over_http_is_the_plain_fork(
    scenario: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    model_stub.responder = pd_player if scenario == "prisoners_dilemma" else veyru_player
    source = asyncio.run(play_over_http(tmp_path, scenario, HTTP_RUNS[scenario]))
    sent = len(model_stub.requests)
    plain = _fork(scenario, source, tmp_path / "plain", 1796300000, replay=False)
    live = len(model_stub.requests) - sent  # round 2, played on live
    assert live > 0
    sent = len(model_stub.requests)
    replayed = _fork(scenario, source, tmp_path / "replayed", 1796300000, replay=True)
    assert len(model_stub.requests) - sent == live  # the replayed round 1 sent nothing
    _same_run(plain, replayed)
    assert (plain.spend.total_cost_usd or 0) > 0


def test_a_source_that_does_not_replay_is_refused_at_the_first_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = play("prisoners_dilemma", tmp_path, rounds=2)
    source = tmp_path / run.started.run_id
    _edit_first_answer_of(source / "prisoners_dilemma.jsonl", "player_b", "I defect.")
    with pytest.raises(DeriveError) as refused:
        prepare_fork(ForkRequest("prisoners_dilemma", str(source), 1, str(tmp_path / "f"),
                                 replay=True), replay_check=replayed_fork_point)  # fmt: skip
    assert refused.value.exit_code == 1
    assert str(refused.value).startswith(
        "rounds 1..1 do not replay from the tape: first divergence: player_b call 2 (round 1): "
    )
    code = fork_at_round("prisoners_dilemma", str(source), 1, None, str(tmp_path / "f"),
                         None, None, None, None, True, True)  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("glossogen: error: rounds 1..1 do not replay")
    assert not (tmp_path / "f").exists()
