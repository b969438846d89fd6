"""The llm:<provider> limit bounds model requests across processes, and a waiting call says so."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import PrefectClient, get_client
from prefect.client.schemas.actions import (
    GlobalConcurrencyLimitCreate,
    GlobalConcurrencyLimitUpdate,
)
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound

from deployments.local_server import ProcessWorker
from glossogen.launch import RunRequest
from orchestration.gate import PrefectCallGate
from tests.fixtures.model_stubs import StubModelServer
from tests.fixtures.polling import wait_until
from tests.orchestration.flow_runs import assert_nothing_lost, wait_for_state
from tests.providers.test_wire_formats import pd_player


def test_a_provider_limit_of_2_is_never_exceeded(
    openai_worker: ProcessWorker, model_stub: StubModelServer, tmp_path: Path
) -> None:
    model_stub.responder = pd_player
    model_stub.latency = 0.2  # seconds per answer: requests press on the limit
    # The first requests are held until two are in flight at once, so the limit is reached
    # whatever the load of the machine (a hold, not a latency, makes them overlap).
    model_stub.hold_until_in_flight = 2
    runs = tmp_path / "runs"
    flow_runs = [
        run_deployment(
            "simulate/simulate-openai",
            parameters={
                "config": RunRequest(
                    scenario="prisoners_dilemma",
                    model="gpt-5.4",
                    provider="openai",
                    runs_dir=str(runs),
                    config="knobs_default",
                    overrides=[
                        "round_count=2",
                        "idle_floor_seconds=0.05",
                        "postmortem_enabled=false",
                    ],  # fmt: skip
                ).model_dump()
            },
            timeout=0,
        )
        for _ in range(3)  # 3 runs x 2 agents: up to 6 requests at once without the limit
    ]
    wait_until(lambda: model_stub.max_concurrent >= 2, "two requests in flight at once")
    model_stub.end_holds()  # the rest are answered as they come (a seat may ask alone)
    states = [wait_for_state(f.id).state_name for f in flow_runs]
    assert states == ["Completed"] * 3
    assert model_stub.max_concurrent == 2  # the limit (llm:openai = 2) was reached, never passed
    assert len(model_stub.requests) >= 3 * 2 * 2  # every agent asked in every round
    for run_dir in sorted((runs / "prisoners_dilemma").iterdir()):
        assert_nothing_lost(run_dir, rounds=2, teams=1)


def test_the_gate_says_what_a_call_waits_for_and_fails_open_visibly(orchestration_api: str) -> None:
    async def scenario() -> tuple[list[str], int, bool, bool]:
        async with get_client() as client:
            await client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name="llm:gate-test", limit=1, active=True)
            )
            await client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name="llm:gate-off", limit=1, active=False)
            )
        holder = PrefectCallGate(say_waiting_after=600)  # another process, in effect
        gate = PrefectCallGate(say_waiting_after=0)  # says so once it has to wait at all
        order: list[str] = []
        first = holder.slot("gate-test")
        await first.__aenter__()
        order.append("first in")

        async def second() -> None:
            async with gate.slot("gate-test"):
                order.append("second in")

        waiting = asyncio.create_task(second())
        # The second call logs that it waits for llm:gate-test once the server (a real process)
        # has answered its reads (pytest-timeout ends a call that never says so).
        while gate.waits == 0:
            await asyncio.sleep(0.05)
        order.append("first out")
        await first.__aexit__(None, None, None)
        await waiting
        missing = (await gate.limit_state("gate-missing")).enforced
        inactive = (await gate.limit_state("gate-off")).enforced
        return order, gate.waits, missing, inactive

    order, waits, missing, inactive = asyncio.run(scenario())
    assert order == ["first in", "first out", "second in"]
    assert waits == 1
    assert (missing, inactive) == (False, False)  # not enforced: calls go unlimited (logged)


def test_a_finished_call_keeps_its_slot_for_the_next_call_until_the_run_gives_it_back(
    orchestration_api: str,
) -> None:
    """A slot outlives its request (idle, for this process's next call), then goes back."""

    async def active_slots(client: PrefectClient) -> int:
        return (await client.read_global_concurrency_limit_by_name("llm:gate-linger")).active_slots

    async def scenario() -> list[tuple[str, int]]:
        seen: list[tuple[str, int]] = []
        async with get_client() as client:
            await client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name="llm:gate-linger", limit=1, active=True)
            )
            gate = PrefectCallGate(linger_seconds=600)
            for call in ("first", "second"):
                async with gate.slot("gate-linger"):
                    seen.append((f"{call} call", await active_slots(client)))
                seen.append((f"after the {call}", await active_slots(client)))
            await gate.release_idle()  # the run ends
            seen.append(("run ended", await active_slots(client)))
            brief = PrefectCallGate(linger_seconds=0)
            async with brief.slot("gate-linger"):
                seen.append(("brief call", await active_slots(client)))
            # Its linger (0 s) runs out at once and its release goes out on its own: a few
            # turns of the loop put it on the wire, where the end of the run finds it.
            for _ in range(3):
                await asyncio.sleep(0)
            await brief.release_idle()  # the run ends: it waits for that release too
            seen.append(("after the brief call", await active_slots(client)))
        return seen

    assert asyncio.run(scenario()) == [
        ("first call", 1),
        ("after the first", 1),
        ("second call", 1),
        ("after the second", 1),
        ("run ended", 0),
        ("brief call", 1),
        ("after the brief call", 0),
    ]


