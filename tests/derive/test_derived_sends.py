"""What a derived run's seats send, read from the request bodies a stub OpenAI server received.

A prisoners' dilemma source plays two rounds on the stub (player_a on ``gpt-4.1`` with the
run's ``agent_model_settings``, player_b on ``gpt-4.1-mini`` with its own entry's settings);
each derived run keeps round 1 and plays round 2. Every seat is registered anew at the
boundary, and every request it makes carries exactly the settings that registration records.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.simulate import resume, simulate
from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import AgentRegistered, RoundEnded, read_events
from glossogen.export import build_trajectories
from glossogen.launch import VIRTUAL_CLOCK_SETTING, RunRequest
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.test_wire_formats import pd_turn

SCENARIO = "prisoners_dilemma"
WIRE = {
    "cache": True,
    "max_tokens": "max_output_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
}
"""Setting -> the field of an OpenAI Responses request body that carries it."""


def dilemma_player(req: RecordedRequest) -> StubReply:
    """Say something on the table, lock in cooperate, then stop, each round (see ``pd_turn``)."""
    phase, called = pd_turn(req)
    if phase == "postmortem" or "lock_in" in called:
        return StubReply(text="Done.")
    if "send_message" in called:
        return StubReply(tool_calls=[("lock_in", {"move": "cooperate"})])
    return StubReply(tool_calls=[("send_message", {"channel_id": "table", "text": "together?"})])


@pytest.fixture(scope="module")
def stub(model_stub_server: StubModelServer) -> Iterator[StubModelServer]:
    """The stub OpenAI endpoint, playing dilemma seats, named by the SDK's variables."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VIRTUAL_CLOCK_SETTING, "1")  # game time: no run here waits on real seconds
        patch.setenv("OPENAI_BASE_URL", model_stub_server.openai_base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test-derived")
        model_stub_server.reset()
        model_stub_server.responder = dilemma_player
        yield model_stub_server
        model_stub_server.reset()


@pytest.fixture(scope="module")
def source(
    prefect_api: str, stub: StubModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    request = RunRequest(
        scenario=SCENARIO,
        model="gpt-4.1",
        provider="openai",
        runs_dir=str(tmp_path_factory.mktemp("runs")),
        config="knobs_default",
        overrides=[
            "round_count=2",
            "idle_floor_seconds=0.05",
            "agent_model_settings.temperature=0.7",
            "agent_model_settings.max_tokens=4000",
            "agents.player_b.model=gpt-4.1-mini",
            "agents.player_b.model_settings.temperature=0.5",
        ],
    )
    result = asyncio.run(simulate(request))
    assert result.status == "completed"
    assert _round_ends(Path(result.run_url)) == SETTLED_AT_ONCE
    return Path(result.run_url)


SETTLED_AT_ONCE = [(1, "settled", 0.0), (2, "settled", 0.0)]
"""Each round's main phase, on the game clock: settled by both lock-ins before any idle floor
or backoff moved game time (model calls take none)."""


def _round_ends(run: Path) -> list[tuple[int, str, float | None]]:
    events = read_events(str(run / f"{SCENARIO}.jsonl")).events
    return [
        (e.round_number, e.trigger, e.elapsed_seconds) for e in events if isinstance(e, RoundEnded)
    ]


def sent(request: RecordedRequest) -> dict[str, Any]:
    """The settings a request body carries, by their ``ModelSettings`` names.

    ``cache`` is true when the body carries a prompt cache key (what caching sends OpenAI).
    """
    carried = {name: request.body[field] for name, field in WIRE.items() if field in request.body}
    return carried | ({"cache": True} if "prompt_cache_key" in request.body else {})


def _derive(stub: StubModelServer, tmp_path: Path, request: ForkRequest) -> Path:
    stub.requests = []
    prepared = prepare_fork(request)
    result = asyncio.run(resume(run_dir=prepared.folder.url))
    assert (result.status, result.rounds_played) == ("completed", 2)
    assert _round_ends(Path(prepared.folder.url)) == SETTLED_AT_ONCE
    return Path(prepared.folder.url)


def _knobs(tmp_path: Path, knobs: dict[str, Any]) -> str:
    path = tmp_path / "fork_knobs.json"
    path.write_text(json.dumps(knobs))
    return str(path)


def _registered_anew(run: Path) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """The registrations the derived run wrote at its boundary (round 1), by seat."""
    events = read_events(str(run / f"{SCENARIO}.jsonl")).events
    return {
        e.agent_id: (e.provider, e.model, e.model_settings)
        for e in events
        if isinstance(e, AgentRegistered) and e.round_number == 1
    }


def _assert_each_seat_sends_its_registration(
    stub: StubModelServer, seats: dict[str, tuple[str, str, dict[str, Any]]]
) -> None:
    models = {model: settings for _, model, settings in seats.values()}
    assert len(models) == len(seats), "each seat needs its own model to tell its requests apart"
    asked = [r for r in stub.requests if r.wire == "responses"]
    assert {r.model for r in asked} == set(models)  # every seat played round 2
    for request in asked:
        assert sent(request) == models[str(request.model)], request.model


def test_the_source_sends_its_own_settings(source: Path) -> None:
    events = read_events(str(source / f"{SCENARIO}.jsonl")).events
    assert {
        e.agent_id: (e.model, e.model_settings) for e in events if isinstance(e, AgentRegistered)
    } == {
        "player_a": ("gpt-4.1", {"cache": True, "max_tokens": 4000, "temperature": 0.7}),
        "player_b": ("gpt-4.1-mini", {"cache": True, "max_tokens": 16384, "temperature": 0.5}),
    }


def test_a_forks_agent_model_settings_replace_the_sources_whole(
    source: Path, stub: StubModelServer, tmp_path: Path
) -> None:
    knobs = _knobs(tmp_path, {"agent_model_settings": {"top_p": 0.9}})
    fork = _derive(stub, tmp_path, ForkRequest(SCENARIO, str(source), 1, str(tmp_path), 1, knobs))
    seats = _registered_anew(fork)
    assert seats == {
        "player_a": ("openai", "gpt-4.1", {"cache": True, "max_tokens": 16384, "top_p": 0.9}),
        # its recorded entry names its own settings: the fork keeps them
        "player_b": (
            "openai",
            "gpt-4.1-mini",
            {"cache": True, "max_tokens": 16384, "temperature": 0.5},
        ),
    }
    _assert_each_seat_sends_its_registration(stub, seats)
    config = json.loads((fork / "config.json").read_text())
    assert {k: v for k, v in config["agent_model_settings"].items() if v is not None} == {
        "cache": True,
        "max_tokens": 16384,
        "top_p": 0.9,
    }


def test_seats_a_forks_model_overrides_leaves_out_send_the_runs_settings(
    source: Path, stub: StubModelServer, tmp_path: Path
) -> None:
    knobs = _knobs(tmp_path, {"model_overrides": {}})
    fork = _derive(stub, tmp_path, ForkRequest(SCENARIO, str(source), 1, str(tmp_path), 1, knobs))
    seats = _registered_anew(fork)
    assert seats == {
        "player_a": ("openai", "gpt-4.1", {"cache": True, "max_tokens": 4000, "temperature": 0.7}),
        # its source model and provider, from its registration; the run's settings
        "player_b": (
            "openai",
            "gpt-4.1-mini",
            {"cache": True, "max_tokens": 4000, "temperature": 0.7},
        ),
    }
    _assert_each_seat_sends_its_registration(stub, seats)
    entry = json.loads((fork / "config.json").read_text())["model_overrides"]["player_b"]
    assert entry == {"model": "gpt-4.1-mini", "provider": "openai", "model_settings": None}


def test_a_replaced_seat_sends_its_knobs_entry_and_the_others_the_runs(
    source: Path, stub: StubModelServer, tmp_path: Path
) -> None:
    entry = {"model": "gpt-4.1-nano", "provider": "openai", "model_settings": {"temperature": 0.2}}
    knobs = _knobs(tmp_path, {"model_overrides": {"player_a": entry}})
    request = ForkRequest(
        SCENARIO, str(source), 1, str(tmp_path), 1, knobs, "player_a", "gpt-4.1-nano", "openai"
    )
    run = _derive(stub, tmp_path, request)
    seats = _registered_anew(run)
    assert seats == {
        "player_a": (
            "openai",
            "gpt-4.1-nano",
            {"cache": True, "max_tokens": 16384, "temperature": 0.2},
        ),
        "player_b": (
            "openai",
            "gpt-4.1-mini",
            {"cache": True, "max_tokens": 4000, "temperature": 0.7},
        ),
    }
    _assert_each_seat_sends_its_registration(stub, seats)
    # Its trajectories name what each seat ran with in this run, not in the source.
    trajectories = build_trajectories(str(run))
    assert {
        agent_id: (t.agent.model_name, t.agent.extra["model_settings"])
        for agent_id, t in trajectories.items()
    } == {agent_id: (model, settings) for agent_id, (_, model, settings) in seats.items()}


def test_a_cross_run_replaced_seat_sends_the_runs_settings(
    source: Path, stub: StubModelServer, tmp_path: Path
) -> None:
    request = ForkRequest(
        SCENARIO, str(source), 1, str(tmp_path), 1, None, "player_a", "gpt-4o-mini", "openai",
        donor_run_dir=str(source), donor_agent_id="player_b",
    )  # fmt: skip
    seats = _registered_anew(_derive(stub, tmp_path, request))
    assert seats == {
        # the source's settings for this seat stay behind with the model it replaces
        "player_a": (
            "openai",
            "gpt-4o-mini",
            {"cache": True, "max_tokens": 4000, "temperature": 0.7},
        ),
        "player_b": (
            "openai",
            "gpt-4.1-mini",
            {"cache": True, "max_tokens": 16384, "temperature": 0.5},
        ),
    }
    _assert_each_seat_sends_its_registration(stub, seats)


def test_a_fork_whose_seats_would_drop_a_setting_is_refused_before_its_folder(
    source: Path, stub: StubModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    knobs = _knobs(tmp_path, {"agent_model_settings": {"thinking": False}})
    with pytest.raises(SystemExit) as exited:
        main(
            ["fork-at-round", SCENARIO, "--source-run-dir", str(source), "--after-round", "1",
             "--runs-dir", str(tmp_path / "runs"), "--knobs", knobs]
        )  # fmt: skip
    assert exited.value.code == 65
    assert capsys.readouterr().err == (
        "glossogen: error: agent player_a on openai:gpt-4.1 cannot think (pydantic-ai's "
        "profile), so thinking=false would be dropped\n"
    )
    assert not (tmp_path / "runs").exists()


def test_a_fork_of_a_fork_at_its_boundary_keeps_the_parents_registrations(
    source: Path, stub: StubModelServer, tmp_path: Path
) -> None:
    # The parent moved player_a to gpt-4.1-nano after round 1; its child forks it after the
    # same round, where the parent's registrations were logged after round 1's events.
    request = ForkRequest(
        SCENARIO, str(source), 1, str(tmp_path / "parent"), 1, None, "player_a", "gpt-4.1-nano",
        "openai",
    )  # fmt: skip
    parent = _derive(stub, tmp_path, request)
    child = _derive(
        stub, tmp_path, ForkRequest(SCENARIO, str(parent), 1, str(tmp_path / "child"), 1)
    )
    seats = _registered_anew(child)
    assert (
        seats
        == _registered_anew(parent)
        == {
            "player_a": (
                "openai",
                "gpt-4.1-nano",
                {"cache": True, "max_tokens": 4000, "temperature": 0.7},
            ),
            "player_b": (
                "openai",
                "gpt-4.1-mini",
                {"cache": True, "max_tokens": 16384, "temperature": 0.5},
            ),
        }
    )
    _assert_each_seat_sends_its_registration(stub, seats)
