"""``fork-at-round --replay``: the fork's rounds 1..N are the source's replayed from its tape.

A fork whose source's first rounds replay exactly holds, up to the boundary, the replay's log
(not a copy of the source's): the same events as the source's but for ids and timestamps,
then plays on live from round N+1, over the scripted provider and over real HTTP (the stub
model server playing one seat or the judge). It is the same run as the plain fork (events,
verdicts, spend), says it is a fork of the source at round N, passes ``glossogen verify`` and
resumes. A source whose log was edited is refused at the first divergence, exit 1, with
nothing written.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from glossogen.cli import main
from glossogen.cli.derived import fork_at_round, replace_agent
from glossogen.derive import DeriveError, ForkRequest, prepare_fork
from glossogen.eventlog import AgentHistoryAppended, Event, RunView
from glossogen.launch import ResumeRequest, open_session, plan_resume, price_spend
from glossogen.replay import replayed_rounds
from glossogen.replay._comparison import IGNORED, normalized
from glossogen.storage import RunFolder
from glossogen.testing import play
from glossogen.verify import verify_run
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import pd_player, veyru_player
from tests.replay.record_tapes import HTTP_RUNS, play_over_http
from tests.replay.test_replay import _edit_first_answer_of


async def _play_on(run_dir: str, through: int | None = None) -> None:
    """Resume the run at ``run_dir`` to its last round, or stop it after round ``through``."""
    plan, point = plan_resume(ResumeRequest(run_dir=run_dir))
    session = open_session(plan, point.folder, resume=point)
    last = plan.knobs.round_count if through is None else through
    for n in range(session.first_round, last + 1):
        await session.play_round(n)
    await session.settle_requests()
    session.finish(price_spend(point.folder), "completed" if through is None else "interrupted")


def _fork(
    scenario: str, source: str, runs: Path, replay: bool, rounds_after: int | None = None
) -> RunFolder:
    prepared = prepare_fork(
        ForkRequest(scenario, source, 1, str(runs), rounds_after, replay=replay),
        now_unix=1796300000,
        replay_check=replayed_rounds,
    )
    if replay:
        assert prepared.replayed is not None and prepared.replayed.reproduced
        assert prepared.replayed.calls > 0
    return prepared.folder


def _played_fork(scenario: str, source: str, runs: Path, replay: bool) -> tuple[RunFolder, RunView]:
    folder = _fork(scenario, source, runs, replay)
    asyncio.run(_play_on(folder.url))
    return folder, RunView.load(folder.log_url)


def _events(events: list[Event], run_id: str) -> list[dict[str, Any]]:
    # every event the same but ids and times (and the stub's tool call ids, numbered by the
    # stub's own request count, which goes on between two forks; the requests that carry them
    # hash differently for that alone)
    ignored = IGNORED | {"tool_call_id", "request_sha256"}
    return [normalized(e, (run_id,), ignored) for e in events]


def _prefix(view: RunView) -> list[Event]:
    """The derived log's events before its first own process (the inherited ones)."""
    return [e for e in view.events if e.event_id in view.inherited]


def _same_run(source: RunView, plain: RunView, replayed: RunView, folder: RunFolder) -> None:
    """The replayed fork is the plain fork, but that its prefix is the replay's."""
    assert replayed.status == plain.status == "completed"
    assert replayed.verdicts == plain.verdicts
    assert replayed.spend.total_cost_usd == plain.spend.total_cost_usd
    assert replayed.inherited_spend.total_cost_usd == plain.inherited_spend.total_cost_usd
    assert replayed.started is not None and plain.started is not None
    assert replayed.started.lineage == {**plain.started.lineage, "prefix": "replayed"}
    ids = (replayed.started.run_id, plain.started.run_id)
    assert _events(replayed.events[1:], ids[0]) == _events(plain.events[1:], ids[1])
    # the prefix is the replay's: no event of it is the source's, each one is the same
    copied, replayed_prefix = _prefix(plain), _prefix(replayed)
    source_ids = {e.event_id for e in source.events}
    anew = [e.event_type for e in copied if e.event_id not in source_ids]  # at the boundary
    assert set(anew) == {"agent_registered", "agent_history_appended"}
    assert not {e.event_id for e in replayed_prefix} & source_ids
    assert len(replayed_prefix) == len(copied)
    assert replayed_prefix[0].timestamp >= source.events[0].timestamp
    # lineage.json says what simulation_started says
    assert folder.read_json_or("lineage.json", None) == replayed.started.lineage


def _verified(folder: RunFolder) -> list[str]:
    return [b.text for b in verify_run(folder).broken]


