"""The MCP tools the whole-flow tests leave out, through the SDK's own client, on the server
built in the test's process (the stdio server as a process: ``test_mcp_tools.py``).

Source runs are scripted veyru runs played through the library into the server's runs folder
(a second each, virtual clock): three completed 2-round runs and one stopped after round 1 of
2 (no ``simulation_ended``, as a killed process leaves it). The session pages through them with
``list_runs``, replaces a seat (``replace_agent``, ``cross_run_replace_agent``), resumes the
stopped run (``resume_run``, with new limits) and starts a run with its own spend cap (``start_run``); every
launched run is played to its end and every process a launch started is gone afterwards.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from glossogen.eventlog import RunResumed, SimulationStarted, read_events
from tests.fixtures.played_runs import after_round_1, play_run
from tests.fixtures.polling import wait_until
from tests.mcp.conftest import (
    SCRIPTED,
    call,
    gone,
    in_process_session,
    pid_of,
    refusal,
    wait_for_end,
)


def test_list_runs_pages_derived_runs_resume_and_start_with_a_cap(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    sources = [play_run(str(runs), "veyru", rounds=2).run_id for _ in range(3)]
    stopped = asyncio.run(after_round_1(str(runs)))
    everyone = sorted([*sources, stopped])  # oldest first: run ids are claim timestamps
    assert len(set(everyone)) == 4

    async def go() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with in_process_session(runs, tmp_path) as s:
            first = await call(s, "list_runs", scenario=["veyru"], page_size=3)
            second = await call(s, "list_runs", scenario=["veyru"], page_size=3,
                                cursor=first["next_cursor"])  # fmt: skip
            got["pages"] = (first, second)
            got["bad_cursor"] = await refusal(s, "list_runs", cursor="page-two")
            got["replaced"] = await call(
                s, "replace_agent", source_run_id=sources[0], after_round=1,
                replaced_agent_id="field_observer", model="other-script", provider="scripted",
                channel_visibility="postmortem=none",
            )  # fmt: skip
            got["crossed"] = await call(
                s, "cross_run_replace_agent", source_run_id=sources[1], after_round=1,
                replaced_agent_id="stabilization_engineer", donor_run_id=sources[2],
                donor_agent_id="stabilization_engineer", model="donor-script",
                provider="scripted",
            )  # fmt: skip
            got["resumed"] = await call(  # a change of limits, as `run --resume` takes it
                s, "resume_run", run_id=stopped, max_agent_turns=150, run_timeout_seconds=3600,
                spend_cap_usd=0.5, allow_config_change=True,
            )  # fmt: skip
            got["capped"] = await call(s, "start_run", scenario="veyru",
                                       overrides=["round_count=1"], spend_cap_usd=0.5,
                                       **SCRIPTED)  # fmt: skip
            launched = ("replaced", "crossed", "resumed", "capped")
            for name in launched:
                got[f"{name}_end"] = await wait_for_end(s, got[name]["run_id"])
            got["finished_again"] = await refusal(s, "resume_run", run_id=stopped)
        return got

    got = asyncio.run(go())
    first, second = got["pages"]
    assert [r["run_id"] for r in first["runs"]] == everyone[:3]
    assert (first["total"], first["next_cursor"]) == (4, "3")
    assert [r["run_id"] for r in second["runs"]] == everyone[3:]
    assert (second["total"], second["next_cursor"]) == (4, None)
    assert [r["status"] for r in first["runs"] + second["runs"]] == [
        "stopped" if r == stopped else "completed"
        for r in everyone  # no live writer
    ]
    assert got["bad_cursor"] == "cursor 'page-two' is not one this server returned for list_runs"

    replaced = got["replaced_end"]
    assert (replaced["status"], replaced["rounds_played"]) == ("completed", 2)
    assert replaced["lineage"] == {  # the source by run id alone (was also its server path)
        "derivation": "replace_agent", "source_run_id": sources[0], "after_round": 1,
        "replaced_agent_id": "field_observer", "model": "other-script", "provider": "scripted",
        "channel_visibility": "postmortem=none",
    }  # fmt: skip
    seats = {s["agent_id"]: s["model"] for s in replaced["seats"]}
    assert seats == {"field_observer": "other-script", "stabilization_engineer": "scripted"}

    crossed = got["crossed_end"]
    assert (crossed["status"], crossed["rounds_played"]) == ("completed", 2)
    assert crossed["lineage"]["derivation"] == "cross_run_replace_agent"
    assert crossed["lineage"]["donor_run_id"] == sources[2]  # was donor_run_dir, a server path
    assert str(runs) not in json.dumps(crossed)
    assert crossed["lineage"]["donor_agent_id"] == "stabilization_engineer"
    seats = {s["agent_id"]: s["model"] for s in crossed["seats"]}
    assert seats == {"field_observer": "scripted", "stabilization_engineer": "donor-script"}

    resumed = got["resumed_end"]
    assert (resumed["run_id"], resumed["status"], resumed["rounds_played"]) == (
        stopped, "completed", 2)  # fmt: skip
    assert resumed["lineage"] is None  # in place: the same run, not a derived one
    (reopened,) = [
        e
        for e in read_events(f"{runs}/{got['resumed']['run_id']}/veyru.jsonl").events
        if isinstance(e, RunResumed)
    ]
    assert reopened.limit_changes == {
        "max_agent_turns": {"recorded": 200, "now": 150},
        "run_timeout_seconds": {"recorded": None, "now": 3600.0},
        "spend_cap_usd": {"recorded": None, "now": 0.5},
    }
    assert got["finished_again"] == (  # the tool to call and its arguments, not a CLI command
        f"run {stopped} already ended (simulation_ended); use fork_run (source_run_id, "
        "after_round) to play further rounds from it"
    )

    capped = got["capped_end"]
    assert (capped["status"], capped["rounds_played"]) == ("completed", 1)
    (started,) = [
        e
        for e in read_events(f"{runs}/{capped['run_id']}/veyru.jsonl").events
        if isinstance(e, SimulationStarted)
    ]
    assert started.spend_cap_usd == 0.5  # the cap reached the run, recorded with its limits
    pids = [pid_of(got[name]) for name in ("replaced", "crossed", "resumed", "capped")]
    assert all(p is not None for p in pids)
    wait_until(lambda: all(gone(p) for p in pids if p is not None), "the launched runs exit")


def test_a_derived_run_without_its_providers_key_is_refused_and_claims_nothing(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    source = play_run(str(runs), "veyru", rounds=2).run_id
    before = sorted(p.name for p in (runs / "veyru").iterdir())

    async def go() -> tuple[str, str]:
        async with in_process_session(runs, tmp_path) as s:  # no provider key in its environment
            replaced = await refusal(
                s, "replace_agent", source_run_id=source, after_round=1,
                replaced_agent_id="field_observer", model="gpt-4.1", provider="openai",
            )  # fmt: skip
            crossed = await refusal(
                s, "cross_run_replace_agent", source_run_id=source, after_round=1,
                replaced_agent_id="field_observer", donor_run_id=source,
                donor_agent_id="stabilization_engineer", model="gpt-4.1", provider="openai",
            )  # fmt: skip
            return replaced, crossed

    replaced, crossed = asyncio.run(go())
    # Every key the derived run would need is named: its new model's and the judge's.
    assert (
        replaced
        == crossed
        == (
            "missing credentials: OPENAI_API_KEY (provider openai, agent field_observer); "
            "ANTHROPIC_API_KEY (judge provider anthropic)"
        )
    )
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before  # nothing claimed


def test_an_argument_a_tool_does_not_take_is_refused_naming_it(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()

    async def go() -> tuple[str, str, dict[str, Any]]:
        async with in_process_session(runs, tmp_path) as s:
            typo = await refusal(s, "start_run", scenario="veyru", overrides=["round_count=1"],
                                 spend_cap=0.0001, **SCRIPTED)  # fmt: skip
            paged = await refusal(s, "list_runs", limit=1)
            listed = await s.list_tools()
            schema = next(t for t in listed.tools if t.name == "start_run").input_schema
            return typo, paged, schema

    typo, paged, schema = asyncio.run(go())
    # Arguments that do not fit the schema are refused in one line naming each of them.
    assert typo == "spend_cap 0.0001: Extra inputs are not permitted"  # the value echoed
    assert paged == "limit 1: Extra inputs are not permitted"
    assert schema["additionalProperties"] is False
    assert list(runs.iterdir()) == []  # nothing claimed
