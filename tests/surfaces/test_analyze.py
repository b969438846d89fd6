"""An analysis through the CLI, REST and MCP: one query, the same result; each refusal one line
naming the value the surface's way (``glossogen analyze``, ``POST .../analysis/query``,
``analyze_runs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from glossogen.cli import main
from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import (
    STATUS,
    SURFACES,
    Answer,
    _mcp,
    refused_as,
)

NO_SUCH_MEASURE = (
    "{measure} 'nope': no such field at the run grain of this selection (list the grain's "
    "fields); no run of this selection has a report yet: metrics and the round grain's rows "
    "come from scoring them (glossogen evaluate)"
)
MEASURE = {"cli": "--measure", "rest": "measure", "mcp": "measure"}
"""How each surface names a refused measure: the CLI's flag, the request field."""


def analyze_through(
    surface: str,
    runs_dir: str,
    measure: str,
    capsys: pytest.CaptureFixture[str],
    counts: dict[str, int] | None = None,
) -> tuple[Answer, dict[str, Any] | None]:
    """``glossogen analyze --json``, ``POST .../analysis/query`` or MCP ``analyze_runs`` of
    ``measure`` grouped by ``round_count``: the answer and the result's JSON. ``counts``:
    ``limit`` and ``max_runs`` (``--limit``, ``--max-runs``)."""
    counts = counts or {}
    if surface == "cli":
        flags = [f for k, v in counts.items() for f in (f"--{k.replace('_', '-')}", str(v))]
        with pytest.raises(SystemExit) as exited:
            main(["analyze", "--runs-dir", runs_dir, "--measure", measure, "--by", "round_count",
                  "--json", *flags])  # fmt: skip
        out, err = capsys.readouterr()
        if exited.value.code:
            assert (out, err.count("\n")) == ("", 1), (out, err)
            line = err.removeprefix("glossogen: error: ").rstrip("\n")
            return Answer(True, line, int(exited.value.code)), None
        return Answer(False, "", 0), json.loads(out)
    if surface == "rest":
        field, _, agg = measure.partition(":")
        asked = {"field": field, "agg": agg} if agg else {"field": field}  # as typed
        got = TestClient(create_app(runs_dir)).post(
            "/api/g/local/runs/analysis/query",
            json={"measures": [asked], "by": ["round_count"], **counts},
        )
        if got.status_code != 200:
            detail = got.json()["detail"]
            return Answer(True, f"{detail['field']}: {detail['message']}", got.status_code), None
        return Answer(False, "", 200), got.json()
    return _mcp(runs_dir, "analyze_runs", measures=[measure], by=["round_count"], **counts)


@pytest.mark.parametrize("surface", SURFACES)
def test_an_analysis_answers_and_refuses_the_same_through_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One query, one result (the same JSON each way); one unknown measure, one line naming
    it the surface's way (REST also says the field at fault)."""
    runs = str(tmp_path / "runs")
    first = play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    second = play_run(runs, "veyru", rounds=2, now_unix=1_790_000_100)
    refused, _ = analyze_through(surface, runs, "nope", capsys)
    line = NO_SUCH_MEASURE.format(measure=MEASURE[surface])
    assert refused == refused_as(surface, line, "measures")
    answer, result = analyze_through(surface, runs, "run_id:count", capsys)
    assert (answer.refused, answer.status) == (False, STATUS[surface][0])
    assert result is not None
    assert (result["runs"], result["run_ids"]) == (2, sorted([first.run_id, second.run_id]))
    assert [(g["keys"], [(c["value"], c["n"]) for c in g["cells"]]) for g in result["groups"]] == [
        ({"round_count": "1"}, [(1.0, 1)]),
        ({"round_count": "2"}, [(1.0, 1)]),
    ]


TOO_MANY = (
    "{flag} %d: must be at most 9007199254740991 (2**53 - 1, the largest whole number a "
    "JSON answer holds exactly)"
)
COUNTS = [
    ("limit", 10**29, TOO_MANY % 10**29),
    ("limit", 2**53, TOO_MANY % 2**53),
    ("max_runs", 10**29, TOO_MANY % 10**29),
    ("max_runs", 2**53, TOO_MANY % 2**53),
    ("limit", 0, "{flag} 0: must be at least 1"),
    ("max_runs", -1, "{flag} -1: must be at least 1"),
]
"""A ``limit`` or ``max_runs`` out of its range (issue 33: a 29-digit ``limit`` was taken and
echoed back in the answer), and the line refusing it."""


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize(("field", "value", "line"), COUNTS, ids=[f"{f}={v}" for f, v, _ in COUNTS])
def test_a_limit_or_max_runs_out_of_range_is_refused_alike_through_every_surface(
    surface: str, field: str, value: int, line: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Refused before any run is read (the folder holds none): CLI 64, REST 422 naming the
    field, MCP a tool error, the same words."""
    runs = tmp_path / "runs"
    runs.mkdir()
    refused, _ = analyze_through(surface, str(runs), "run_id:count", capsys, {field: value})
    flag = f"--{field.replace('_', '-')}" if surface == "cli" else field
    assert refused == refused_as(surface, line.format(flag=flag), field)


@pytest.mark.parametrize("surface", SURFACES)
def test_the_largest_limit_and_max_runs_are_taken_and_echoed_exactly(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    most = {"limit": 2**53 - 1, "max_runs": 2**53 - 1}
    answer, result = analyze_through(surface, runs, "run_id:count", capsys, most)
    assert (answer.refused, answer.status) == (False, STATUS[surface][0])
    assert result is not None
    assert (result["query"]["limit"], result["query"]["max_runs"]) == (9007199254740991,) * 2
    assert [(g["keys"], g["cells"][0]["value"]) for g in result["groups"]] == [
        ({"round_count": "1"}, 1.0)
    ]


TEXT_MEASURE = (
    "{measure} 'status': status is text, not a number: count it ('status:count') or group by "
    "it ({by} status)"
)
BY = {"cli": "--by", "rest": "by", "mcp": "by"}


@pytest.mark.parametrize("surface", SURFACES)
def test_a_text_field_measured_is_named_as_typed_alike_through_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``status`` with no aggregate: named as asked (not ``'status:mean'``), with what a text
    field takes, each surface naming ``by`` its way."""
    runs = str(tmp_path / "runs")
    play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
    refused, _ = analyze_through(surface, runs, "status", capsys)
    line = TEXT_MEASURE.format(measure=MEASURE[surface], by=BY[surface])
    assert refused == refused_as(surface, line, "measures")
