"""``analyze_runs`` and ``list_analysis_fields`` through the SDK's client (the server built
in-process): the same typed result as ``glossogen analyze --json`` for the same query, and
one-line refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.cohort import (
    SURFACE_CELLS,
    SURFACE_FLAGS,
    Cohort,
    analyze_json,
    build,
    cells,
)
from tests.mcp.conftest import call, in_process_session, refusal

ARGUMENTS: dict[str, Any] = {
    "grain": "round", "by": ["round_budget_chars"],
    "measures": ["round_success:rate", "mean_chars_per_round"],
    "compare": "round_budget_chars=300,600", "seed": 7, "resamples": 10,
}  # fmt: skip


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("analysis-mcp-runs")))


def test_the_same_answer_as_the_cli(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = analyze_json(capsys, "--runs-dir", cohort.runs_dir, *SURFACE_FLAGS)
    picked = [cohort.ids["r1"], cohort.ids["r3"]]
    by_id = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--run-id", picked[0], "--run-id",
                     picked[1], "--measure", "task_done:rate")  # fmt: skip
    fields_cli = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--grain", "round",
                          "--list-fields")  # fmt: skip

    async def flow() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str]]:
        async with in_process_session(Path(cohort.runs_dir), tmp_path) as session:
            got = await call(session, "analyze_runs", **ARGUMENTS)
            picked_got = await call(
                session,
                "analyze_runs",
                measures=["task_done:rate"],
                selection={"kind": "run_ids", "run_ids": picked},
            )
            listed = await call(session, "list_analysis_fields", grain="round")
            refused = [
                await refusal(session, "analyze_runs", measures=["round_success:avg"]),
                await refusal(session, "analyze_runs", measures=["nope"]),
                await refusal(session, "analyze_runs", measures=["task_done"], by=["a", "b", "c"]),
                await refusal(session, "analyze_runs", measures=["task_done"], by=[""]),
                await refusal(
                    session,
                    "analyze_runs",
                    measures=["task_done"],
                    selection={"kind": "filters", "knob": ["x"]},
                ),
                await refusal(session, "list_analysis_fields", grain="turn"),
                await refusal(
                    session, "list_analysis_fields", grain="observation", metric="nope"
                ),  # fmt: skip
            ]
            return got, picked_got, listed, refused

    got, picked_got, listed, refused = asyncio.run(flow())
    assert got == cli
    assert picked_got == by_id
    assert picked_got["groups"][0]["cells"][0]["value"] == 0.5
    assert listed == fields_cli
    assert cells(got) == SURFACE_CELLS
    assert got["groups"][0]["cells"][0]["interval"] == {
        "low": 0.5, "high": 1.0, "method": "bootstrap"
    }  # fmt: skip
    (success, chars) = got["comparisons"]
    assert (success["difference"], success["paired"], success["pairing"]) == (-0.5, True, "seed")
    assert (chars["difference"], chars["pairing"]) == (15.0, "unpaired: the arms' seeds differ")
    assert refused == [
        "measure 'round_success:avg': unknown aggregate 'avg' (one of mean, median, sum, count, "
        "min, max, stddev, sem, rate)",
        "measure 'nope': no such field at the run grain of this selection (list the grain's "
        "fields)",
        "key 'a,b,c': at most two keys",  # as --by a,b,c (was pydantic's "List should have...")
        "key '': a key is empty",
        "knob 'x': no operator; write <knob><op><value> with op one of != >= <= = > <",
        "grain 'turn' is not one of run, round, agent, message, call, observation",
        "metric 'nope': no report of this selection has this metric (they have "
        "mean_chars_per_round, round_success, task_done, team_split)",
    ]


def test_a_run_id_that_no_longer_resolves_is_refused_as_the_cli_refuses_it(
    cohort: Cohort, tmp_path: Path
) -> None:
    """The cohort is the export's selection: the CLI's line, not an answer without the id."""
    selection = {"kind": "run_ids", "run_ids": [cohort.ids["r1"], "veyru/9999999999"]}

    async def flow() -> list[str]:
        async with in_process_session(Path(cohort.runs_dir), tmp_path) as session:
            return [
                await refusal(
                    session, "analyze_runs", measures=["total_chars"], selection=selection
                ),  # fmt: skip
                await refusal(
                    session,
                    "analyze_runs",
                    measures=["total_chars"],
                    grain="round",
                    selection=selection,
                ),  # fmt: skip
                await refusal(session, "list_analysis_fields", selection=selection),
            ]

    assert asyncio.run(flow()) == ["run ids that no longer resolve: veyru/9999999999"] * 3
