"""Every Prefect task is declared under the one task policy (``orchestration.glossogen_task``)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from prefect import Task
from prefect.cache_policies import NONE

import flows
import tasks

ROOT = Path(__file__).resolve().parents[2]


def _tasks_in(package: Any) -> dict[str, Task[Any, Any]]:
    found: dict[str, Task[Any, Any]] = {}
    for module in pkgutil.iter_modules(package.__path__):
        loaded = importlib.import_module(f"{package.__name__}.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, Task) and value.fn.__module__ == loaded.__name__:
                found[value.name] = value
    return found


def test_every_task_lives_in_tasks_and_keeps_no_result_cache_but_the_per_flow_run_two() -> None:
    declared = _tasks_in(tasks)
    assert _tasks_in(flows) == {}
    once = {name for name, t in declared.items() if t.cache_key_fn is not None}
    assert once == {"claim_run_dir", "prepare_derived_run"}
    assert {name for name, t in declared.items() if t.cache_policy is not NONE} == once
    run = SimpleNamespace(task_run=SimpleNamespace(flow_run_id="f1"))
    assert [declared[name].cache_key_fn(run, {}) for name in sorted(once)] == [
        "claim_run_dir-f1",
        "prepare_derived_run-f1",
    ]
    assert all(declared[name].persist_result for name in once)
    assert len(declared) == 26


def test_the_no_cache_policy_is_written_once() -> None:
    sources = [
        p
        for folder in ("glossogen", "flows", "tasks", "orchestration", "scenarios")
        for p in (ROOT / folder).rglob("*.py")
    ]
    places = [
        p.relative_to(ROOT).as_posix() for p in sources if "cache_policy=NONE" in p.read_text()
    ]
    assert places == ["orchestration/__init__.py"]


def test_the_run_and_cohort_flows_store_the_parameters_prefect_would_without_importing_fastapi() -> (
    None
):
    """A run's and a cohort's flow parameters serialise as Prefect's own ``jsonable_encoder``
    gives them, and a ``glossogen run`` start-up never imports FastAPI for it."""
    import subprocess
    import sys

    from prefect import Flow

    from flows.evaluate import evaluate_cohort
    from flows.simulate import simulate
    from glossogen.evaluation import check_request
    from glossogen.export import FilterSelection
    from glossogen.launch import CohortRequest, RunRequest, plan_run

    request = RunRequest(scenario="veyru", model="scripted", provider="scripted",
                         config="knobs_default", overrides=["round_count=2"], runs_dir="runs")  # fmt: skip
    run = {"config": plan_run(request), "runs_dir": "runs", "run_dir": ""}
    cohort = {
        "request": CohortRequest(
            runs_dir="runs",
            selection=FilterSelection(scenario=["veyru"], knob=["n=2.5"]),
            evaluation=check_request(["round_success"]),
        ),
        "max_runs": None,
        "plain": {"kind": "filters", "scenario": ["veyru"], "n": [1, 2.5, None, True]},
        "odd": (1, 2),  # not plain JSON: Prefect's own serialisation (a list)
    }
    for flow, parameters in ((simulate, run), (evaluate_cohort, cohort)):
        ours = flow.serialize_parameters(parameters)
        assert ours == Flow.serialize_parameters(flow, parameters)
        assert list(ours) == list(parameters)
    assert evaluate_cohort.serialize_parameters(cohort)["odd"] == [1, 2]
    probe = (
        "import sys; from flows.simulate import simulate; from glossogen.launch import "
        "RunRequest, plan_run; c = plan_run(RunRequest(scenario='veyru', model='scripted', "
        "provider='scripted', config='knobs_default', runs_dir='r')); "
        "simulate.serialize_parameters({'config': c, 'runs_dir': 'r', 'run_dir': ''}); "
        "print('fastapi' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, check=True)
    assert out.stdout.decode().strip() == "False"
