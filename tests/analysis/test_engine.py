"""The analysis engine against figures worked out by hand on the cohort of ``cohort.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from pydantic import ValidationError

from glossogen.analysis import (
    Compare,
    Measure,
    Query,
    QueryError,
    Result,
    RowFilter,
    answer,
    fields,
)
from glossogen.analysis._stats import wilson
from glossogen.eventlog import LlmResponseReceived, RunView
from glossogen.export import FilterSelection, build_frames, select_runs, selection_of, write_tables
from tests.analysis.cohort import Cohort, build
from tests.fixtures.played_runs import play_run

SEED7_PICKS = [[1, 1], [1, 1], [1, 1], [1, 0], [0, 0], [0, 1], [1, 0], [0, 1], [0, 1], [0, 0]]
"""``default_rng(7).integers(0, 2, size=(10, 2))``: the first ten draws of two runs."""
SEED7_SECOND = [[1, 0], [0, 0], [1, 0], [1, 0], [0, 1], [1, 1], [1, 1], [1, 1], [1, 1], [0, 1]]
"""The same generator's next ten (the second arm of an unpaired comparison)."""


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("analysis-runs")))


def ask(cohort: Cohort, **fields_: object) -> Result:
    return answer(cohort.runs_dir, Query.model_validate(fields_))


def cells(result: Result) -> list[tuple[dict[str, str], str, float | None, int, int]]:
    return [(g.keys, c.measure, c.value, c.n, c.missing) for g in result.groups for c in g.cells]


def percentiles(estimates: list[float]) -> tuple[float, float]:
    """numpy's linear 2.5th and 97.5th percentiles, by hand: position p * (k - 1)."""
    ordered = sorted(estimates)
    out = []
    for p in (0.025, 0.975):
        at = p * (len(ordered) - 1)
        lo = math.floor(at)
        out.append(ordered[lo] + (at - lo) * (ordered[min(lo + 1, len(ordered) - 1)] - ordered[lo]))
    return out[0], out[1]


def test_each_aggregate_with_n_and_missing(cohort: Cohort) -> None:
    aggs = ["mean", "median", "sum", "count", "min", "max", "stddev", "sem"]
    result = ask(cohort, measures=[{"field": "mean_chars_per_round", "agg": a} for a in aggs])
    (group,) = result.groups
    got = {c.measure.split(":")[1]: c.value for c in group.cells}
    stddev = math.sqrt(((10 - 27.5) ** 2 + 7.5**2 + 2.5**2 + 22.5**2) / 3)  # 875 / 3
    assert got == {
        "mean": 27.5, "median": 25.0, "sum": 110.0, "count": 4.0, "min": 10.0, "max": 50.0,
        "stddev": pytest.approx(stddev, rel=1e-12), "sem": pytest.approx(stddev / 2, rel=1e-12),
    }  # fmt: skip
    assert {(c.n, c.missing, c.runs) for c in group.cells} == {(4, 1, 4)}
    assert result.runs == 5 and result.rows == 5


def test_a_group_with_no_value_is_blank_and_a_blank_key_is_labelled(cohort: Cohort) -> None:
    result = ask(
        cohort, by=["knob.channel_noise_level"], measures=[{"field": "mean_chars_per_round"}]
    )
    assert cells(result) == [
        ({"knob.channel_noise_level": "0.0"}, "mean_chars_per_round:mean", 20.0, 2, 0),
        ({"knob.channel_noise_level": "0.1"}, "mean_chars_per_round:mean", 35.0, 2, 0),
        ({"knob.channel_noise_level": "0.2"}, "mean_chars_per_round:mean", None, 0, 1),
    ]
    empty = result.groups[2].cells[0]
    assert empty.interval is not None and empty.interval.method == "none"
    by_budget = ask(
        cohort, by=["round_budget_chars"], measures=[{"field": "task_done", "agg": "sum"}]
    )
    assert cells(by_budget) == [
        ({"round_budget_chars": "300"}, "task_done:sum", 2.0, 2, 0),
        ({"round_budget_chars": "600"}, "task_done:sum", 1.0, 2, 0),
        ({"round_budget_chars": None}, "task_done:sum", 0.0, 1, 0),
    ]


