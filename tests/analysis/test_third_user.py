"""What a third fresh user of the analysis found, each asserted as a user sees it.

The same query through ``glossogen analyze``, REST (``POST .../analysis/query``) and MCP
(``analyze_runs``) gives the same values, notes and one-line refusals.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.cohort import Cohort, analyze, analyze_json, build
from tests.mcp.conftest import call, in_process_session, refusal

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
        async with in_process_session(runs, cwd) as session:
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


def test_an_unknown_field_at_the_message_and_call_grains_says_nothing_of_reports(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their rows come from the log alone: an unknown name over unscored runs is the line of
    every other selection, without the hint about reports (which the run grain keeps)."""
    runs = copy(cohort, tmp_path / "runs")
    unscore(runs, cohort, tuple(cohort.ids))
    lines = {}
    for grain in ("message", "call", "run"):
        assert analyze("--runs-dir", str(runs), "--grain", grain, "--measure", "nope") == 64
        lines[grain] = capsys.readouterr()
    plain = "'nope': no such field at the {} grain of this selection (list the grain's fields)"
    assert lines == {
        "message": ("", f"glossogen: error: --measure {plain.format('message')}\n"),
        "call": ("", f"glossogen: error: --measure {plain.format('call')}\n"),
        "run": ("", f"glossogen: error: --measure {plain.format('run')}; {UNSCORED}\n"),
    }
    status, got = rest(runs, {"grain": "message", "measures": [{"field": "nope"}]})
    assert (status, got) == (422, {"detail": {
        "field": "measures", "message": f"measure {plain.format('message')}"
    }})  # fmt: skip
    refused = mcp(runs, tmp_path, ("refused", {"grain": "message", "measures": ["nope"]}))
    assert refused == [f"measure {plain.format('message')}"]


