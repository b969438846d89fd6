"""The ``evaluate-cohort`` flow takes the one request value, ``CohortRequest``, whole; the loose
parameters a deployment made before it passes are read as that request."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import yaml

from flows.evaluate import cohort_of, evaluate_cohort
from glossogen.evaluation import EvaluationRequest, check_request
from glossogen.export import FilterSelection
from glossogen.launch import CohortRequest, check_cohort, cohort_summary
from tests.fixtures.played_runs import play_run

REPO = Path(__file__).resolve().parents[2]
BOTH = (
    "evaluate-cohort takes request (a CohortRequest) or, as an older deployment passes them, "
    "runs_dir and the rest loose, not both: got request and "
)


def _deployed_parameters() -> dict[str, object]:
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    (found,) = [d for d in spec["deployments"] if d["name"] == "evaluate-cohort"]
    return found["parameters"]


def test_the_deployments_parameters_are_read_by_prefect_as_the_request() -> None:
    """prefect.yaml's ``request`` is validated by Prefect into the ``CohortRequest``; an older
    deployment's loose parameters (``request`` the ``EvaluationRequest``) stay readable."""
    assert _deployed_parameters() == {"request": {"runs_dir": "./runs", "evaluation": {}}}
    shipped = evaluate_cohort.validate_parameters(_deployed_parameters())
    request = CohortRequest(runs_dir="./runs", evaluation=EvaluationRequest())
    assert shipped["request"] == request
    assert cohort_of(**shipped) is shipped["request"]
    older = evaluate_cohort.validate_parameters({
        "runs_dir": "./runs", "request": {"metrics": ["round_success"]},
        "selection": {"kind": "filters", "scenario": ["veyru"]}, "spend_cap_usd": 0.5,
        "max_runs": 7,
    })  # fmt: skip
    assert older["request"] == EvaluationRequest(metrics=["round_success"])
    assert cohort_of(**older) == CohortRequest(
        runs_dir="./runs", selection=FilterSelection(scenario=["veyru"]),
        evaluation=EvaluationRequest(metrics=["round_success"]), spend_cap_usd=0.5, max_runs=7,
    )  # fmt: skip
    assert cohort_of(None, runs_dir="./runs") == CohortRequest(
        runs_dir="./runs", evaluation=EvaluationRequest()
    )


def test_the_request_given_twice_or_not_at_all_is_refused_in_one_line() -> None:
    request = CohortRequest(runs_dir="runs", evaluation=EvaluationRequest())
    with pytest.raises(ValueError, match=f"^{re.escape(BOTH)}runs_dir, spend_cap_usd$"):
        cohort_of(request, runs_dir="other", spend_cap_usd=1.0)
    line = (
        "evaluate-cohort takes request (a CohortRequest: runs_dir, selection, evaluation, "
        "spend_cap_usd, max_runs)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(line)}$"):
        cohort_of(EvaluationRequest())


def test_an_older_deployments_loose_parameters_score_the_cohort_the_request_scores(
    prefect_api: str, tmp_path: Path
) -> None:
    """The loose form scores both runs; the library's request then finds both reports up to
    date (the same cohort, the same evaluation), so it skips them."""
    runs = str(tmp_path / "runs")
    for i in (0, 1):
        play_run(runs, "veyru", rounds=2, now_unix=1_790_000_000 + i)
    loose = asyncio.run(evaluate_cohort(runs_dir=runs, request=check_request(["round_success"])))
    assert cohort_summary(loose, runs) == (
        f"evaluated 2 of 2 runs under {runs}: 2 scored, 0 skipped (report up to date); "
        "0 not evaluated · evaluation cost $0.000000"
    )
    whole = asyncio.run(evaluate_cohort(check_cohort(runs, None, check_request(["round_success"]))))
    assert cohort_summary(whole, None) == (
        "evaluated 2 of 2 runs in the server's runs directory: 0 scored, 2 skipped (report up "
        "to date); 0 not evaluated · evaluation cost $0.000000"
    )
