"""Resume in place: a run cut off anywhere continues to the same end, losing and repeating nothing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter

from flows.simulate import resume, simulate
from glossogen.derive import DeriveError, ForkRequest, open_resume, prepare_fork, read_state
from glossogen.eventlog import LlmResponseReceived, read_events
from glossogen.launch import ResumeRequest, RunRequest, plan_resume
from glossogen.storage import RunFolder, RunLock


def _resume(run: Path, *overrides: str, allow: bool = False) -> Any:
    """Play the run in ``run`` on to its end, with knob ``overrides`` on its recorded config."""
    request = ResumeRequest(run_dir=str(run), overrides=list(overrides), allow_config_change=allow)
    config, _ = plan_resume(request)
    return asyncio.run(resume(config, str(run), allow))


def _request(runs_dir: Path, *overrides: str) -> RunRequest:
    return RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(runs_dir),
        config="knobs_default",
        overrides=list(overrides),
    )


@pytest.fixture(scope="module")
def finished(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    result = asyncio.run(simulate(_request(runs)))
    assert result.status == "completed"
    return Path(result.run_url)


@pytest.fixture(scope="module")
def three_rounds(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 3-round run: the first, a middle and the last round, each cut and resumed."""
    runs = tmp_path_factory.mktemp("three")
    result = asyncio.run(simulate(_request(runs, "round_count=3")))
    assert (result.status, result.rounds_played) == ("completed", 3)
    return Path(result.run_url)


RANDOM_FIELDS = ("timestamp", "run_id", "conversation_id", "message_id")


def _strip(value: Any, fields: tuple[str, ...] = RANDOM_FIELDS) -> Any:
    """Drop ``fields`` at every depth: by default wall-clock times and random ids, which differ
    between two plays of the same seed."""
    if isinstance(value, dict):
        return {k: _strip(v, fields) for k, v in value.items() if k not in fields}
    if isinstance(value, list):
        return [_strip(v, fields) for v in value]
    return value


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive requests as one, as pydantic-ai itself merges them before sending."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and message["kind"] == "request" and out[-1]["kind"] == "request":
            out[-1] = {**out[-1], "parts": out[-1]["parts"] + message["parts"]}
        else:
            out.append(message)
    return out


def _histories(log: Path) -> dict[str, Any]:
    """Each agent's history as the model is sent it (ids and times stripped)."""
    state = read_state(read_events(str(log)).events)
    return {
        agent: _merged(_strip(ModelMessagesTypeAdapter.dump_python(history, mode="json")))
        for agent, history in state.histories.items()
    }


def _cut_points(
    lines: list[str], sends: tuple[int, ...] = (0, 3, 9, 20), rounds: tuple[int, ...] = (0, 2, 4)
) -> dict[str, int]:
    """Name -> number of log lines kept: a kill right after that event was written.

    ``sends`` and ``rounds`` are the indexes (from 0) of the sends and of the rounds cut in.
    """
    kinds = [json.loads(line)["event_type"] for line in lines]
    points: dict[str, int] = {}

    def nth(kind: str, n: int) -> int:
        return [i for i, k in enumerate(kinds) if k == kind][n] + 1

    for n in (0, 3, 9, 20):
        points[f"mid-tool-call-{n}"] = nth("tool_call_invoked", n)
    for n in sends:
        points[f"mid-send-{n}"] = nth("message_sent", n)
    for n in rounds:
        points[f"between-verdict-and-postmortem-{n}"] = nth("round_result_recorded", n)
        points[f"in-postmortem-{n}"] = nth("postmortem_started", n) + 2
        points[f"at-round-boundary-{n}"] = nth("round_completed", n)
    points["after-registration"] = nth("agent_registered", 1)
    points["after-a-judge-ruling"] = nth("judge_called", 1)
    points["before-simulation-ended"] = len(lines) - 1
    return points


