"""What a third fresh user of the analysis found, each asserted as a user sees it.

The same query through ``glossogen analyze``, REST (``POST .../analysis/query``) and MCP
(``analyze_runs``) gives the same values, notes and one-line refusals.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.mcp.conftest import call, refusal, stdio_session

API = "/api/g/local/runs/analysis"

UNSCORED = (
    "no run of this selection has a report yet: metrics and the round grain's rows come from "
    "scoring them (glossogen evaluate)"
)


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("third-user-runs")))


def copy(cohort: Cohort, to: Path) -> Path:
    """A copy of the cohort's runs (no analysis cache) to change."""
    shutil.copytree(cohort.runs_dir, to, ignore=shutil.ignore_patterns(".glossogen"))
    return to


def unscore(runs: Path, cohort: Cohort, shorts: tuple[str, ...]) -> None:
    """Remove the reports of ``shorts``' runs: played, never evaluated."""
    for short in shorts:
        (runs / cohort.ids[short] / "veyru_report.json").unlink()


def rest(runs: Path, body: dict[str, Any]) -> tuple[int, Any]:
    """POST ``body`` to the query route of a server over ``runs``: status and JSON."""
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    with TestClient(create_app(str(runs))) as client:
        got = client.post(f"{API}/query", json=body)
    return got.status_code, got.json()


def mcp(runs: Path, cwd: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each ``analyze_runs`` call's answer: its result, or its refusal's line ("!" first)."""

    async def flow() -> list[Any]:
        out: list[Any] = []
        async with stdio_session(runs, cwd) as session:
            for kind, arguments in calls:
                if kind == "refused":
                    out.append(await refusal(session, "analyze_runs", **arguments))
                else:
                    out.append(await call(session, "analyze_runs", **arguments))
        return out

    return asyncio.run(flow())


def test_a_selection_without_kind_is_filters_or_run_ids_on_rest_and_mcp(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The schema says ``kind`` defaults to ``filters``: a selection without it is taken as
    filters (``run_ids`` when it gives ``run_ids``), was a refusal naming the missing tag."""
    runs = Path(cohort.runs_dir)
    picked = cohort.ids["r1"]
    by_cli = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--knob",
                          "round_budget_chars=300", "--measure", "task_done")  # fmt: skip
    ids_cli = analyze_json(capsys, "--runs-dir", cohort.runs_dir, "--run-id", picked,
                           "--measure", "task_done")  # fmt: skip
    assert (by_cli["runs"], by_cli["groups"][0]["cells"][0]["value"]) == (2, 1.0)
    assert (ids_cli["run_ids"], ids_cli["groups"][0]["cells"][0]["value"]) == ([picked], 1.0)
    knob = {"knob": ["round_budget_chars=300"]}
    status, got = rest(runs, {"selection": knob, "measures": [{"field": "task_done"}]})
    assert (status, got) == (200, by_cli)
    status, got = rest(runs, {"selection": {"run_ids": [picked]},
                              "measures": [{"field": "task_done"}]})  # fmt: skip
    assert (status, got) == (200, ids_cli)
    status, got = rest(runs, {"selection": {"kind": "all"}, "measures": [{"field": "task_done"}]})
    assert (status, got) == (422, {"detail": {
        "field": "selection", "message": "Input should be an object of kind 'run_ids' or 'filters'"
    }})  # fmt: skip
    answers = mcp(runs, tmp_path, ("answer", {"measures": ["task_done"], "selection": knob}),
                  ("answer", {"measures": ["task_done"], "selection": {"run_ids": [picked]}}))  # fmt: skip
    assert answers == [by_cli, ids_cli]


@pytest.mark.parametrize(
    ("extra", "field", "line"),
    [
        ({"grain": "observation"}, "metric",
         "metric is required at the observation grain (its metric's observations are the rows)"),
        ({"metric": "task_done"}, "metric",
         "metric 'task_done': only the observation grain takes a metric (the grain is run)"),
        ({"by": [""]}, "by", "key ['']: a key is empty"),
        ({"by": ["seed", "seed"]}, "by", "key ['seed', 'seed']: a key is named twice"),
    ],
)  # fmt: skip
def test_a_query_that_does_not_hold_together_is_the_engines_one_line_on_rest_and_mcp(
    cohort: Cohort, tmp_path: Path, extra: dict[str, Any], field: str, line: str
) -> None:
    """Was REST's field-shaped body with pydantic's ``Value error, `` in front (and MCP's
    ``query: ...``): now the route's usual refusal body, the CLI's line without the flag."""
    runs = Path(cohort.runs_dir)
    body = {"measures": [{"field": "task_done"}], **extra}
    assert rest(runs, body) == (422, {"detail": {"field": field, "message": line}})
    assert mcp(runs, tmp_path, ("refused", {"measures": ["task_done"], **extra})) == [line]


def test_the_observation_grain_without_a_metric_is_the_same_line_on_the_cli(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    assert analyze("--runs-dir", cohort.runs_dir, "--grain", "observation", "--measure",
                   "value") == 64  # fmt: skip
    assert capsys.readouterr() == ("", (
        "glossogen: error: --metric is required at the observation grain (its metric's "
        "observations are the rows)\n"
    ))  # fmt: skip


BAD_BYTE = os.fsdecode(b"r\xffn")
"""A command-line value holding a byte that is not UTF-8, as Python reads it (surrogateescape)."""


@pytest.mark.parametrize(
    ("flag", "args"),
    [
        ("--grain", ["--grain", BAD_BYTE, "--measure", "task_done"]),
        ("--sort", ["--sort", BAD_BYTE, "--measure", "task_done"]),
        ("--sort", ["--sort", f"-{BAD_BYTE}", "--measure", "task_done"]),
        ("--metric", ["--grain", "observation", "--metric", BAD_BYTE, "--measure", "value"]),
        ("--chart", ["--chart", BAD_BYTE, "--measure", "task_done"]),
        ("--grain", ["--grain", BAD_BYTE, "--list-fields"]),
    ],
)
def test_a_named_flag_that_is_not_utf8_is_one_line_naming_it(
    cohort: Cohort, capsys: pytest.CaptureFixture[str], flag: str, args: list[str]
) -> None:
    """As the selection flags (and --by, --measure, --filter, --compare) already are."""
    value = args[args.index(flag) + 1]
    assert analyze("--runs-dir", cohort.runs_dir, *args) == 64
    assert capsys.readouterr() == ("", f"glossogen: error: {flag} {value!r}: not UTF-8 text\n")


def test_a_rest_string_escaping_a_lone_surrogate_is_one_line_naming_it(cohort: Cohort) -> None:
    """JSON can escape a lone surrogate (``"\\udcff"``), which is no UTF-8 text: named as the
    CLI names such a byte, in the route's refusal body (was pydantic's "unable to parse raw
    data as a unicode string")."""
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    bodies = [b'{"measures": [{"field": "\\udcff"}]}',
              b'{"measures": [{"field": "task_done"}], "sort": "\\udcff"}',
              b'{"measures": [{"field": "task_done"}], "grain": "\\udcff"}']  # fmt: skip
    with TestClient(create_app(cohort.runs_dir)) as client:
        got = [client.post(f"{API}/query", content=body,
                           headers={"content-type": "application/json"}) for body in bodies]  # fmt: skip
    assert [(g.status_code, g.json()["detail"]) for g in got] == [
        (422, {"field": "measures.0.field", "message": "'\\udcff': not UTF-8 text"}),
        (422, {"field": "sort", "message": "sort '\\udcff': not UTF-8 text"}),
        (422, {"field": "grain", "message": "grain '\\udcff': not UTF-8 text"}),
    ]