def test_every_slot_of_a_limit_is_used_while_calls_wait_for_one(
    orchestration_api: str, model_stub: StubModelServer
) -> None:
    """12 calls come at once to one process's gate (a sweep's runs start together), limit 3.

    The stub holds each request until 3 are in flight, so every batch of 3 needs every slot:
    one the waiting calls cannot reach (a second local queue made by calls that came together,
    its slots kept idle for its own next call) leaves a batch that never fills. Counted on the
    stub's side: 3 in flight at most and at least, 12 requests answered.
    """
    limit, calls = 3, 12
    model_stub.hold_until_in_flight = limit

    async def scenario() -> tuple[list[int], int, int, tuple[int, int]]:
        async with get_client() as client:
            # A finished call's slot stays with this process for its next call the whole test
            # (no release on a timer): only a waiting call of this process can use it.
            gate = PrefectCallGate(linger_seconds=600)
            codes = await _calls_at_once(client, gate, "gate-fill", limit, calls, model_stub)
            held = await client.read_global_concurrency_limit_by_name("llm:gate-fill")
            await gate.release_idle()  # the run ends
            after = await client.read_global_concurrency_limit_by_name("llm:gate-fill")
            return codes, held.active_slots, after.active_slots, gate.server_asks()

    codes, held, after, asks = asyncio.run(scenario())
    assert codes == [200] * calls
    assert model_stub.max_concurrent == limit
    assert len(model_stub.requests) == calls
    assert (held, after) == (limit, 0)  # kept for the next call, then every one given back
    assert asks == (limit, 0)  # 12 calls, 3 slots taken from the server, passed on locally


async def _calls_at_once(
    client: PrefectClient,
    gate: PrefectCallGate,
    name: str,
    limit: int,
    calls: int,
    stub: StubModelServer,
) -> list[int]:
    """Create ``llm:<name>`` at ``limit``; send ``calls`` stub requests at once through ``gate``."""
    await client.create_global_concurrency_limit(
        GlobalConcurrencyLimitCreate(name=f"llm:{name}", limit=limit, active=True)
    )
    body = {"model": "stub", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=stub.base_url, timeout=None) as http:

        async def call() -> int:
            async with gate.slot(name):
                return (await http.post("/chat/completions", json=body)).status_code

        return await asyncio.gather(*(call() for _ in range(calls)))