def test_the_round_grain_over_unscored_runs_says_why_on_every_surface(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its rows come from reports: an answer over runs without one says so (was an empty
    table with no note), as ``--list-fields`` does; a metric at the run grain too."""
    runs = copy(cohort, tmp_path / "runs")
    unscore(runs, cohort, tuple(cohort.ids))
    args = ["--runs-dir", str(runs), "--grain", "round", "--by", "round_number", "--measure",
            "run_id:count"]  # fmt: skip
    assert analyze(*args) == 0
    assert capsys.readouterr() == (
        "round grain: 0 rows of 0 runs (5 selected)\n"
        "round_number  measure  value  n  missing  runs  low  high  interval\n",
        f"glossogen: note: {UNSCORED}\n",
    )
    cli = analyze_json(capsys, *args)
    assert (cli["groups"], cli["notes"]) == ([], [UNSCORED])
    body = {"grain": "round", "by": ["round_number"],
            "measures": [{"field": "run_id", "agg": "count"}]}  # fmt: skip
    assert rest(runs, body) == (200, cli)
    arguments = {"grain": "round", "by": ["round_number"], "measures": ["run_id:count"]}
    assert mcp(runs, tmp_path, ("answer", arguments)) == [cli]
    # Two of five unscored: the round rows are the other three's, and the note counts them.
    partly = copy(cohort, tmp_path / "partly")
    unscore(partly, cohort, ("r1", "r2"))
    some = ("2 of 5 runs of this selection have no report yet: their metrics and round rows "
            "come from scoring them (glossogen evaluate)")  # fmt: skip
    got = analyze_json(capsys, "--runs-dir", str(partly), "--grain", "round", "--measure",
                       "round_success:rate")  # fmt: skip
    assert (got["rows"], got["runs_after_filters"], got["notes"]) == (6, 3, [some])
    assert got["groups"][0]["cells"][0]["value"] == 0.5  # r3 0, 0; r4 1, 0; r5 1, 1: 3 of 6
    metric = analyze_json(capsys, "--runs-dir", str(partly), "--measure", "task_done")
    assert (metric["groups"][0]["cells"][0]["missing"], metric["notes"]) == (2, [some])
    own = analyze_json(capsys, "--runs-dir", str(partly), "--measure", "total_chars")
    assert own["notes"] == []  # a field of the log: the reports do not matter


def write_chars(runs: Path, cohort: Cohort, scores: dict[str, str]) -> None:
    """Set ``mean_chars_per_round``'s score of each run to the JSON number given."""
    for short, score in scores.items():
        report = runs / cohort.ids[short] / "veyru_report.json"
        data = json.loads(report.read_text())
        data["metrics"].setdefault("mean_chars_per_round", {**data["metrics"]["task_done"]})
        data["metrics"]["mean_chars_per_round"]["score"] = "@score@"
        report.write_text(json.dumps(data).replace('"@score@"', score))


def test_a_mean_whose_sum_overflows_is_the_float_it_is_with_its_interval(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mean of 1e308, 1e308, 40, 40 is 5e307 + 20 (was blank: the sum overflowed), and its
    interval is found (was ``none`` without a note): a draw of the two 40s alone (1 in 16)
    is its low end, 40, of the two 1e308 alone its high end, 1e308. Same on every surface."""
    runs = copy(cohort, tmp_path / "runs")
    write_chars(runs, cohort, {"r1": "1e308", "r2": "1e308", "r3": "40", "r5": "40"})
    args = ["--runs-dir", str(runs), "--measure", "mean_chars_per_round"]
    assert analyze(*args, "--csv") == 0
    assert capsys.readouterr() == (
        "measure,value,n,missing,runs,low,high,interval\n"
        "mean_chars_per_round:mean,5e+307,4,1,4,40.0,1e+308,bootstrap\n",
        "",
    )
    cli = analyze_json(capsys, *args)
    assert cli["groups"][0]["cells"][0] == {
        "measure": "mean_chars_per_round:mean", "value": 5e307 + 20, "n": 4, "missing": 1,
        "runs": 4, "interval": {"low": 40.0, "high": 1e308, "method": "bootstrap"},
    }  # fmt: skip
    assert cli["notes"] == []
    assert rest(runs, {"measures": [{"field": "mean_chars_per_round"}]}) == (200, cli)
    assert mcp(runs, tmp_path, ("answer", {"measures": ["mean_chars_per_round"]})) == [cli]


def test_a_difference_past_the_float_is_blank_with_a_note_and_so_is_its_interval(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Noise 0 (r1, r3) holds -1e308, noise 0.1 (r2, r5) 1e308: B - A is 2e308, past the
    float; it and its interval are blank, and a note says why (never a bare ``none``)."""
    runs = copy(cohort, tmp_path / "runs")
    write_chars(runs, cohort, {"r1": "-1e308", "r3": "-1e308", "r2": "1e308", "r5": "1e308"})
    args = ["--runs-dir", str(runs), "--measure", "mean_chars_per_round", "--compare",
            "channel_noise_level=0,0.1"]  # fmt: skip
    what = "mean_chars_per_round:mean: the difference channel_noise_level 0.1 - 0.0"
    notes = [f"{what} overflows a float (beyond 1.8e308): left blank",
             f"{what}: its interval overflows a float (beyond 1.8e308): left blank"]  # fmt: skip
    cli = analyze_json(capsys, *args)
    (compared,) = cli["comparisons"]
    assert (compared["a_value"], compared["b_value"], compared["difference"]) == (
        -1e308, 1e308, None
    )  # fmt: skip
    assert compared["interval"] == {"low": None, "high": None, "method": "none"}
    assert compared["pairing"] == "unpaired: an arm repeats a seed"
    assert cli["notes"] == notes
    # The one group's mean is 0, its interval from -1e308 (A's runs alone) to 1e308.
    assert cli["groups"][0]["cells"][0]["value"] == 0.0
    assert cli["groups"][0]["cells"][0]["interval"] == {
        "low": -1e308, "high": 1e308, "method": "bootstrap"
    }  # fmt: skip
    assert analyze(*args) == 0
    assert capsys.readouterr().err == "".join(f"glossogen: note: {n}\n" for n in notes)
    body = {"measures": [{"field": "mean_chars_per_round"}],
            "compare": {"key": "channel_noise_level", "a": "0", "b": "0.1"}}  # fmt: skip
    assert rest(runs, body) == (200, cli)


@pytest.mark.parametrize(
    ("extra", "field", "line"),
    [
        ({"grain": "observation"}, "metric",
         "metric is required at the observation grain (its metric's observations are the rows)"),
        ({"metric": "task_done"}, "metric",
         "metric 'task_done': only the observation grain takes a metric (the grain is run)"),
        ({"by": [""]}, "by", "key '': a key is empty"),
        ({"by": ["seed", "seed"]}, "by", "key 'seed,seed': the key 'seed' is named twice"),
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
    typed = repr(args[args.index(flag) + 1]).replace("\\udcff", "\\xff")  # the byte typed
    assert analyze("--runs-dir", cohort.runs_dir, *args) == 64
    assert capsys.readouterr() == ("", f"glossogen: error: {flag} {typed}: not UTF-8 text\n")


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


def test_a_spread_of_one_value_is_blank_with_a_note(
    cohort: Cohort, capsys: pytest.CaptureFixture[str]
) -> None:
    """Budget 600 holds one chars score (r3's 30; r4 has none), the blank budget one (r5's
    50): their stddev is blank, and a note says why rather than a bare blank beside n 1."""
    assert analyze("--runs-dir", cohort.runs_dir, "--by", "round_budget_chars", "--measure",
                   "mean_chars_per_round:stddev", "--csv") == 0  # fmt: skip
    assert capsys.readouterr() == (
        "round_budget_chars,measure,value,n,missing,runs,low,high,interval\n"
        f"300,mean_chars_per_round:stddev,{50**0.5!r},2,0,2,,,\n"
        "600,mean_chars_per_round:stddev,,1,1,1,,,\n"
        "(blank),mean_chars_per_round:stddev,,1,0,1,,,\n",
        "glossogen: note: mean_chars_per_round:stddev: blank where a group has a single value "
        "(a spread needs two)\n",
    )
