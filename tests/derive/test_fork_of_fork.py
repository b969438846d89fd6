"""A swap in a fork is filtered by ``--channel-visibility`` as the same swap in its source.

A derived run registers every seat anew at its boundary and logs each seat's history again in
one setup-phase piece; the rounds and phases that history was first logged in still decide
what an incoming model sees when the fork itself is forked with a seat replaced.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.simulate import resume, simulate
from glossogen.derive import ForkRequest, prepare_fork, read_state
from glossogen.eventlog import read_events
from glossogen.launch import RunRequest


@pytest.fixture(scope="module")
def runs(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 5-round scripted veyru run and its fork after round 2, played to round 5."""
    root = tmp_path_factory.mktemp("runs")
    request = RunRequest(
        scenario="veyru",
        model="scripted",
        provider="scripted",
        runs_dir=str(root / "source"),
        config="knobs_default",
    )
    source = asyncio.run(simulate(request))
    assert source.status == "completed"
    prepared = prepare_fork(ForkRequest("veyru", source.run_url, 2, str(root / "fork")))
    assert asyncio.run(resume(run_dir=prepared.folder.url)).status == "completed"
    return Path(source.run_url), Path(prepared.folder.url)


def _swapped_history(run: Path, rule: str, runs_dir: Path) -> list[str]:
    prepared = prepare_fork(
        ForkRequest(
            "veyru", str(run), 4, str(runs_dir), 1, None,
            "field_observer", "other-script", "scripted", rule,
        )
    )  # fmt: skip
    events = read_events(f"{prepared.folder.url}/veyru.jsonl").events
    return [type(m).__name__ for m in read_state(events).histories["field_observer"]]


@pytest.mark.parametrize(
    ("rule", "kept"),
    [("from_round:2", 56), ("from_round:4", 20), ("postmortem=none", 61), ("none", 0)],
)
def test_a_swap_in_a_fork_sees_what_the_same_swap_in_the_source_sees(
    runs: tuple[Path, Path], tmp_path: Path, rule: str, kept: int
) -> None:
    source, fork = runs
    in_source = _swapped_history(source, rule, tmp_path / "a")
    in_fork = _swapped_history(fork, rule, tmp_path / "b")
    everything = _swapped_history(source, "full", tmp_path / "c")
    assert in_fork == in_source
    # the rule keeps that many of the seat's 84 messages of rounds 1-4
    assert (len(in_source), len(everything)) == (kept, 84)
