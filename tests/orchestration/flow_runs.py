"""Reading flow runs and run folders while workers play them (tests of tests/orchestration)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.settings import PREFECT_API_URL

from tests.fixtures.polling import wait_until

TERMINAL = {
    StateType.COMPLETED,
    StateType.FAILED,
    StateType.CRASHED,
    StateType.CANCELLED,
}


_CLIENTS: dict[str, SyncPrefectClient] = {}


def api() -> SyncPrefectClient:
    """This process's one open Prefect client for the configured server (made on first use).

    The tests here read the server 4 times a second while they wait (flow runs, logs,
    events); a client made per read loaded the CA bundle into a new TLS context each time
    (about 30 ms of CPU, even for http://127.0.0.1) and opened a new connection, on the cores
    the workers' runs need. Closed by :func:`close_api_clients` before the server stops.
    """
    url = str(PREFECT_API_URL.value())
    if url not in _CLIENTS:
        client = get_client(sync_client=True)
        client.__enter__()
        _CLIENTS[url] = client
    return _CLIENTS[url]


def close_api_clients() -> None:
    """Close the clients :func:`api` made."""
    while _CLIENTS:
        _, client = _CLIENTS.popitem()
        client.__exit__(None, None, None)


def read_flow_run(flow_run_id: UUID) -> FlowRun:
    """Read one flow run from the configured server."""
    return api().read_flow_run(flow_run_id)


def wait_for_state(flow_run_id: UUID, states: set[StateType] = TERMINAL) -> FlowRun:
    """Wait until the flow run is in one of ``states`` and return it."""

    def reached() -> FlowRun | None:
        flow_run = read_flow_run(flow_run_id)
        return flow_run if flow_run.state_type in states else None

    return wait_until(reached, f"flow run {flow_run_id} to reach {sorted(s.value for s in states)}")


def log_lines(run_dir: Path) -> list[dict[str, Any]]:
    """Every complete line of a run folder's event log, as dicts."""
    log = run_dir / f"{run_dir.parent.name}.jsonl"
    if not log.exists():
        return []
    lines = []
    for raw in log.read_text().splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue  # a line cut by the kill
    return lines


def assert_nothing_lost(run_dir: Path, rounds: int, teams: int) -> list[dict[str, Any]]:
    """Assert the run completed with exactly one verdict per team per round, no id repeated.

    Returns the log's events for further checks.
    """
    events = log_lines(run_dir)
    ids = Counter(e["event_id"] for e in events)
    assert [i for i, n in ids.items() if n > 1] == [], "an event id repeats"
    messages = Counter(e["message_id"] for e in events if e["event_type"] == "message_sent")
    assert [i for i, n in messages.items() if n > 1] == [], "a message id repeats"
    verdicts = Counter(
        (e["round_number"], e["team_id"])
        for e in events
        if e["event_type"] == "round_result_recorded"
    )
    assert sorted(verdicts.values()) == [1] * rounds * teams
    assert sorted({r for r, _ in verdicts}) == list(range(1, rounds + 1))
    assert events[-1]["event_type"] == "simulation_ended"
    assert events[-1]["status"] == "completed"
    return events


def assert_resumed_once(run_dir: Path, rounds: int) -> list[dict[str, Any]]:
    """Assert the run ended ``interrupted`` once, then ``completed`` after its resume, with one
    verdict per round and no event id repeated. Returns the log's events."""
    events = log_lines(run_dir)
    assert [e["status"] for e in events if e["event_type"] == "simulation_ended"] == [
        "interrupted",
        "completed",
    ]
    verdicts = Counter(
        e["round_number"] for e in events if e["event_type"] == "round_result_recorded"
    )
    assert verdicts == Counter({r: 1 for r in range(1, rounds + 1)})
    assert len({e["event_id"] for e in events}) == len(events)
    return events


def flow_run_logs(flow_run_id: UUID, limit: int = 200) -> list[str]:
    """The first ``limit`` log lines the flow run (and its worker) sent to the server."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    logs = api().read_logs(
        log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])), limit=limit
    )
    return [f"{log.timestamp:%H:%M:%S.%f} {log.level} {log.message[:400]}" for log in logs]


def flow_run_story(flow_run_id: UUID) -> str:
    """The flow run's state history and its log lines, for an assertion message."""
    states = api().read_flow_run_states(flow_run_id)
    history = [f"{s.timestamp:%H:%M:%S.%f} {s.name}: {(s.message or '')[:200]}" for s in states]
    return "\n".join(["states:", *history, "logs:", *flow_run_logs(flow_run_id)])
