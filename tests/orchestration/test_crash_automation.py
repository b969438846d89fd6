"""The crash automation of prefect.yaml, end to end: a SIGKILLed simulate run is resumed in
place by a reconcile flow run that the server's automation started, with nobody calling it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.events import Event, EventTrigger
from prefect.events.actions import RunDeployment
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
from prefect.events.schemas.automations import Automation, AutomationCore

from deployments.local_server import ProcessWorker
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.prefect_server import StartWorker
from tests.orchestration.flow_runs import (
    TERMINAL,
    api,
    assert_nothing_lost,
    flow_run_logs,
    flow_run_story,
    log_lines,
    read_flow_run,
    wait_for_state,
    wait_until,
)
from tests.orchestration.test_recovery import ROUNDS, _worker_done_with, kill_a_run_mid_round

AUTOMATION = "reconcile__automation_1"
"""Prefect names a deployment's triggers ``<deployment>__automation_<n>`` (from 1)."""
CRASHED = "prefect.flow-run.Crashed"
EXECUTED = "prefect.automation.action.executed"


async def _registered_automation() -> Automation:
    async with get_client() as client:
        (found,) = await client.read_automations_by_name(AUTOMATION)
    return found


async def _put_automation(automation: Automation) -> None:
    # The server's update refuses `owner_resource` (set once, at creation) and the id.
    core = AutomationCore.model_validate(automation.model_dump(exclude={"id", "owner_resource"}))
    async with get_client() as client:
        await client.update_automation(automation.id, core)


@pytest.fixture
def reconcile_automation(deployed: str, tmp_path: Path) -> Iterator[Automation]:
    """The automation ``glossogen deploy`` registered, its action's ``runs_dir`` set to this
    test's runs folder (as a user edits it in prefect.yaml); put back as registered after."""
    registered = asyncio.run(_registered_automation())
    edited = registered.model_copy(deep=True)
    (action,) = edited.actions
    assert isinstance(action, RunDeployment) and action.parameters is not None
    action.parameters["runs_dir"] = str(tmp_path / "runs")
    asyncio.run(_put_automation(edited))
    try:
        yield asyncio.run(_registered_automation())
    finally:
        asyncio.run(_put_automation(registered))


@pytest.fixture
def reconcile_worker(
    deployed: str, process_workers: StartWorker, self_hosted_env: dict[str, str]
) -> Iterator[ProcessWorker]:
    """A process worker on the shared pool ``glossogen`` (where reconcile runs), stopped when
    the test ends: a later test starts its own there, with its own environment."""
    worker = process_workers("glossogen", env=self_hosted_env)
    yield worker
    worker.stop()


def _flow_runs_of(deployment_name: str) -> list[FlowRun]:
    deployment = api().read_deployment_by_name(deployment_name)
    return api().read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
    )


def _events(name: str, resource_id: str) -> list[Event]:
    """The server's events called ``name`` about ``resource_id`` (as persisted so far)."""
    query = EventFilter(
        event=EventNameFilter(name=[name]), resource=EventResourceFilter(id=[resource_id])
    )
    return list(api().read_events(query, limit=50).events)


def _related(event: Event, role: str) -> str:
    (resource_id,) = [r.id for r in event.related if r.role == role]
    return resource_id


