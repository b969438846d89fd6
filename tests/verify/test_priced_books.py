"""A priced run over real HTTP (the stub model server as OpenAI, ``gpt-4.1-mini``): its books
balance, its total is what the stub served at the catalogue's rates, and an edited cost is named
against that total."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from glossogen.eventlog import ModelRequestAbandoned, ModelRequestSent, RunView, settled_by
from glossogen.launch import RunRequest, claim_run, open_session, plan_run, price_spend
from glossogen.storage import RunFolder
from glossogen.verify import verify_run
from tests.fixtures.model_stubs import StubFault, StubModelServer
from tests.fixtures.played_runs import CLOCK_START
from tests.providers.test_wire_formats import USAGE, pd_player
from tests.verify.runs import copy_run, fork, line_of, lines, write

PRICE = float(
    calc_price(Usage(**USAGE), model_ref="gpt-4.1-mini", provider_id="openai").total_price
)
"""What one request the stub answers costs (every answer reports ``USAGE``)."""


def _play(runs_dir: Path, *overrides: str) -> RunFolder:
    async def go() -> RunFolder:
        plan = plan_run(RunRequest(scenario="prisoners_dilemma", model="gpt-4.1-mini",
                                   provider="openai", runs_dir=str(runs_dir),
                                   config="knobs_default",
                                   overrides=["round_count=2", "idle_floor_seconds=0.05",
                                              *overrides]))  # fmt: skip
        folder = claim_run(plan, str(runs_dir))
        session = open_session(plan, folder, clock_start=CLOCK_START)
        for n in (1, 2):
            await session.play_round(n)
        await session.settle_requests()
        session.finish(price_spend(folder), "completed")
        return folder

    return asyncio.run(go())


def _play_on(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *overrides: str
) -> RunFolder:
    """A two-round prisoners' dilemma over the stub as OpenAI, every seat playing along."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model_stub.responder = pd_player
    return _play(tmp_path / "runs", *overrides)


def _usd(value: float) -> str:
    return f"{round(value, 10):.10f}".rstrip("0").rstrip(".")


