"""A derived run (a fork, a replaced seat, a seat from another run) replays identically.

Its log's prefix (its own ``simulation_started`` with the lineage, the source's rounds 1..N,
every seat registered again with its history at the boundary) was written by the derivation,
not played: the replay writes the same prefix and replays the run's own processes as resumes
of it. Every request's fingerprint, every event, the verdicts and the spend are the record's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import RunView, SimulationEnded
from glossogen.replay import ReplayReport, ReplayRequest, replay_run, replayed_rounds
from glossogen.storage import RunFolder
from glossogen.testing import play
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.winning_players import pd_player
from tests.replay.record_tapes import HTTP_RUNS, play_over_http
from tests.replay.test_fork_replay import _play_on

_SCRIPTED_SEAT = {"replaced_agent_id": "field_observer", "model": "other-script",
                  "provider": "scripted", "channel_visibility": "none"}  # fmt: skip
_HOSTED_SEAT = {"replaced_agent_id": "player_a", "model": "gpt-5.4-mini", "provider": "openai",
                "channel_visibility": "none"}  # fmt: skip


def _seat(derivation: str, seat: dict[str, str], donor_dir: str) -> dict[str, Any]:
    """The request's seat fields for ``derivation``: none, the replaced seat, or the donor's."""
    if derivation == "fork_at_round":
        return {}
    if derivation == "replace_agent":
        return dict(seat)
    donated = {k: v for k, v in seat.items() if k != "channel_visibility"}
    return {**donated, "donor_run_dir": donor_dir, "donor_agent_id": seat["replaced_agent_id"]}


def _derived(
    scenario: str, source_dir: str, runs: Path, seat: dict[str, Any], replay: bool = False
) -> RunFolder:
    """``source_dir`` derived after round 1 (``seat`` says how) and played to its end."""
    request = ForkRequest(scenario, source_dir, 1, str(runs), **seat, replay=replay)
    folder = prepare_fork(request, now_unix=1796300000, replay_check=replayed_rounds).folder
    asyncio.run(_play_on(folder.url))
    return folder


def _replayed(folder: RunFolder, runs: Path) -> tuple[ReplayReport, RunView, RunView]:
    """The replay of the derived run in ``folder``, its record's view and the replay's."""
    report = replay_run(ReplayRequest(run_dir=folder.url, runs_dir=str(runs)))
    recorded = RunView.load(folder.log_url)
    replayed = RunView.load(f"{report.replay_url}/{folder.log_url.rsplit('/', 1)[-1]}")
    return report, recorded, replayed


def _same(report: ReplayReport, recorded: RunView, replayed: RunView) -> None:
    """Nothing differs: requests, events, verdicts, spend (own and inherited), lineage."""
    assert (report.divergence, report.event_divergence, report.stalled) == (None, None, None)
    assert (report.event_diff, report.verdicts_equal, report.spend_equal) == (None, True, True)
    assert report.identical
    assert recorded.started is not None and replayed.started is not None
    assert replayed.started.lineage == recorded.started.lineage
    assert replayed.started.run_id == report.replay_run_id != recorded.started.run_id
    assert RunFolder.at(report.replay_url).read_json_or("lineage.json", None) == (
        recorded.started.lineage
    )
    assert (replayed.status, replayed.verdicts) == (recorded.status, recorded.verdicts)
    assert replayed.spend.total_cost_usd == recorded.spend.total_cost_usd
    assert replayed.inherited_spend.total_cost_usd == recorded.inherited_spend.total_cost_usd
    assert [e.event_type for e in replayed.events] == [e.event_type for e in recorded.events]


@pytest.mark.parametrize(
    ("derivation", "replay", "calls", "events"),
    [
        ("fork_at_round", False, 47, 204),
        ("fork_at_round", True, 47, 204),  # its prefix replayed from the source's tape
        ("replace_agent", False, 47, 203),
        ("cross_run_replace_agent", False, 47, 204),
    ],
)
def test_a_derived_scripted_run_replays_identically(
    derivation: str, replay: bool, calls: int, events: int, tmp_path: Path
) -> None:
    source = play("veyru", tmp_path / "s", rounds=2)
    donor = play("veyru", tmp_path / "d", rounds=2, overrides=["seed=7"])
    seat = _seat(derivation, _SCRIPTED_SEAT, str(tmp_path / "d" / donor.started.run_id))
    source_dir = str(tmp_path / "s" / source.started.run_id)
    folder = _derived("veyru", source_dir, tmp_path / "f", seat, replay)
    report, recorded, replayed = _replayed(folder, tmp_path / "r")
    _same(report, recorded, replayed)
    assert recorded.started is not None and recorded.started.lineage is not None
    assert recorded.started.lineage["derivation"] == derivation
    assert (recorded.status, recorded.rounds_played) == ("completed", 2)
    assert (report.calls, report.events) == (calls, events)


@pytest.mark.parametrize(
    ("derivation", "events", "cost"),
    [
        ("fork_at_round", 119, 0.0006),
        ("replace_agent", 118, 0.00018),
        ("cross_run_replace_agent", 119, 0.00018),
    ],
)
def test_a_derived_run_over_http_replays_identically_with_no_request(
    derivation: str, events: int, cost: float, model_stub: StubModelServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # player_a over the stub's HTTP (the OpenAI Responses wire), player_b scripted; a replaced
    # player_a is another hosted model that sees none of its predecessor's channel history
    model_stub.responder = pd_player
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    overrides = HTTP_RUNS["prisoners_dilemma"]
    source_dir = asyncio.run(play_over_http(tmp_path / "s", "prisoners_dilemma", overrides))
    donor_dir = asyncio.run(play_over_http(tmp_path / "d", "prisoners_dilemma", overrides))
    seat = _seat(derivation, _HOSTED_SEAT, donor_dir)
    folder = _derived("prisoners_dilemma", source_dir, tmp_path / "f", seat)
    served = len(model_stub.requests)
    monkeypatch.delenv("OPENAI_API_KEY")  # no key: nothing may be sent
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # and nowhere to send it
    report, recorded, replayed = _replayed(folder, tmp_path / "r")
    assert len(model_stub.requests) == served
    _same(report, recorded, replayed)
    assert (report.calls, report.events) == (24, events)
    assert report.recorded_cost_usd == report.replayed_cost_usd == cost


def test_a_derived_run_stopped_and_resumed_replays_identically(tmp_path: Path) -> None:
    source = play("veyru", tmp_path / "s", rounds=2)
    source_dir = str(tmp_path / "s" / source.started.run_id)
    request = ForkRequest("veyru", source_dir, 1, str(tmp_path / "f"), rounds_after=2)
    folder = prepare_fork(request, now_unix=1796300000).folder
    asyncio.run(_play_on(folder.url, through=2))  # its first process ends after round 2
    asyncio.run(_play_on(folder.url))  # a resume plays round 3
    report, recorded, replayed = _replayed(folder, tmp_path / "r")
    _same(report, recorded, replayed)
    assert [e.status for e in recorded.events if isinstance(e, SimulationEnded)] == [
        "interrupted",
        "completed",
    ]
    assert (recorded.rounds_played, report.calls, report.events) == (3, 74, 317)
