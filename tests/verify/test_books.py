"""A run's books (``RunView.check_books``): played runs balance; each hand-broken log is named
in exact lines (run, rule, line, round, agent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.eventlog import BrokenRule, RunView
from glossogen.storage import RunFolder
from glossogen.testing import play
from glossogen.verify import verify_run
from tests.fixtures.played_runs import play_run
from tests.verify.runs import (
    copy_run,
    duplicate_verdict,
    fork,
    line_of,
    lines,
    play_interrupted,
    resume,
    scripted,
    write,
)

SCENARIOS = ["veyru", "prisoners_dilemma", "spot_the_difference", "signal_game",
             "drive_module_repair", "orbital_anomaly"]  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_played_run_of_every_scenario_balances(scenario: str, tmp_path: Path) -> None:
    view = play(scenario, tmp_path, rounds=2)
    assert view.status == "completed"
    assert view.check_books() == []


def test_a_resumed_run_and_a_fork_of_it_balance(tmp_path: Path) -> None:
    first = play_interrupted(scripted("veyru", tmp_path, rounds=3), rounds=1)
    resumed = resume(first.url)
    view = RunView.load(resumed.log_url)
    assert [e.event_type for e in view.events if e.event_type.endswith(("_ended", "_resumed"))
            and e.event_type.startswith(("simulation", "run"))] == [
        "simulation_ended", "run_resumed", "simulation_ended"]  # fmt: skip
    assert verify_run(resumed).broken == []
    forked = fork(resumed, tmp_path / "forks", after_round=2)
    derived = RunView.load(forked.log_url)
    assert derived.derived and derived.inherited  # the copied rounds were checked
    assert verify_run(forked).broken == []


@pytest.fixture(scope="module")
def veyru(tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """A two-round scripted veyru run (its books balance)."""
    return play_run(str(tmp_path_factory.mktemp("runs")), rounds=2)


def _texts(folder: RunFolder) -> list[str]:
    return [rule.text for rule in verify_run(folder).broken]


def test_a_dropped_answer_is_named_at_the_next_answer_and_in_the_spend(
    veyru: RunFolder, tmp_path: Path
) -> None:
    run_id, log = copy_run(veyru, tmp_path, 1000000001)
    events = lines(log)
    seat = next(e["agent_id"] for e in events if e["event_type"] == "llm_response_received")
    answers = [e for e in events
               if e["event_type"] == "llm_response_received" and e["agent_id"] == seat]  # fmt: skip
    before, dropped, after = answers[0], answers[1], answers[2]
    assert (before["cycle"], dropped["cycle"], after["cycle"]) == (1, 2, 3)
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    cost = next(c for c in ended["agent_costs"] if c["agent_id"] == seat)
    events.remove(dropped)
    write(log, events)
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: requests: line {line_of(events, after)} (round {after['round_number']}, "
        f"agent {seat}): 1 request(s) sent after the answer at line {line_of(events, before)} "
        "and before this one (cycle 3) ended in no event: no answer, failure or abandonment",
        f"{run_id}: spend: line {line_of(events, ended)} (simulation_ended): agent {seat} "
        f"tokens {cost['input_tokens']} in / {cost['output_tokens']} out but its events sum to "
        f"{cost['input_tokens'] - dropped['input_tokens']} / "
        f"{cost['output_tokens'] - dropped['output_tokens']}",
    ]


def test_a_duplicated_verdict_is_named_once(veyru: RunFolder, tmp_path: Path) -> None:
    _, log, line = duplicate_verdict(veyru, tmp_path, 1000000002)
    assert _texts(RunFolder.at(str(log.parent))) == [line]


def test_an_edited_cost_is_named_at_the_simulation_ended(veyru: RunFolder, tmp_path: Path) -> None:
    run_id, log = copy_run(veyru, tmp_path, 1000000003)
    events = lines(log)
    answer = [e for e in events if e["event_type"] == "llm_response_received"][2]
    assert answer["cost_usd"] == 0.0  # scripted seats bill nothing
    answer["cost_usd"] = 0.25
    write(log, events)
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: spend: line {line_of(events, ended)} (simulation_ended): total_cost_usd 0 "
        f"but its events sum to 0.25; agent {answer['agent_id']} cost_usd 0 but its events sum "
        "to 0.25"
    ]


def test_a_missing_verdict_and_a_damaged_line_are_named(veyru: RunFolder, tmp_path: Path) -> None:
    run_id, log = copy_run(veyru, tmp_path, 1000000004)
    events = lines(log)
    verdict = [e for e in events if e["event_type"] == "round_result_recorded"][0]
    completed = next(e for e in events
                     if e["event_type"] == "round_completed" and e["round_number"] == 1)  # fmt: skip
    events.remove(verdict)
    write(log, events)
    damaged = len(events) + 1
    with log.open("a") as f:
        f.write('{"event_type": "message_sent", "broken": \n')
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: log: line {damaged}: 1 damaged line(s): an event may be lost",
        f"{run_id}: verdicts: line {line_of(events, completed)} (round 1): round 1 completed "
        f"with no verdict for {verdict['team_id']}",
    ]


def test_a_forks_copied_spend_is_checked_against_its_source(tmp_path: Path) -> None:
    source = RunFolder.at(str(play_run(str(tmp_path / "runs"), rounds=2).url))
    forked = fork(source, tmp_path / "forks", after_round=1)
    assert _texts(forked) == []
    events = lines(Path(forked.log_url))
    copied = [e for e in events if e["event_type"] == "llm_response_received"][0]
    copied["cost_usd"] = 0.5
    write(Path(forked.log_url), events)
    ended = [e for e in events if e["event_type"] == "simulation_ended"][-1]
    seat = copied["agent_id"]
    assert _texts(forked) == [
        f"{forked.run_id}: spend: line {line_of(events, ended)} (simulation_ended): "
        "inherited_cost_usd 0 but its events sum to 0.5",
        f"{forked.run_id}: inherited: line {line_of(events, copied)} (round 1, agent {seat}): "
        f"copied llm_response_received costs 0.5 here but 0 in {source.run_id}",
    ]
    for path in sorted(Path(source.url).iterdir()):
        path.unlink()
    Path(source.url).rmdir()
    copied["cost_usd"] = 0.0
    write(Path(forked.log_url), events)
    assert _texts(forked) == [
        f"{forked.run_id}: inherited: lineage: the source run {source.url} cannot be read "
        f"(no event log {source.log_url}): its copied spend is unchecked"
    ]


def test_a_broken_rule_is_one_line_naming_run_rule_and_where() -> None:
    rule = BrokenRule("veyru/17", "verdicts", "line 9 (round 2)", "round 2 has 2 verdicts")
    assert rule.text == "veyru/17: verdicts: line 9 (round 2): round 2 has 2 verdicts"


def test_a_live_process_is_not_held_to_requests_still_in_flight(
    veyru: RunFolder, tmp_path: Path
) -> None:
    run_id, log = copy_run(veyru, tmp_path, 1000000006)
    events = [e for e in lines(log) if e["event_type"] != "simulation_ended"]
    seat = next(e["agent_id"] for e in events if e["event_type"] == "llm_response_received")
    answers = [e for e in events
               if e["event_type"] == "llm_response_received" and e["agent_id"] == seat]  # fmt: skip
    before, dropped, after = answers[:3]
    events.remove(dropped)  # as if abandoned at a phase end and not yet settled
    write(log, events)
    folder = RunFolder.at(str(log.parent))
    lock = folder.lock()  # a live writer holds the run
    try:
        assert _texts(folder) == []
    finally:
        lock.release()
    assert _texts(folder) == [  # no writer: the request will never be logged
        f"{run_id}: requests: line {line_of(events, after)} (round {after['round_number']}, "
        f"agent {seat}): 1 request(s) sent after the answer at line {line_of(events, before)} "
        "and before this one (cycle 3) ended in no event: no answer, failure or abandonment",
        f"{run_id}: ended: after line {len(events)} (round {events[-1]['round_number']}): the "
        "log has no simulation_ended and no process is writing it: a stopped run whose "
        "books cannot close",
    ]


def test_a_torn_or_deleted_ending_names_the_run_stopped_in_one_line(
    veyru: RunFolder, tmp_path: Path
) -> None:
    assert _texts(veyru) == []  # the finished run passes
    run_id, log = copy_run(veyru, tmp_path, 1000000011)
    text = log.read_text()
    torn = len(text.splitlines())
    ending = text.splitlines()[-1]
    assert json.loads(ending)["event_type"] == "simulation_ended"
    log.write_text(text[: len(text) - len(ending) - 1 + len(ending) // 2])  # cut mid-write
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: ended: line {torn}: the last line is torn (cut off mid-write) and no "
        "simulation_ended precedes it: a stopped run whose books cannot close"
    ]
    folder = RunFolder.at(str(log.parent))
    lock = folder.lock()  # a live writer's last line may be half written: not named
    try:
        assert _texts(folder) == []
    finally:
        lock.release()

    run_id, log = copy_run(veyru, tmp_path, 1000000012)
    events = lines(log)
    assert events.pop()["event_type"] == "simulation_ended"  # the ending deleted
    write(log, events)
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: ended: after line {len(events)} (round {events[-1]['round_number']}): the "
        "log has no simulation_ended and no process is writing it: a stopped run whose "
        "books cannot close"
    ]


def test_a_torn_line_after_an_ending_is_named_by_its_number(
    veyru: RunFolder, tmp_path: Path
) -> None:
    run_id, log = copy_run(veyru, tmp_path, 1000000013)
    torn = len(log.read_text().splitlines()) + 1
    with log.open("a") as f:
        f.write('{"event_type": "run_resumed", "after_r')
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: log: line {torn}: the last line is torn (cut off mid-write): an event may "
        "be lost"
    ]


def test_an_event_written_twice_is_named_once(veyru: RunFolder, tmp_path: Path) -> None:
    # A message_sent line written again (same event id) counts its message twice in every
    # table; no other rule sees it (a fresh user's copy passed verify).
    run_id, log = copy_run(veyru, tmp_path, 1000000009)
    events = lines(log)
    message = next(e for e in events if e["event_type"] == "message_sent")
    again = dict(message)
    events.insert(events.index(message) + 1, again)
    write(log, events)
    first, second = line_of(events, message), line_of(events, again)
    assert _texts(RunFolder.at(str(log.parent))) == [
        f"{run_id}: log: line {second} (round {message['round_number']}): event "
        f"{message['event_id']} (message_sent) is in the log twice (lines {first}, {second})"
    ]