def test_a_slot_whose_turn_ends_goes_back_and_is_taken_again_with_no_slot_left_unused(
    orchestration_api: str, model_stub: StubModelServer
) -> None:
    """12 calls at once, limit 3, and every slot's turn ends with its call (a turn of 0 s).

    Each slot goes back to the server as its call ends, and the call waiting for it asks again
    once that release has landed: never refused (a refused ask waits a poll interval), and the
    stub, holding each request until 3 are in flight, sees every batch of 3 fill.
    """
    limit, calls = 3, 12
    model_stub.hold_until_in_flight = limit

    async def scenario() -> tuple[list[int], tuple[int, int], int]:
        async with get_client() as client:
            gate = PrefectCallGate(linger_seconds=600, turn_seconds=0)
            codes = await _calls_at_once(client, gate, "gate-turn", limit, calls, model_stub)
            await gate.release_idle()  # the run ends: the last releases land
            after = await client.read_global_concurrency_limit_by_name("llm:gate-turn")
            return codes, gate.server_asks(), after.active_slots

    codes, asks, after = asyncio.run(scenario())
    assert codes == [200] * calls
    assert model_stub.max_concurrent == limit
    assert len(model_stub.requests) == calls
    assert asks == (calls, 0)  # a slot taken from the server per call, no ask refused
    assert after == 0  # every one given back


def test_a_slot_is_held_only_while_a_model_request_is_on_the_wire(
    orchestration_api: str, model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 agent requests to OpenAI at once through the gate, limit 3, the stub holding them all.

    The SDK builds each HTTP request (the whole history turned into JSON) before its slot is
    asked for: with 3 requests held on the stub, the 9 others wait for a slot at the HTTP
    transport, their requests built (12 reached the transport, 3 holding slots). Once let go,
    the stub answers each batch of 3 only when all 3 slots are in use: every slot is used while
    calls wait, 12 answered, 3 slots taken from the server. Counted, not timed.
    """
    from pydantic_ai import Agent

    from glossogen.concurrency import install_gate
    from glossogen.models import build_model

    limit, calls = 3, 12
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    model_stub.hold_until_in_flight = math.inf

    async def scenario() -> tuple[list[str], int, int, int, tuple[int, int]]:
        async with get_client() as client:
            # llm:openai is the real provider's limit, which other tests of this worker's server
            # set from a limits file (pools apply): set it for this test, put it back after
            try:
                before = await client.read_global_concurrency_limit_by_name("llm:openai")
            except ObjectNotFound:
                before = None
            if before is None:
                await client.create_global_concurrency_limit(
                    GlobalConcurrencyLimitCreate(name="llm:openai", limit=limit, active=True)
                )
            else:
                await client.update_global_concurrency_limit(
                    "llm:openai", GlobalConcurrencyLimitUpdate(limit=limit, active=True)
                )
            gate = PrefectCallGate(linger_seconds=600)
            previous = install_gate(gate)
            try:
                model = build_model("openai", "gpt-5.4")
                # the gated transport is private to the provider SDK client; the test counts on it
                transport = model.wrapped.client._client._transport  # type: ignore[attr-defined]
                agent = Agent(model)
                running = [asyncio.ensure_future(agent.run("hi")) for _ in range(calls)]
                while model_stub.in_flight < limit or transport.asked < calls:
                    await asyncio.sleep(0.01)  # poll: every call has reached the transport
                asked, waiting = transport.asked, sum(p.waiting for p in gate._pools.values())
                model_stub.hold_until_in_flight = limit
                model_stub.release()
                answers = [result.output for result in await asyncio.gather(*running)]
                await gate.release_idle()
            finally:
                install_gate(previous)
                if before is None:
                    await client.delete_global_concurrency_limit_by_name("llm:openai")
                else:
                    await client.update_global_concurrency_limit(
                        "llm:openai",
                        GlobalConcurrencyLimitUpdate(limit=before.limit, active=before.active),
                    )
            return answers, asked, waiting, model_stub.max_concurrent, gate.server_asks()

    answers, asked, waiting, most, asks = asyncio.run(scenario())
    assert (asked, waiting) == (calls, calls - limit)  # built, then waiting for a slot
    assert len(answers) == calls and len(model_stub.requests) == calls
    assert most == limit
    assert asks == (limit, 0)
