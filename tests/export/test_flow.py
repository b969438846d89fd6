"""The export flow: a scheduled export writes the tables and publishes its row counts."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    ArtifactFilterKey,
)

from flows.export import export
from glossogen.export import ExportRunsRequest, SelectionError
from tests.export.conftest import OLD, A, C, Cohort


async def _row_counts_of(flow_run_id: UUID) -> list[dict]:
    """The ``export-row-counts`` artifact that flow run ``flow_run_id`` published (run ids are
    unix seconds: another export on this server may publish one under the same key)."""
    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["export-row-counts"]),
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            ),
        )
    assert len(found) == 1, found
    data = found[0].data
    return json.loads(data) if isinstance(data, str) else data


NIGHTLY = ["request", "loose"]
"""The nightly deployment's parameters: the request (``prefect.yaml`` now), or ``runs_dir`` and
``out`` loose (a deployment made before the flow took the request)."""


@pytest.mark.parametrize("given", NIGHTLY)
def test_the_nightly_parameters_export_every_run(
    given: str, prefect_api: str, cohort: Cohort, tmp_path: Path
) -> None:
    fields: dict[str, Any] = {"runs_dir": str(cohort.runs_dir), "out": str(tmp_path)}
    asked = {"request": ExportRunsRequest(**fields)} if given == "request" else fields
    state = asyncio.run(export(**asked, return_state=True))
    counts = asyncio.run(state.aresult())
    assert counts == {"run_level": 6, "round_level": 2, "agent_level": 12}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "agent_level.csv",
        "columns.csv",
        "round_level.csv",
        "run_level.csv",
    ]
    assert state.state_details.flow_run_id is not None
    assert asyncio.run(_row_counts_of(state.state_details.flow_run_id)) == [
        {"table": "run_level.csv", "rows": 6},
        {"table": "round_level.csv", "rows": 2},
        {"table": "agent_level.csv", "rows": 12},
    ]


def test_a_selection_frames_and_the_raw_zip(
    prefect_api: str, cohort: Cohort, tmp_path: Path
) -> None:
    counts = asyncio.run(
        export(
            ExportRunsRequest.model_validate(
                {
                    "runs_dir": str(cohort.runs_dir),
                    "out": str(tmp_path),
                    "selection": {"kind": "run_ids", "run_ids": [C, OLD]},
                    "frames": ["message_level"],
                    "raw": True,
                    "repeat_run_columns": False,
                }
            )
        )
    )
    assert counts == {"message_level": 8 + 28}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["message_level.csv", "runs.zip"]
    with (tmp_path / "message_level.csv").open() as f:
        assert {r["run_id"] for r in csv.DictReader(f)} == {C, OLD}


def test_a_missing_run_id_fails_the_flow(prefect_api: str, cohort: Cohort, tmp_path: Path) -> None:
    with pytest.raises(SelectionError, match="run ids that no longer resolve: veyru/7"):
        asyncio.run(
            export(
                ExportRunsRequest.model_validate(
                    {
                        "runs_dir": str(cohort.runs_dir),
                        "out": str(tmp_path / "o"),
                        "selection": {"kind": "run_ids", "run_ids": [A, "veyru/7"]},
                    }
                )
            )
        )
    assert not (tmp_path / "o").exists()


def test_the_request_given_twice_is_refused_in_one_line(
    prefect_api: str, cohort: Cohort, tmp_path: Path
) -> None:
    """``request`` and loose fields at once: which one is meant is not guessed."""
    request = ExportRunsRequest(runs_dir=str(cohort.runs_dir), out=str(tmp_path / "o"))
    line = "export takes request or, as an older deployment passes them, runs_dir and out, "
    with pytest.raises(ValueError, match=f"^{line}not both: got request and out$"):
        asyncio.run(export(request, out=str(tmp_path / "p")))
    assert not (tmp_path / "o").exists() and not (tmp_path / "p").exists()
