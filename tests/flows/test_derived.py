"""The deployable derived-run flows: fork-at-round and replace-agent, played in this process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.derived import fork_at_round, replace_agent
from flows.simulate import simulate
from glossogen.derive import DeriveError, ForkRequest
from glossogen.eventlog import read_events
from glossogen.launch import RunRequest


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
    return Path(asyncio.run(simulate(request)).run_url)


def _events(run: Path) -> list:
    return read_events(str(run / "veyru.jsonl")).events


def _verdicts(run: Path) -> list[tuple[int, bool]]:
    return [
        (e.round_number, e.success) for e in _events(run) if e.event_type == "round_result_recorded"
    ]


def test_the_fork_at_round_flow_replays_the_rest_like_the_source(
    source: Path, tmp_path: Path
) -> None:
    result = asyncio.run(fork_at_round(ForkRequest("veyru", str(source), 2, str(tmp_path))))
    assert result.status == "completed"
    fork = Path(result.run_url)
    assert fork.parent == tmp_path / "veyru"
    assert _verdicts(fork) == _verdicts(source)
    assert _events(fork)[0].lineage["derivation"] == "fork_at_round"


def test_the_replace_agent_flow_moves_one_seat_to_another_model(
    source: Path, tmp_path: Path
) -> None:
    request = ForkRequest(
        "veyru", str(source), 3, str(tmp_path), replaced_agent_id="field_observer",
        model="scripted-b", provider="scripted",
    )  # fmt: skip
    result = asyncio.run(replace_agent(request))
    assert result.status == "completed"
    events = _events(Path(result.run_url))
    assert events[0].lineage["derivation"] == "replace_agent"
    assert events[0].lineage["replaced_agent_id"] == "field_observer"
    models = {
        e.agent_id: e.model
        for e in events
        if e.event_type == "llm_response_received" and e.round_number > 3
    }
    assert models == {"field_observer": "scripted-b", "stabilization_engineer": "scripted"}


def test_the_replace_agent_flow_needs_a_seat(source: Path, tmp_path: Path) -> None:
    with pytest.raises(
        DeriveError, match=r"^replace-agent needs replaced_agent_id \(and model, provider\)$"
    ):
        asyncio.run(replace_agent(ForkRequest("veyru", str(source), 2, str(tmp_path))))
    assert not (tmp_path / "veyru").exists()


@pytest.mark.parametrize("seat", [{}, {"replaced_agent_id": "field_observer", "model": "scripted-b",
                                       "provider": "scripted"}])  # fmt: skip
def test_the_derived_flows_replay_the_prefix_when_asked(
    source: Path, tmp_path: Path, seat: dict[str, str]
) -> None:
    request = ForkRequest("veyru", str(source), 2, str(tmp_path), **seat, replay=True)
    flow = replace_agent if seat else fork_at_round
    result = asyncio.run(flow(request))
    assert result.status == "completed"
    events = _events(Path(result.run_url))
    assert events[0].lineage["prefix"] == "replayed"
    assert events[0].lineage["derivation"] == ("replace_agent" if seat else "fork_at_round")
    source_ids = {e.event_id for e in _events(source)}
    assert not {e.event_id for e in events} & source_ids  # rounds 1..2 are the replay's
    assert _verdicts(Path(result.run_url))[:2] == _verdicts(source)[:2]
