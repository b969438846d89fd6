"""Fork-at-round, replace-agent and cross-run-replace-agent: new folders from a source's log."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from flows.simulate import resume, simulate
from glossogen.cli import main
from glossogen.cli._refusals import said
from glossogen.derive import DeriveError, ForkRequest, PreparedFork, prepare_fork, read_state
from glossogen.eventlog import AgentRegistered, SimulationEnded, read_events
from glossogen.launch import RunRequest
from glossogen.storage import RunStore
from tests.fixtures.played_runs import play_run
from tests.fixtures.polling import child_pids, reap


@pytest.fixture(scope="module")
def source(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    request = RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(runs),
        config="knobs_default",
    )
    result = asyncio.run(simulate(request))
    assert result.status == "completed"
    return Path(result.run_url)


def _digest(folder: Path) -> str:
    return hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())
    ).hexdigest()


def _verdicts(run: Path) -> list[tuple[int, bool, str]]:
    events = read_events(str(run / "veyru.jsonl")).events
    return [
        (e.round_number, e.success, e.reason)
        for e in events
        if e.event_type == "round_result_recorded"
    ]


def _play(prepared: PreparedFork) -> Path:
    result = asyncio.run(resume(run_dir=prepared.folder.url))
    assert result.status == "completed"
    return Path(prepared.folder.url)


def test_a_fork_after_round_2_replays_rounds_3_to_5_like_the_source(
    source: Path, tmp_path: Path
) -> None:
    before = _digest(source)
    prepared = prepare_fork(ForkRequest("veyru", str(source), 2, str(tmp_path)))
    fork = _play(prepared)
    assert _verdicts(fork) == _verdicts(source)
    assert _digest(source) == before  # the source is never touched
    lineage = json.loads((fork / "lineage.json").read_text())
    assert lineage == {
        "derivation": "fork_at_round",
        "source_run_id": f"veyru/{source.name}",
        "source_run_dir": str(source),
        "after_round": 2,
    }
    events = read_events(str(fork / "veyru.jsonl")).events
    assert events[0].event_type == "simulation_started"
    assert events[0].lineage == lineage and events[0].run_id == prepared.folder.run_id
    assert json.loads((fork / "labels.json").read_text()) == {}


def test_a_fork_can_run_further_than_its_source(source: Path, tmp_path: Path) -> None:
    fork = _play(prepare_fork(ForkRequest("veyru", str(source), 5, str(tmp_path), rounds_after=2)))
    assert [v[0] for v in _verdicts(fork)] == [1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize(("rule", "kept_rounds"), [("full", 5), ("none", 0), ("from_round:2", 4)])
def test_a_replaced_seat_starts_with_the_history_its_visibility_allows(
    source: Path, tmp_path: Path, rule: str, kept_rounds: int
) -> None:
    prepared = prepare_fork(
        ForkRequest(
            "veyru",
            str(source),
            5,
            str(tmp_path),
            1,
            None,
            "field_observer",
            "other-script",
            "scripted",
            rule,
        )
    )
    state = read_state(read_events(str(Path(prepared.folder.url) / "veyru.jsonl")).events)
    source_state = read_state(read_events(str(source / "veyru.jsonl")).events)
    full = source_state.histories["field_observer"]
    per_round = [
        read_state(read_events(str(source / "veyru.jsonl")).events, after_round=n).histories[
            "field_observer"
        ]
        for n in range(1, 6)
    ]
    expected = {5: full, 0: [], 4: full[len(per_round[0]) :]}[kept_rounds]
    assert state.histories["field_observer"] == expected
    assert (
        state.histories["stabilization_engineer"]
        == source_state.histories["stabilization_engineer"]
    )
    assert state.seats["field_observer"][:2] == ("other-script", "scripted")
    fork = _play(prepared)
    registered = [
        e for e in read_events(str(fork / "veyru.jsonl")).events if isinstance(e, AgentRegistered)
    ]
    # The source's registrations, then every seat anew at the boundary (what the fork sends).
    assert [(e.agent_id, e.model, e.round_number) for e in registered] == [
        ("field_observer", "scripted", 0),
        ("stabilization_engineer", "scripted", 0),
        ("field_observer", "other-script", 5),
        ("stabilization_engineer", "scripted", 5),
    ]


def test_cross_run_replace_brings_the_donor_history(source: Path, tmp_path: Path) -> None:
    prepared = prepare_fork(
        ForkRequest(
            "veyru",
            str(source),
            3,
            str(tmp_path),
            1,
            None,
            "field_observer",
            "scripted",
            "scripted",
            "full",
            str(source),
            "stabilization_engineer",
        )
    )
    state = read_state(read_events(str(Path(prepared.folder.url) / "veyru.jsonl")).events)
    donor = read_state(read_events(str(source / "veyru.jsonl")).events).histories[
        "stabilization_engineer"
    ]
    assert state.histories["field_observer"] == donor
    assert (
        json.loads((Path(prepared.folder.url) / "lineage.json").read_text())["donor_agent_id"]
        == "stabilization_engineer"
    )


BAD = [
    (dict(after_round=6), "--after-round 6: the run's completed rounds are 1..5", 65),
    (dict(after_round=0), "--after-round must be at least 1, got 0", 64),
    (
        dict(replaced_agent_id="nobody", model="m", provider="scripted"),
        "--replaced-agent-id 'nobody': the run's agents are field_observer, stabilization_engineer",
        65,
    ),
    (
        dict(
            replaced_agent_id="field_observer",
            model="m",
            provider="scripted",
            channel_visibility="from_round:4",
            after_round=3,
        ),
        "--channel-visibility from_round:4: R must be 1..3 (the swap round)",
        65,
    ),
    (
        dict(
            replaced_agent_id="field_observer",
            model="m",
            provider="scripted",
            donor_run_dir="SOURCE",
            donor_agent_id="ghost",
        ),
        "--donor-agent-id 'ghost': the donor's agents are field_observer, stabilization_engineer",
        65,
    ),
    (
        dict(source_run_dir="EMPTY"),
        "no event log EMPTY/veyru.jsonl: is 'EMPTY' a run folder of veyru "
        "(<runs-dir>/<scenario>/<unix_ts>)?",
        66,
    ),
    (dict(source_run_dir="EMPTY/nonexistent/1"), "'EMPTY/nonexistent/1' does not exist", 66),
    (
        dict(
            replaced_agent_id="field_observer",
            model="m",
            provider="scripted",
            donor_run_dir="EMPTY/gone/veyru/2",
            donor_agent_id="field_observer",
        ),
        "'EMPTY/gone/veyru/2' does not exist",
        66,
    ),
]


@pytest.mark.parametrize(("changes", "needle", "code"), BAD, ids=[b[1][:40] for b in BAD])
def test_bad_derivations_are_refused_and_claim_nothing(
    source: Path, tmp_path: Path, changes: dict, needle: str, code: int
) -> None:
    fields = {
        "scenario": "veyru",
        "source_run_dir": str(source),
        "after_round": 2,
        "runs_dir": str(tmp_path / "runs"),
    }
    fields |= {
        k: (
            str(source)
            if v == "SOURCE"
            else v.replace("EMPTY", str(tmp_path))
            if isinstance(v, str)
            else v
        )
        for k, v in changes.items()
    }
    with pytest.raises(DeriveError) as refused:
        prepare_fork(ForkRequest(**fields))
    # The CLI's line: a refused request value (refused.value.refusal) is named by its flag.
    assert said(refused.value) == needle.replace("EMPTY", str(tmp_path))
    assert refused.value.exit_code == code
    assert not (tmp_path / "runs").exists()


def test_the_cli_launches_detached_and_returns_at_once(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = child_pids()
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "fork-at-round",
                "veyru",
                "--source-run-dir",
                str(source),
                "--after-round",
                "4",
                "--runs-dir",
                str(tmp_path),
            ]
        )
    out = capsys.readouterr().out.splitlines()
    assert exited.value.code == 0
    run_id = out[0].removeprefix("new_run_id=")
    run_dir = Path(out[1].removeprefix("new_run_dir="))
    assert run_dir == tmp_path / run_id and (run_dir / "lineage.json").is_file()
    assert (run_dir / "veyru_stdout.log").exists()
    # The detached run is this process's child: it is waited for here, so it never outlives
    # the test (nor writes into a folder the next test's cleanup removes).
    # It may have ended already (a zombie until reaped): found as a new child, not by its args.
    (child,) = child_pids() - before
    assert reap(child, "the detached fork to finish") == 0
    ended = [
        e
        for e in read_events(str(run_dir / "veyru.jsonl")).events
        if isinstance(e, SimulationEnded)
    ]
    assert [e.status for e in ended] == ["completed"]


def _prompts(history: list) -> list[str]:
    return [
        p.content
        for m in history
        for p in m.parts
        if type(p).__name__ == "UserPromptPart" and isinstance(p.content, str)
    ]


@pytest.mark.parametrize("rule", ["link=full,postmortem=none", "postmortem=none"])
def test_per_channel_visibility_keeps_the_link_and_drops_the_postmortems(
    source: Path, tmp_path: Path, rule: str
) -> None:
    prepared = prepare_fork(
        ForkRequest(
            "veyru",
            str(source),
            5,
            str(tmp_path),
            1,
            None,
            "field_observer",
            "scripted",
            "scripted",
            rule,
        )
    )
    seat = read_state(read_events(str(Path(prepared.folder.url) / "veyru.jsonl")).events).histories[
        "field_observer"
    ]
    full = read_state(read_events(str(source / "veyru.jsonl")).events).histories["field_observer"]
    assert sum("is over:" in p for p in _prompts(full)) == 5  # the 5 postmortem briefings
    assert not any("is over:" in p for p in _prompts(seat))
    assert (
        sum(p.startswith("Round ") and "A new veyru" in p for p in _prompts(seat)) == 5
    )  # every round's briefing kept
    assert (len(seat), len(full)) == (67, 96)  # the seat keeps 67 of the source seat's 96 messages


def test_per_channel_visibility_refuses_an_unknown_channel(source: Path, tmp_path: Path) -> None:
    with pytest.raises(DeriveError) as refused:
        prepare_fork(
            ForkRequest(
                "veyru",
                str(source),
                2,
                str(tmp_path / "runs"),
                None,
                None,
                "field_observer",
                "scripted",
                "scripted",
                "radio=none",
            )
        )
    # The CLI's line names its flag; the library's (and MCP's) the request field.
    assert said(refused.value) == (
        "--channel-visibility: unknown channel 'radio' (channels: link, postmortem)"
    )
    assert str(refused.value) == (
        "channel_visibility: unknown channel 'radio' (channels: link, postmortem)"
    )
    assert not (tmp_path / "runs").exists()


SEAT = ["--replaced-agent-id", "field_observer", "--model", "scripted", "--provider", "scripted"]
WAITED = {
    "fork-at-round": [],
    "replace-agent": SEAT,
    "cross-run-replace-agent": [
        *SEAT, "--donor-run-dir", "SOURCE", "--donor-agent-id", "stabilization_engineer",
    ],
}  # fmt: skip


@pytest.mark.parametrize("command", list(WAITED))
def test_with_wait_the_new_run_id_is_printed_once(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    flags = [str(source) if f == "SOURCE" else f for f in WAITED[command]]
    with pytest.raises(SystemExit) as exited:
        main(
            [command, "veyru", "--source-run-dir", str(source), "--after-round", "4",
             "--runs-dir", str(tmp_path), *flags, "--wait"]
        )  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert exited.value.code == 0
    (run_dir,) = [p for p in (tmp_path / "veyru").iterdir()]
    run_id = f"veyru/{run_dir.name}"
    assert out[:2] == [f"new_run_id={run_id}", f"new_run_dir={run_dir}"]
    assert [line for line in out if line.startswith("new_run_")] == out[:2]
    assert out[-1].startswith(f"{run_id} completed: ")
    assert not (run_dir / "veyru_stdout.log").exists()  # played here, not detached


def test_lineage_records_the_source_and_donor_folders_resolved(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(source.parents[1])  # the runs folder: ./veyru/<ts> is the source
    typed = f"./veyru/{source.name}/"
    prepared = prepare_fork(
        ForkRequest(
            "veyru", typed, 3, str(tmp_path), 1, None, "field_observer", "scripted",
            "scripted", "full", typed, "stabilization_engineer",
        )
    )  # fmt: skip
    fork = Path(prepared.folder.url)
    lineage = json.loads((fork / "lineage.json").read_text())
    assert (lineage["source_run_dir"], lineage["donor_run_dir"]) == (str(source), str(source))
    started = read_events(str(fork / "veyru.jsonl")).events[0]
    assert started.lineage == lineage


def test_lineage_keeps_an_s3_source_url_as_typed(s3_bucket: str) -> None:
    source = play_run(f"{s3_bucket}/runs", rounds=2)
    typed = f"{source.url}/"
    prepared = prepare_fork(ForkRequest("veyru", typed, 1, f"{s3_bucket}/forks"))
    store = RunStore(prepared.folder.url)
    lineage = store.read_json(prepared.folder.url, "lineage.json")
    assert lineage["source_run_dir"] == f"{s3_bucket}/runs/veyru/{source.run_id.split('/')[1]}/"