def _cut_copy(finished: Path, dest: Path, keep: int, torn_tail: bool) -> Path:
    run = dest / "veyru" / finished.name
    shutil.copytree(finished, run)
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    text = "".join(lines[:keep])
    if torn_tail:  # the killed writer left half a line
        text += lines[keep][: len(lines[keep]) // 2]
    (run / "veyru.jsonl").write_text(text)
    return run


def test_twenty_cut_points_each_resume_to_the_uninterrupted_end(
    three_rounds: Path, tmp_path: Path
) -> None:
    # Sends 0, 3, 9 and 15 of the 3-round run fall in rounds 1, 1, 2 and 3 (checked below);
    # each of its three rounds is cut between verdict and postmortem, in it, and at its end.
    finished = three_rounds
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    points = _cut_points(lines, sends=(0, 3, 9, 15), rounds=(0, 1, 2))
    assert len(points) == 20
    kept = [json.loads(line) for line in lines]
    assert [kept[points[f"mid-send-{n}"] - 1]["round_number"] for n in (0, 3, 9, 15)] == [
        1, 1, 2, 3
    ]  # fmt: skip
    full = read_events(str(finished / "veyru.jsonl")).events
    expected_verdicts = [
        (e.round_number, e.success, e.reason)
        for e in full
        if e.event_type == "round_result_recorded"
    ]
    expected_histories = _histories(finished / "veyru.jsonl")
    for i, (name, keep) in enumerate(sorted(points.items())):
        run = _cut_copy(finished, tmp_path / name, keep, torn_tail=i % 2 == 0)
        result = asyncio.run(resume(run_dir=str(run)))
        assert result.status == "completed", name
        read = read_events(str(run / "veyru.jsonl"))
        events = read.events
        assert read.invalid_lines == 0, name  # a torn last line is set aside, not kept
        assert (run / "veyru.jsonl.torn").exists() == (i % 2 == 0), name
        verdicts = [
            (e.round_number, e.success, e.reason)
            for e in events
            if e.event_type == "round_result_recorded"
        ]
        assert verdicts == expected_verdicts, name  # exactly one per round, same as uninterrupted
        ids = Counter(e.event_id for e in events)
        assert max(ids.values()) == 1, name
        message_ids = Counter(e.message_id for e in events if e.event_type == "message_sent")
        assert max(message_ids.values()) == 1, name
        assert [e.event_type for e in events].count("simulation_ended") == 1
        stamps = [e.timestamp for e in events]
        assert stamps == sorted(stamps), name  # game time never runs backwards across a resume
        assert _histories(run / "veyru.jsonl") == expected_histories, name


def test_a_finished_run_is_refused_with_a_pointer_to_fork(finished: Path) -> None:
    with pytest.raises(DeriveError) as refused:
        open_resume(RunFolder.at(str(finished)))
    assert str(refused.value) == (
        f"run veyru/{finished.name} already ended (simulation_ended); "
        "use fork-at-round to play further rounds from it"
    )


def test_a_changed_config_is_refused_unless_allowed_and_then_logged(
    prefect_api: str, finished: Path, tmp_path: Path
) -> None:
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    run = _cut_copy(finished, tmp_path, _cut_points(lines)["at-round-boundary-2"], torn_tail=False)
    with pytest.raises(DeriveError) as refused:
        _resume(run, "round_count=6")
    assert str(refused.value) == (
        "the config differs from the one the run recorded (round_count 5 -> 6); "
        "pass allow_config_change to resume under the new one"
    )
    result = _resume(run, "round_count=6", allow=True)
    assert (result.status, result.rounds_played) == ("completed", 6)
    events = read_events(str(run / "veyru.jsonl")).events
    (resumed,) = [e for e in events if e.event_type == "run_resumed"]
    assert (resumed.after_round, resumed.reopened_round) == (3, None)
    assert resumed.config_changes == {"round_count": {"recorded": 5, "now": 6}}


def test_a_labelled_run_resumed_without_labels_keeps_its_own(
    prefect_api: str, finished: Path, tmp_path: Path
) -> None:
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    run = _cut_copy(finished, tmp_path, _cut_points(lines)["at-round-boundary-2"], torn_tail=False)
    config = json.loads((run / "config.json").read_text())
    labels = {"sweep": "s1", "cell": "c1", "trial": "1"}
    (run / "config.json").write_text(json.dumps({**config, "labels": labels}))
    (run / "labels.json").write_text(json.dumps(labels))
    other = ResumeRequest(run_dir=str(run), config="knobs_default", overrides=["labels.sweep=s2"])
    with pytest.raises(Exception) as refused:
        plan_resume(other)
    assert str(refused.value) == (
        'the config differs from the one the run recorded (labels {"sweep": "s1", "cell": "c1", '
        '"trial": "1"} -> {"sweep": "s2"}); pass allow_config_change to resume under the new one'
    )
    config, _ = plan_resume(ResumeRequest(run_dir=str(run), config="knobs_default"))
    result = asyncio.run(resume(config, str(run)))  # the preset, no labels
    assert (result.status, result.rounds_played) == ("completed", 5)
    assert json.loads((run / "labels.json").read_text()) == labels
    (resumed,) = [
        e for e in read_events(str(run / "veyru.jsonl")).events if e.event_type == "run_resumed"
    ]
    assert resumed.config_changes == {}


def test_a_folder_without_a_log_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "veyru" / "1700000000"
    with pytest.raises(DeriveError) as refused:
        open_resume(RunFolder.at(str(folder)))
    assert refused.value.exit_code == 66
    assert str(refused.value) == (
        f"no event log {folder}/veyru.jsonl: is {str(folder)!r} a run folder of veyru?"
    )


def test_a_run_another_live_process_writes_is_refused(finished: Path, tmp_path: Path) -> None:
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    run = _cut_copy(finished, tmp_path, _cut_points(lines)["at-round-boundary-2"], torn_tail=False)
    held = RunLock(RunFolder.at(str(run)))  # as the writing process holds it
    try:
        with pytest.raises(DeriveError) as refused:
            open_resume(RunFolder.at(str(run)))
        assert str(refused.value) == (
            f"run {run} is being written by another live process (pid {os.getpid()})"
        )
        assert refused.value.exit_code == 75
    finally:
        held.release()
    assert open_resume(RunFolder.at(str(run))).next_round == 4


@pytest.fixture(scope="module")
def changed(prefect_api: str, finished: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished run cut after round 3, resumed with round_count 5 -> 6 and played out."""
    dest = tmp_path_factory.mktemp("changed")
    lines = (finished / "veyru.jsonl").read_text().splitlines(keepends=True)
    run = _cut_copy(finished, dest, _cut_points(lines)["at-round-boundary-2"], torn_tail=False)
    result = _resume(run, "round_count=6", allow=True)
    assert (result.status, result.rounds_played) == ("completed", 6)
    return run


def test_after_an_allowed_change_config_json_holds_the_config_in_force(
    finished: Path, changed: Path
) -> None:
    original = json.loads((finished / "config.json").read_text())
    assert original["round_count"] == 5
    assert json.loads((changed / "config.json").read_text()) == {**original, "round_count": 6}
    events = read_events(str(changed / "veyru.jsonl")).events
    assert events[0].scenario_config == original  # simulation_started keeps the first config
    assert [e.config_changes for e in events if e.event_type == "run_resumed"] == [
        {"round_count": {"recorded": 5, "now": 6}}
    ]


def test_a_second_resume_compares_against_the_config_in_force(
    finished: Path, changed: Path, tmp_path: Path
) -> None:
    lines = (changed / "veyru.jsonl").read_text().splitlines(keepends=True)
    run = _cut_copy(changed, tmp_path, _cut_points(lines)["at-round-boundary-4"] - 1, False)
    kept = read_events(str(run / "veyru.jsonl")).events
    assert max(e.round_number for e in kept if e.event_type == "round_completed") == 4
    original = json.loads((finished / "config.json").read_text())
    with pytest.raises(DeriveError) as refused:
        plan_resume(
            ResumeRequest(run_dir=str(run), overrides=[f"round_count={original['round_count']}"])
        )
    assert str(refused.value) == (
        "the config differs from the one the run recorded (round_count 6 -> 5); "
        "pass allow_config_change to resume under the new one"
    )
    result = _resume(run, "round_count=6")  # no flag: 6 is the config in force
    assert (result.status, result.rounds_played) == ("completed", 6)
    events = read_events(str(run / "veyru.jsonl")).events
    assert [(e.after_round, e.config_changes) for e in events if e.event_type == "run_resumed"] == [
        (3, {"round_count": {"recorded": 5, "now": 6}}),
        (4, {}),
    ]
    assert json.loads((run / "config.json").read_text())["round_count"] == 6


@pytest.mark.parametrize("config_json", [True, False], ids=["config.json", "started-only"])
@pytest.mark.parametrize(("after_round", "round_count"), [(2, 5), (3, 6), (4, 6)])
def test_a_fork_of_a_changed_run_takes_the_config_its_next_round_was_played_under(
    changed: Path, tmp_path: Path, after_round: int, round_count: int, config_json: bool
) -> None:
    source = tmp_path / "source" / "veyru" / changed.name
    shutil.copytree(changed, source)
    if not config_json:  # a folder without config.json: simulation_started's is the first
        (source / "config.json").unlink()
    prepared = prepare_fork(ForkRequest("veyru", str(source), after_round, str(tmp_path)))
    fork_config = json.loads((Path(prepared.folder.url) / "config.json").read_text())
    assert fork_config["round_count"] == round_count


def test_a_resume_counts_the_requests_of_the_round_it_plays_again_against_the_turn_cap(
    three_rounds: Path, tmp_path: Path
) -> None:
    """A run cut off in round 2 made requests in that round; the resume plays the round again,
    and its seats may make only what the cap has left (a fresh user saw 201 requests a seat
    under ``--max-agent-turns 200`` after a stop and a resume)."""
    lines = (three_rounds / "veyru.jsonl").read_text().splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    answers = [i for i, e in enumerate(events) if e["event_type"] == "llm_response_received"]
    in_round_2 = [i for i in answers if events[i]["round_number"] == 2]
    keep = in_round_2[1] + 1  # killed right after round 2's second answer was written
    run = _cut_copy(three_rounds, tmp_path / "cut", keep, torn_tail=False)

    def answered(upto: int) -> Counter[str]:
        return Counter(e["agent_id"] for e in events[:upto]
                       if e["event_type"] == "llm_response_received")  # fmt: skip

    whole = answered(len(events))  # what each seat needed for the three rounds
    boundary = answered(in_round_2[0])  # up to round 1's end (no answer between)
    made = answered(keep)
    state = read_state(read_events(str(run / "veyru.jsonl")).events)
    assert (state.after_round, state.turns, state.made) == (1, dict(boundary), dict(made))
    assert sum(made.values()) == sum(boundary.values()) + 2
    seat = next(a for a in sorted(made) if made[a] > boundary[a])  # made some of them
    cap = whole[seat]  # just what it needed for the three rounds uninterrupted
    request = ResumeRequest(run_dir=str(run), max_agent_turns=cap, allow_config_change=True)
    config, _ = plan_resume(request)
    result = asyncio.run(resume(config, str(run), True))
    logged = Counter(e.agent_id for e in read_events(str(run / "veyru.jsonl")).events
                     if isinstance(e, LlmResponseReceived))  # fmt: skip
    # Its cut-off requests in round 2 came on top of what it needed: it stops at the cap (it
    # made cap + 1 before; its last request comes after the round settled, so the run still
    # completes).
    assert (logged[seat], result.status) == (cap, "completed")
    assert all(n <= cap for n in logged.values())