def test_wilson_for_a_rate_of_runs(cohort: Cohort) -> None:
    (group,) = ask(cohort, measures=[{"field": "task_done", "agg": "rate"}]).groups
    (cell,) = group.cells
    assert (cell.value, cell.n, cell.missing) == (0.6, 5, 0)
    assert cell.interval is not None and cell.interval.method == "wilson"
    # 3 of 5: centre (0.6 + z²/10) / (1 + z²/5), half z·sqrt(0.048 + z²/100) / (1 + z²/5)
    assert (round(cell.interval.low, 4), round(cell.interval.high, 4)) == (0.2307, 0.8824)
    assert wilson(0, 0) is None


@pytest.mark.parametrize(
    ("n", "other_bound"),
    [(1, 0.7934506856), (2, 0.6576197725), (3, 0.5614970318), (5, 0.4344824648),
     (7, 0.3543304351), (24, 0.1379762047), (100, 0.0369934982)],
)  # fmt: skip
def test_wilson_bounds_of_no_success_and_of_all_successes_are_exactly_0_and_1(
    n: int, other_bound: float
) -> None:
    """A zero rate's lower bound prints 0, not 2.776e-17; a full rate's upper bound is 1.

    The other bound, by hand: with no success the upper bound is z²/(n + z²); with all
    successes the lower bound is n/(n + z²), its mirror (z = 1.959963984540054).
    """
    low, high = wilson(0, n) or (None, None)
    assert low == 0.0 and str(low) == "0.0"
    assert high is not None and round(high, 10) == other_bound
    low, high = wilson(n, n) or (None, None)
    assert high == 1.0 and str(high) == "1.0"
    assert low is not None and round(low, 10) == round(1 - other_bound, 10)
    assert wilson(0, 3) == (0.0, 0.5614970317550454)
    assert wilson(3, 3) == (0.4385029682449546, 1.0)


def test_round_grain_interval_resamples_whole_runs(cohort: Cohort) -> None:
    result = ask(
        cohort, grain="round", by=["knob.round_budget_chars"], seed=7, resamples=10,
        measures=[{"field": "round_success", "agg": "rate"}],
    )  # fmt: skip
    first = result.groups[0]
    assert first.keys == {"knob.round_budget_chars": "300"}
    (cell,) = first.cells
    assert (cell.value, cell.n, cell.missing, cell.runs) == (0.75, 4, 0, 2)
    # r1 won 1 of its 2 rounds, r2 2 of 2; a draw of runs (i, j) estimates (s_i+s_j)/(c_i+c_j).
    assert np.random.default_rng(7).integers(0, 2, size=(10, 2)).tolist() == SEED7_PICKS
    sums, counts = [1, 2], [2, 2]
    estimates = [(sums[i] + sums[j]) / (counts[i] + counts[j]) for i, j in SEED7_PICKS]
    assert sorted(estimates) == [0.5, 0.5, 0.75, 0.75, 0.75, 0.75, 0.75, 1.0, 1.0, 1.0]
    assert percentiles(estimates) == (0.5, 1.0)
    assert cell.interval is not None
    assert (cell.interval.low, cell.interval.high, cell.interval.method) == (0.5, 1.0, "bootstrap")


def test_paired_comparison_pairs_runs_by_seed(cohort: Cohort) -> None:
    result = ask(
        cohort, measures=[{"field": "task_done"}], seed=7, resamples=10,
        compare={"key": "round_budget_chars", "a": "300", "b": "600"},
    )  # fmt: skip
    (comparison,) = result.comparisons
    assert (comparison.paired, comparison.pairing, comparison.pairs) == (True, "seed", 2)
    assert (comparison.a_value, comparison.b_value, comparison.difference) == (1.0, 0.5, -0.5)
    # Pairs (r1, r3) and (r2, r4) by seed 1 and 2: differences -1 and 0, drawn together.
    differences = [-1.0, 0.0]
    estimates = [(differences[i] + differences[j]) / 2 for i, j in SEED7_PICKS]
    assert percentiles(estimates) == (-1.0, 0.0)
    interval = comparison.interval
    assert (interval.low, interval.high, interval.method) == (-1.0, 0.0, "paired bootstrap")