def test_a_priced_run_balances_and_an_edited_cost_is_named(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = _play_on(model_stub, monkeypatch, tmp_path)
    served = [r for r in model_stub.requests if r.wire in ("chat", "responses")]
    total = len(served) * PRICE
    assert verify_run(folder).broken == []
    events = lines(Path(folder.log_url))
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    assert ended["total_cost_usd"] == pytest.approx(total, abs=1e-9)

    run_id, log = copy_run(folder, tmp_path / "copies", 1000000008)
    events = lines(log)
    answer = [e for e in events if e["event_type"] == "llm_response_received"][0]
    assert answer["cost_usd"] == pytest.approx(PRICE, abs=1e-12)
    answer["cost_usd"] = 0.0
    write(log, events)
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    seat = answer["agent_id"]
    recorded = next(c["cost_usd"] for c in ended["agent_costs"] if c["agent_id"] == seat)

    def usd(value: float) -> str:
        return f"{round(value, 10):.10f}".rstrip("0").rstrip(".")

    assert [rule.text for rule in verify_run(RunFolder.at(str(log.parent))).broken] == [
        f"{run_id}: spend: line {line_of(events, ended)} (simulation_ended): total_cost_usd "
        f"{usd(total)} but its events sum to {usd(total - PRICE)}; agent {seat} cost_usd "
        f"{usd(recorded)} but its events sum to {usd(recorded - PRICE)}"
    ]

    # A cache count edited on one answer: the ending's cache counts no longer add up.
    run_id, log = copy_run(folder, tmp_path / "copies", 1000000009)
    events = lines(log)
    answer = [e for e in events if e["event_type"] == "llm_response_received"][0]
    assert (answer["cache_read_tokens"], answer["cache_write_tokens"]) == (200, 0)
    answer["cache_read_tokens"] = 0
    write(log, events)
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    cost = next(c for c in ended["agent_costs"] if c["agent_id"] == answer["agent_id"])
    read = cost["cache_read_tokens"]
    assert read == 200 * cost["requests"]  # what the stub served
    assert [rule.text for rule in verify_run(RunFolder.at(str(log.parent))).broken] == [
        f"{run_id}: spend: line {line_of(events, ended)} (simulation_ended): agent "
        f"{answer['agent_id']} cache tokens (read, write, 1 h write) ({read}, 0, 0) but its "
        f"events sum to ({read - 200}, 0, 0)"
    ]


def test_a_lower_bound_total_keeps_its_priced_part_and_an_edited_cost_is_named(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run whose total is unknown (a request timed out after it was sent) records the calls
    it priced, summed, so an edited cost is still named (the seat's cost is unknown too)."""
    # Held 30 s: only the SDK's 3 s timeout ends the call; every other answer comes at once.
    model_stub.queue(StubFault(kind="timeout"))
    folder = _play_on(model_stub, monkeypatch, tmp_path, "agent_model_settings.timeout=3")
    answered = [s for s in model_stub.served if s.reply.input_tokens == USAGE["input_tokens"]]
    priced = len(answered) * PRICE  # what the stub served, less the answer the client left
    assert len(model_stub.served) == len(answered) + 1
    events = lines(Path(folder.log_url))
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    assert ended["total_cost_usd"] is None
    assert ended["priced_cost_usd"] == pytest.approx(priced, abs=1e-9)
    assert verify_run(folder).broken == []

    run_id, log = copy_run(folder, tmp_path / "copies", 1000000013)
    events = lines(log)
    (failed,) = [e for e in events if e["event_type"] == "agent_run_cycle_failed"]
    seat = failed["agent_id"]  # its cost is unknown: no seat line can name the edit
    answer = next(
        e for e in events if e["event_type"] == "llm_response_received" and e["agent_id"] == seat
    )
    answer["cost_usd"] = 0.0
    write(log, events)
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    assert [rule.text for rule in verify_run(RunFolder.at(str(log.parent))).broken] == [
        f"{run_id}: spend: line {line_of(events, ended)} (simulation_ended): priced_cost_usd "
        f"{_usd(ended['priced_cost_usd'])} but its events sum to "
        f"{_usd(ended['priced_cost_usd'] - PRICE)}"
    ]


def test_every_sent_request_is_settled_once_and_a_broken_id_is_named(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = _play_on(model_stub, monkeypatch, tmp_path)
    served = [r for r in model_stub.requests if r.wire in ("chat", "responses")]
    events = lines(Path(folder.log_url))
    sent = [e for e in events if e["event_type"] == "model_request_sent"]
    answers = [e for e in events if e["event_type"] == "llm_response_received"]
    # One write-ahead event per request the stub served, each settled by one later event: an
    # answer, or (sent as a phase ended) an abandonment priced from its usage.
    assert len(sent) == len(served)
    settling = [e for e in events if e.get("request_id") and e not in sent]
    assert sorted(e["request_id"] for e in settling) == sorted(s["request_id"] for s in sent)
    assert {e["event_type"] for e in settling} <= {
        "llm_response_received", "model_request_abandoned"}  # fmt: skip
    by_id = {s["request_id"]: s for s in sent}
    assert all(line_of(events, by_id[e["request_id"]]) < line_of(events, e) for e in settling)
    assert [
        (by_id[a["request_id"]]["agent_id"], by_id[a["request_id"]]["call"]) for a in answers
    ] == [(a["agent_id"], a["cycle"]) for a in answers]
    assert verify_run(folder).broken == []

    # An answer settling the request another answer already settled; one naming no sent request.
    run_id, log = copy_run(folder, tmp_path / "copies", 1000000010)
    events = lines(log)
    first, second, third = [e for e in events if e["event_type"] == "llm_response_received"][:3]
    dropped, renamed = second["request_id"], third["request_id"]
    second["request_id"] = first["request_id"]
    third["request_id"] = "req-7"
    unsettled = [e for e in events if e.get("request_id") in (dropped, renamed)]
    assert [e["event_type"] for e in unsettled] == ["model_request_sent"] * 2
    write(log, events)
    assert [rule.text for rule in verify_run(RunFolder.at(str(log.parent))).broken] == [
        f"{run_id}: requests: line {line_of(events, second)} (round 1, agent "
        f"{second['agent_id']}): request {first['request_id']} settled twice "
        f"(llm_response_received; first at line {line_of(events, first)})",
        f"{run_id}: requests: line {line_of(events, third)} (round 1, agent "
        f"{third['agent_id']}): llm_response_received settles request req-7, never logged as sent",
        *(
            f"{run_id}: requests: line {line_of(events, e)} (round 1, agent {e['agent_id']}): "
            f"request {e['request_id']} was sent and no event settles it"
            for e in unsettled
        ),
    ]


def test_an_old_log_without_sent_requests_still_verifies(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A log written before requests were logged as sent: checked by its seats' cycles."""
    folder = _play_on(model_stub, monkeypatch, tmp_path)
    run_id, log = copy_run(folder, tmp_path / "copies", 1000000011)
    old = [
        {k: v for k, v in e.items() if k not in ("request_id", "request_ids")}
        for e in lines(log)
        if e["event_type"] != "model_request_sent"
    ]
    write(log, old)
    old_folder = RunFolder.at(str(log.parent))
    assert verify_run(old_folder).broken == []
    # The cycle rule still sees a dropped answer in it.
    answers = [e for e in old if e["event_type"] == "llm_response_received"]
    seat = answers[0]["agent_id"]
    before, dropped, after = [a for a in answers if a["agent_id"] == seat][:3]
    old.remove(dropped)
    write(log, old)
    assert [r.rule for r in verify_run(old_folder).broken] == ["requests", "spend"]


def test_a_fork_of_a_priced_run_abandons_none_of_its_sources_requests_and_balances(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fork plays on as a resume of its folder: the requests it copied are its source's (the
    source's log settles them), so its resume marks none of them abandoned."""
    source = _play_on(model_stub, monkeypatch, tmp_path)
    forked = fork(source, tmp_path / "forks", after_round=1)
    view = RunView.load(forked.log_url)
    copied = [
        e for e in view.events if isinstance(e, ModelRequestSent) and e.event_id in view.inherited
    ]
    own = [
        e
        for e in view.events
        if isinstance(e, ModelRequestSent) and e.event_id not in view.inherited
    ]
    assert copied and own
    copied_ids = {e.request_id for e in copied}
    settled = {r for e in view.events if e.event_id not in view.inherited for r in settled_by(e)}
    assert not settled & copied_ids
    assert settled == {e.request_id for e in own}
    assert not [
        e for e in view.events if isinstance(e, ModelRequestAbandoned) and e.cost_usd is None
    ]
    assert verify_run(forked).broken == []


def test_a_run_killed_with_a_request_in_flight_names_it_by_id_in_one_line(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A log cut right after a request was logged as sent (its process killed, never resumed):
    one line names the run stopped, its books open, and the request by its id."""
    folder = _play_on(model_stub, monkeypatch, tmp_path)
    run_id, log = copy_run(folder, tmp_path / "copies", 1000000012)
    events = lines(log)
    sent = next(e for e in events if e["event_type"] == "model_request_sent")
    kept = events[: line_of(events, sent)]
    write(log, kept)
    assert [rule.text for rule in verify_run(RunFolder.at(str(log.parent))).broken] == [
        f"{run_id}: ended: after line {len(kept)} (round 1): the log has no simulation_ended "
        "and no process is writing it: a stopped run whose books cannot close; 1 "
        f"request(s) sent and never settled: {sent['request_id']}"
    ]