def test_a_crashed_simulate_run_is_resumed_by_the_automation(
    reconcile_automation: Automation,
    reconcile_worker: ProcessWorker,
    self_hosted_worker: ProcessWorker,
    model_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    automation = reconcile_automation
    assert automation.enabled
    assert isinstance(automation.trigger, EventTrigger)
    assert automation.trigger.expect == {CRASHED}
    (action,) = automation.actions
    assert isinstance(action, RunDeployment)
    assert action.parameters == {"runs_dir": str(tmp_path / "runs"), "silent_seconds": 600}
    runs = tmp_path / "runs"
    flow_run, run_dir = kill_a_run_mid_round(model_stub, runs)
    run_id = f"prisoners_dilemma/{run_dir.name}"
    simulate_run = f"prefect.flow-run.{flow_run.id}"

    def fired() -> tuple[list[Event], list[Event]]:
        """This flow run's Crashed events, and the automation's actions that they triggered
        (other tests' crashes fire it too)."""
        crashes = _events(CRASHED, simulate_run)
        ids = {f"prefect.event.{c.id}" for c in crashes}
        actions = _events(EXECUTED, f"prefect.automation.{automation.id}")
        return crashes, [a for a in actions if _related(a, "triggering-event") in ids]

    # Nobody calls reconcile: the Crashed event reaches the automation, which runs it.
    wait_until(lambda: fired()[1], "the automation to start a reconcile flow run")

    def ended() -> bool:
        lines = log_lines(run_dir)
        return bool(lines) and lines[-1]["event_type"] == "simulation_ended"

    wait_until(ended, "the run to be resumed and to end")
    assert read_flow_run(flow_run.id).state_type is StateType.CRASHED
    # Prefect may report the kill twice (runner, then worker): each report is a Crashed event
    # and fires the automation once. Once the worker has had its word, every Crashed event is
    # paired with exactly one run-deployment action, which created one reconcile flow run.
    wait_until(lambda: _worker_done_with(flow_run.id), "the worker's report of the crash")

    def paired() -> tuple[list[Event], list[Event]] | None:
        crashes, actions = fired()
        triggering = sorted(_related(a, "triggering-event") for a in actions)
        if triggering != sorted(f"prefect.event.{c.id}" for c in crashes):
            return None
        return crashes, actions

    crashes, actions = wait_until(paired, "one automation action per Crashed event")
    assert 1 <= len(crashes) <= 2
    # What the trigger's match_related matches on: the related flow's role and name.
    assert {r["prefect.resource.name"] for c in crashes for r in c.related if r.role == "flow"} == {
        "simulate"
    }
    assert [(a.payload["action_type"], a.payload["status_code"]) for a in actions] == [
        ("run-deployment", 201)
    ] * len(crashes)
    assert {_related(a, "target") for a in actions} == {
        f"prefect.deployment.{action.deployment_id}"
    }
    created = {_related(a, "flow-run") for a in actions}
    reconciles = [
        r for r in _flow_runs_of("reconcile/reconcile") if f"prefect.flow-run.{r.id}" in created
    ]
    assert len(reconciles) == len(crashes)
    for reconcile_run in reconciles:
        done = wait_for_state(reconcile_run.id, TERMINAL)
        assert done.state_name == "Completed", flow_run_story(reconcile_run.id)
        assert done.parameters == {"runs_dir": str(runs), "silent_seconds": 600}
        assert done.created_by is not None
        assert (done.created_by.type, done.created_by.id) == ("AUTOMATION", automation.id)
        assert done.created_by.display_value == AUTOMATION
        assert done.idempotency_key is not None
        assert done.idempotency_key.startswith(f"automation {automation.id}, action 0, ")
        assert not done.auto_scheduled

    # Resumed once, in place, through the resume deployment, whatever the number of crashes.
    assert sorted((runs / "prisoners_dilemma").iterdir()) == [run_dir]
    events = assert_nothing_lost(run_dir, rounds=ROUNDS, teams=1)
    kinds = [e["event_type"] for e in events]
    assert kinds.count("run_resumed") == 1
    assert kinds.count("simulation_started") == 1
    assert [e["status"] for e in events if e["event_type"] == "simulation_ended"] == ["completed"]
    before_resume = events[kinds.index("run_resumed") - 1]
    (resume_run,) = [r for r in _flow_runs_of("resume/resume-self-hosted") if r.name == run_id]
    assert resume_run.idempotency_key == f"reconcile:{run_id}:{before_resume['event_id']}"
    assert wait_for_state(resume_run.id).state_name == "Completed"
    queued = (
        f"{run_id}: its flow run crashed; resume queued as flow run {resume_run.id} "
        "on resume/resume-self-hosted"
    )
    wait_until(
        lambda: any(queued in line for r in reconciles for line in flow_run_logs(r.id)),
        "the reconcile flow run's log of the resume it queued",
    )