def test_unpaired_comparison_when_an_arm_repeats_a_seed(cohort: Cohort) -> None:
    result = ask(
        cohort, measures=[{"field": "mean_chars_per_round"}], seed=7, resamples=10,
        compare={"key": "channel_noise_level", "a": "0.0", "b": "0.1"},
    )  # fmt: skip
    (comparison,) = result.comparisons
    assert (comparison.paired, comparison.pairing) == (False, "unpaired: an arm repeats a seed")
    assert (comparison.a_value, comparison.b_value, comparison.difference) == (20.0, 35.0, 15.0)
    # A = (r1 10, r3 30) drawn by the generator's first ten pairs, B = (r2 20, r5 50) by the next.
    a, b = [10.0, 30.0], [20.0, 50.0]
    diffs = [
        (b[k] + b[m]) / 2 - (a[i] + a[j]) / 2
        for (i, j), (k, m) in zip(SEED7_PICKS, SEED7_SECOND, strict=True)
    ]
    assert sorted(diffs) == [-10.0, 5.0, 5.0, 15.0, 25.0, 25.0, 30.0, 30.0, 30.0, 30.0]
    assert percentiles(diffs) == (-6.625, 30.0)
    interval = comparison.interval
    assert (interval.low, interval.high, interval.method) == (-6.625, 30.0, "bootstrap")


EXPECTED = {
    "=300": {"r1", "r2"},
    "!=300": {"r3", "r4"},
    ">300": {"r3", "r4"},
    ">=300": {"r1", "r2", "r3", "r4"},
    "<600": {"r1", "r2"},
    "<=600": {"r1", "r2", "r3", "r4"},
}
"""r5 never recorded ``round_budget_chars``: no operator selects it, ``!=`` included."""


@pytest.mark.parametrize("condition", list(EXPECTED))
def test_every_operator_on_a_knob_never_recorded(cohort: Cohort, condition: str) -> None:
    names = {v: k for k, v in cohort.ids.items()}
    selection = selection_of(knob=[f"round_budget_chars{condition}"])
    selected = select_runs(cohort.runs_dir, selection).records
    assert {names[r.run_id] for r in selected} == EXPECTED[condition]
    result = ask(
        cohort, by=["run_id"], measures=[{"field": "task_done", "agg": "count"}],
        filters=[RowFilter.parse(f"knob.round_budget_chars{condition}")],
    )  # fmt: skip
    assert {names[g.keys["run_id"]] for g in result.groups} == EXPECTED[condition]


def test_observation_grain_keeps_each_team(cohort: Cohort) -> None:
    result = ask(
        cohort, grain="observation", metric="team_split", by=["round_number", "team_id"],
        measures=[{"field": "value", "agg": "sum"}],
    )  # fmt: skip
    assert cells(result) == [
        ({"round_number": "1", "team_id": "a"}, "value:sum", 1.0, 1, 0),
        ({"round_number": "1", "team_id": "b"}, "value:sum", 0.0, 1, 0),
        ({"round_number": "2", "team_id": "a"}, "value:sum", 1.0, 1, 0),
    ]
    rounds = ask(cohort, grain="round", filters=[{"field": "run_id", "op": "=",
                 "value": cohort.ids["r1"]}], by=["round_number"],
                 measures=[{"field": "team_split"}])  # fmt: skip
    assert [g.cells[0].value for g in rounds.groups] == [0.5, 1.0]


def test_call_grain_has_one_row_per_model_response(cohort: Cohort, tmp_path: Path) -> None:
    records = select_runs(cohort.runs_dir, FilterSelection()).records
    responses = {
        r.run_id: sum(isinstance(e, LlmResponseReceived) for e in RunView.load(r.log_url).counted)
        for r in records
    }
    result = ask(
        cohort, grain="call", by=["run_id"], measures=[{"field": "output_tokens", "agg": "count"}]
    )
    assert {g.keys["run_id"]: g.cells[0].n for g in result.groups} == responses
    assert write_tables(records, ["call_level"], str(tmp_path)) == {
        "call_level": sum(responses.values())
    }
    written = pl.read_csv(tmp_path / "call_level.csv")
    assert written.columns[:18] == [
        "run_id", "scenario_name", "round_number", "phase", "agent_id", "role", "model",
        "provider", "cycle", "input_tokens", "cache_read_tokens", "cache_write_tokens",
        "output_tokens", "cost_usd", "latency_seconds", "retries", "finish_reason",
        "failure_kind",
    ]  # fmt: skip
    assert written.equals(build_frames(records, ["call_level"])["call_level"], null_equal=True)
    assert set(written["provider"]) == {"scripted"}