@pytest.mark.parametrize("scenario", ["prisoners_dilemma", "veyru"])
def test_a_replayed_fork_of_a_scripted_run_is_the_plain_fork(scenario: str, tmp_path: Path) -> None:
    source = play(scenario, tmp_path, rounds=2)
    source_dir = str(tmp_path / source.started.run_id)
    _, plain = _played_fork(scenario, source_dir, tmp_path / "plain", replay=False)
    folder, replayed = _played_fork(scenario, source_dir, tmp_path / "replayed", replay=True)
    _same_run(source, plain, replayed, folder)
    assert (plain.rounds_played, replayed.rounds_played) == (2, 2)
    # a scripted run's replay keeps its game time: rounds 1..N at the source's timestamps
    copied, prefix = _prefix(plain), _prefix(replayed)
    kept = len([e for e in copied if e.event_id in {s.event_id for s in source.events}])
    assert [e.timestamp for e in prefix[:kept]] == [e.timestamp for e in copied[:kept]]
    assert _verified(folder) == []


@pytest.mark.parametrize("scenario", ["prisoners_dilemma", "veyru"])
def test_a_replayed_fork_of_a_run_over_http_is_the_plain_fork(
    scenario: str, model_stub: StubModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    model_stub.responder = pd_player if scenario == "prisoners_dilemma" else veyru_player
    source_dir = asyncio.run(play_over_http(tmp_path, scenario, HTTP_RUNS[scenario]))
    source = RunView.load(f"{source_dir}/{scenario}.jsonl")
    sent = len(model_stub.requests)
    _, plain = _played_fork(scenario, source_dir, tmp_path / "plain", replay=False)
    live = len(model_stub.requests) - sent  # round 2, played on live
    assert live > 0
    sent = len(model_stub.requests)
    folder, replayed = _played_fork(scenario, source_dir, tmp_path / "replayed", replay=True)
    assert len(model_stub.requests) - sent == live  # the replayed round 1 sent nothing
    _same_run(source, plain, replayed, folder)
    assert (plain.spend.total_cost_usd or 0) > 0
    assert replayed.inherited_spend.total_cost_usd == source.spend_by_round()[1]
    assert _verified(folder) == []
    # a replayed call's cost edited: verify names it against the source's
    line, event, was = _edit_a_replayed_cost(folder, replayed)
    where = f", agent {event['agent_id']}" if event.get("agent_id") else ""
    assert [b for b in _verified(folder) if ": inherited: " in b] == [
        f"{folder.run_id}: inherited: line {line} (round 1{where}): "
        f"replayed {event['event_type']} costs 0.5 here but "
        f"{was} in {source.started.run_id}"
    ]


def _edit_a_replayed_cost(folder: RunFolder, view: RunView) -> tuple[int, dict[str, Any], str]:
    """Set the first costed call of the prefix to $0.5: its line, the event, the cost it had."""
    priced = {e.event_id for e in _prefix(view) if getattr(e, "cost_usd", None)}
    log = Path(folder.log_url)
    lines = log.read_text().splitlines()
    index, event = next(
        (i, json.loads(text)) for i, text in enumerate(lines)
        if json.loads(text)["event_id"] in priced
    )  # fmt: skip
    was = f"{event['cost_usd']:.10f}".rstrip("0").rstrip(".")
    lines[index] = json.dumps({**event, "cost_usd": 0.5})
    log.write_text("\n".join(lines) + "\n")
    return index + 1, event, was


@pytest.mark.parametrize("scenario", ["prisoners_dilemma", "veyru"])
def test_a_replayed_fork_stopped_after_its_first_live_round_resumes(
    scenario: str, tmp_path: Path
) -> None:
    source = play(scenario, tmp_path, rounds=2)
    folder = _fork(scenario, str(tmp_path / source.started.run_id), tmp_path / "f", True, 2)
    asyncio.run(_play_on(folder.url, through=2))
    stopped = RunView.load(folder.log_url)
    assert (stopped.status, stopped.rounds_played) == ("interrupted", 2)
    asyncio.run(_play_on(folder.url))
    resumed = RunView.load(folder.log_url)
    assert (resumed.status, resumed.rounds_played) == ("completed", 3)
    assert resumed.started is not None and resumed.started.lineage["prefix"] == "replayed"
    assert _verified(folder) == []


def _boundary_history(view: RunView, seat: str) -> list[dict[str, Any]]:
    """``seat``'s history as the derived log gives it at the boundary, as compared."""
    ids = (view.started.run_id,) if view.started else ()
    return [
        normalized(e, ids)
        for e in _prefix(view)
        if isinstance(e, AgentHistoryAppended) and e.agent_id == seat and e.phase == "setup"
    ]


def _replaced_with_replay(
    source_dir: str, runs: Path, seat: dict[str, str]
) -> tuple[RunFolder, RunView, list[dict[str, Any]]]:
    """``seat`` replaced after round 1 with ``--replay``, played on; the replaced seat's history
    at the boundary (checked the same as a copied fork's)."""
    copied = prepare_fork(
        ForkRequest("veyru", source_dir, 1, str(runs / "c"), **seat), now_unix=1796300000
    ).folder
    request = ForkRequest("veyru", source_dir, 1, str(runs / "f"), **seat, replay=True)
    prepared = prepare_fork(request, now_unix=1796300000, replay_check=replayed_rounds)
    assert prepared.replayed is not None and prepared.replayed.reproduced
    folder = prepared.folder
    history = _boundary_history(RunView.load(folder.log_url), "field_observer")
    assert history == _boundary_history(RunView.load(copied.log_url), "field_observer")
    asyncio.run(_play_on(folder.url))
    forked = RunView.load(folder.log_url)
    assert (forked.status, forked.rounds_played) == ("completed", 2)
    assert forked.started is not None
    assert _verified(folder) == []
    return folder, forked, history


_SEAT = {"replaced_agent_id": "field_observer", "model": "other-script", "provider": "scripted"}


def _replaced_after_1(
    derivation: str, source: RunView, source_dir: str, **more: str
) -> dict[str, Any]:
    """The lineage of :data:`_SEAT` replaced after round 1 of ``source``, its prefix replayed."""
    assert source.started is not None
    return {"derivation": derivation, "source_run_id": source.started.run_id,
            "source_run_dir": source_dir, "after_round": 1, **_SEAT, **more,
            "prefix": "replayed"}  # fmt: skip


def test_a_replaced_seat_forked_with_replay_gets_the_replayed_history(tmp_path: Path) -> None:
    source = play("veyru", tmp_path, rounds=2)
    source_dir = str(tmp_path / source.started.run_id)
    # the seat's history at the boundary is the replay's, the same as the copied one's
    _, forked, history = _replaced_with_replay(source_dir, tmp_path, _SEAT)
    assert len(history) == 1
    assert forked.started is not None
    assert forked.started.lineage == _replaced_after_1(
        "replace_agent", source, source_dir, channel_visibility="full"
    )
    assert not {e.event_id for e in _prefix(forked)} & {e.event_id for e in source.events}


def test_a_cross_run_replaced_seat_forked_with_replay_keeps_the_donors_history(
    tmp_path: Path,
) -> None:
    source = play("veyru", tmp_path / "s", rounds=2)
    donor = play("veyru", tmp_path / "d", rounds=2, overrides=["seed=7"])
    source_dir = str(tmp_path / "s" / source.started.run_id)
    donor_dir = str(tmp_path / "d" / donor.started.run_id)
    donated = {"donor_run_dir": donor_dir, "donor_agent_id": "field_observer"}
    # the incoming seat's history at the boundary is the donor's, as the copied fork's is
    _, forked, history = _replaced_with_replay(source_dir, tmp_path, {**_SEAT, **donated})
    assert history != []
    assert forked.started is not None
    assert forked.started.lineage == _replaced_after_1(
        "cross_run_replace_agent", source, source_dir, **donated
    )
    assert not {e.event_id for e in _prefix(forked)} & {e.event_id for e in source.events}


def test_a_source_that_does_not_replay_is_refused_at_the_first_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the replay plays
    run = play("prisoners_dilemma", tmp_path, rounds=2)
    source = tmp_path / run.started.run_id
    _edit_first_answer_of(source / "prisoners_dilemma.jsonl", "player_b", "I defect.")
    with pytest.raises(DeriveError) as refused:
        prepare_fork(ForkRequest("prisoners_dilemma", str(source), 1, str(tmp_path / "f"),
                                 replay=True), replay_check=replayed_rounds)  # fmt: skip
    assert refused.value.exit_code == 1
    assert str(refused.value).startswith(
        "rounds 1..1 do not replay from the tape: first divergence: player_b call 2 (round 1): "
    )
    code = fork_at_round("prisoners_dilemma", str(source), 1, None, str(tmp_path / "f"),
                         None, None, None, None, True, True)  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("glossogen: error: rounds 1..1 do not replay")
    code = replace_agent("prisoners_dilemma", str(source), 1, "player_b", "other-script",
                         "scripted", None, str(tmp_path / "f"), None, "full", None, None, None,
                         True, True)  # fmt: skip
    assert code == 1
    assert capsys.readouterr().err.splitlines() == err
    assert not (tmp_path / "f").exists()
    assert list(scratch.iterdir()) == []  # the replay's temporary folder is gone too


def test_the_cli_says_what_it_replayed_and_plays_on(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = play("veyru", tmp_path, rounds=2)
    source_dir = tmp_path / source.started.run_id
    with pytest.raises(SystemExit) as exited:
        main(["fork-at-round", "veyru", "--source-run-dir", str(source_dir), "--after-round", "1",
              "--runs-dir", str(tmp_path / "f"), "--replay", "--wait"])  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert exited.value.code == 0
    (path,) = (tmp_path / "f" / "veyru").iterdir()
    run_id = f"veyru/{path.name}"
    assert out[:3] == [
        f"replayed rounds 1..1 of {source.started.run_id} from its tape: 27 calls, 114 events "
        "reproduced; the new run's rounds 1..1 are the replay's",
        f"new_run_id={run_id}",
        f"new_run_dir={path}",
    ]
    assert out[-1].startswith(f"{run_id} completed: ")
    assert _verified(RunFolder.at(str(path))) == []