def test_list_fields_gives_coverage_and_values(cohort: Cohort) -> None:
    found = fields(cohort.runs_dir, FilterSelection(), "run")
    by_name = {f.name: f for f in found.fields}
    budget = by_name["knob.round_budget_chars"]
    assert (budget.family, budget.rows, budget.runs, budget.distinct, budget.values) == (
        "knob",
        4,
        4,
        2,
        ["300", "600"],
    )
    noise = by_name["knob.channel_noise_level"]
    assert (noise.rows, noise.values) == (5, ["0.0", "0.1", "0.2"])
    assert by_name["metric.mean_chars_per_round"].rows == 4


def test_a_metric_asked_of_runs_never_scored_says_to_score_them(tmp_path: Path) -> None:
    """A sweep's runs have no report until ``glossogen evaluate``: the refusal says so."""
    play_run(str(tmp_path), rounds=2, now_unix=1_790_000_100)
    query = Query(grain="round", measures=[Measure(field="round_success", agg="rate")])
    with pytest.raises(QueryError) as unscored:
        answer(str(tmp_path), query)
    assert unscored.value.message == (
        "measure 'round_success': no such field at the round grain of this selection "
        "(list the grain's fields); no run of this selection has a report yet: metrics and "
        "the round grain's rows come from scoring them (glossogen evaluate)"
    )
    assert fields(str(tmp_path), FilterSelection(), "round").rows == 0


def test_a_bad_query_is_refused_before_any_run_is_read(tmp_path: Path) -> None:
    with pytest.raises(QueryError) as bad_agg:
        Measure.parse("mean_chars_per_round:avg")
    assert bad_agg.value.message == (
        "measure 'mean_chars_per_round:avg': unknown aggregate 'avg' "
        "(one of mean, median, sum, count, min, max, stddev, sem, rate)"
    )
    with pytest.raises(QueryError, match=r"^filter 'noise' has no operator"):
        RowFilter.parse("noise")
    with pytest.raises(QueryError, match=r"^compare 'budget=300' is not KEY=A,B$"):
        Compare.parse("budget=300")
    with pytest.raises(ValidationError, match=r"key 'a,b,c': at most two keys"):
        Query(by=["a", "b", "c"], measures=[Measure(field="x")])
    with pytest.raises(ValidationError, match="at least 1 item"):
        Query(measures=[])


def test_a_name_the_rows_do_not_hold_is_named(cohort: Cohort) -> None:
    with pytest.raises(QueryError) as unknown:
        ask(cohort, measures=[{"field": "nosuch"}])
    assert unknown.value.message == (
        "measure 'nosuch': no such field at the run grain of this selection "
        "(list the grain's fields)"
    )
    with pytest.raises(QueryError) as rate:
        ask(cohort, measures=[{"field": "round_success", "agg": "rate"}])
    assert rate.value.message == (
        "measure 'round_success:rate': a rate needs 0/1 values; metric.round_success holds 0.5"
    )
    with pytest.raises(QueryError) as arm:
        ask(cohort, measures=[{"field": "task_done"}],
            compare={"key": "round_budget_chars", "a": "300", "b": "900"})  # fmt: skip
    assert arm.value.message == (
        "compare 'round_budget_chars=300,900': no row has knob.round_budget_chars '900' "
        "(it holds 300, 600; an empty arm names the rows without it)"
    )


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two runs (both seed 1) and a fork of each after round 1, with task_done 0, 0, 1, 0."""
    from tests.export.conftest import fork
    from tests.fixtures.played_runs import play_run

    root = Path(tmp_path_factory.mktemp("analysis-forks"))
    ids = {}
    for i, short in enumerate(("s1", "s2")):
        folder = play_run(str(root), rounds=2, overrides=("seed=1",), now_unix=1_791_000_000 + i)
        ids[short] = folder.run_id
    for i, short in enumerate(("s1", "s2")):
        url = fork(root, str(root / ids[short]), 1, 1_791_000_010 + i)
        ids[f"f{i + 1}"] = f"veyru/{Path(url).name}"
    for short, done in {"s1": 0, "s2": 0, "f1": 1, "f2": 0}.items():
        report = {"report_version": 1, "metrics": {"task_done": {
            "name": "task_done", "kind": "deterministic", "version": 1, "unit": "u",
            "status": "ok", "score": done, "summary": "", "rounds": 2}}}  # fmt: skip
        (root / ids[short] / "veyru_report.json").write_text(json.dumps(report))
    ids["runs_dir"] = str(root)
    return ids


def test_a_fork_pairs_with_its_source(forked: dict[str, str]) -> None:
    kinds = fields(forked["runs_dir"], FilterSelection(), "run")
    (derivation,) = [f for f in kinds.fields if f.name == "lineage.derivation_type"]
    (kind,) = derivation.values
    result = answer(forked["runs_dir"], Query(
        measures=[Measure(field="task_done")], seed=7, resamples=10,
        compare=Compare(key="lineage.derivation_type", a=None, b=kind),
    ))  # fmt: skip
    (comparison,) = result.comparisons
    assert (comparison.paired, comparison.pairing, comparison.pairs) == (
        True, "fork of its source", 2
    )  # fmt: skip
    assert (comparison.a_value, comparison.b_value, comparison.difference) == (0.0, 0.5, 0.5)
    # Pairs (s1, f1) and (s2, f2): differences 1 and 0, drawn together by SEED7_PICKS.
    differences = [1.0, 0.0]
    estimates = [(differences[i] + differences[j]) / 2 for i, j in SEED7_PICKS]
    assert percentiles(estimates) == (0.0, 1.0)
    interval = comparison.interval
    assert (interval.low, interval.high, interval.method) == (0.0, 1.0, "paired bootstrap")


def test_a_query_round_trips_as_json() -> None:
    query = Query(
        selection=selection_of(knob=["round_budget_chars>=300"]), grain="round",
        by=["round_budget_chars"], filters=[RowFilter.parse("round_number<=2")],
        measures=[Measure.parse("round_success:rate"), Measure.parse("mean_chars_per_round")],
        compare=Compare.parse("round_budget_chars=300,600"), sort="-round_success:rate",
        limit=5, seed=3,
    )  # fmt: skip
    assert Query.model_validate_json(query.model_dump_json()) == query


def test_null_conditions_never_select_a_knob_never_recorded(cohort: Cohort) -> None:
    names = {v: k for k, v in cohort.ids.items()}
    for condition, expected in (("=null", set()), ("!=null", {"r1", "r2", "r3", "r4"})):
        selection = selection_of(knob=[f"round_budget_chars{condition}"])
        selected = select_runs(cohort.runs_dir, selection).records
        assert {names[r.run_id] for r in selected} == expected


def test_count_of_a_group_with_no_value_is_blank(cohort: Cohort) -> None:
    result = ask(cohort, by=["channel_noise_level"],
                 measures=[{"field": "mean_chars_per_round", "agg": "count"}])  # fmt: skip
    assert cells(result)[2] == (
        {"channel_noise_level": "0.2"},
        "mean_chars_per_round:count",
        None,
        0,
        1,
    )


def _refuse(messages: object, info: object) -> object:
    from pydantic_ai.exceptions import ModelHTTPError

    raise ModelHTTPError(status_code=400, model_name="scripted", body={"error": "bad request"})


def test_a_failed_request_is_a_call_row_with_its_failure_kind(tmp_path: Path) -> None:
    from pydantic_ai.models.function import FunctionModel

    from glossogen.eventlog import AgentRunCycleFailed
    from glossogen.testing import play

    view = play("veyru", tmp_path, rounds=1, agents={"field_observer": FunctionModel(_refuse)})
    failed = [e for e in view.counted if isinstance(e, AgentRunCycleFailed)]
    assert [(e.error_kind, e.attempts) for e in failed] == [
        ("api_error", 1), ("api_error", 2), ("api_error", 3)
    ]  # fmt: skip
    calls = build_frames(select_runs(str(tmp_path), FilterSelection()).records, ["call_level"])
    rows = calls["call_level"].filter(pl.col("failure_kind").is_not_null())
    assert rows.select(
        "round_number", "agent_id", "model", "provider", "retries", "failure_kind", "cost_usd"
    ).rows() == [
        (1, "field_observer", "scripted", "scripted", 0, "api_error", 0.0),
        (1, "field_observer", "scripted", "scripted", 1, "api_error", 0.0),
        (1, "field_observer", "scripted", "scripted", 2, "api_error", 0.0),
    ]
    result = answer(str(tmp_path), Query(
        grain="call", by=["failure_kind"], measures=[Measure(field="retries", agg="max")]
    ))  # fmt: skip
    assert cells(result)[0] == ({"failure_kind": "api_error"}, "retries:max", 2.0, 3, 0)
