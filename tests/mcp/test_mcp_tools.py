"""The MCP tools through the SDK's own client, over stdio and over HTTP inside ``glossogen serve``.

Runs are scripted veyru runs (virtual clock) launched by ``start_run`` as detached processes and
played on the session's Prefect server; every process a test starts is gone when it ends.
"""

from __future__ import annotations

import asyncio
import csv
import json
import sys
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession

from glossogen.cli import main
from glossogen.launch import RunRequest, estimate_cost, plan_run
from tests.fixtures.played_runs import play_run
from tests.fixtures.polling import wait_until
from tests.fixtures.processes import end_group
from tests.mcp.conftest import (
    SCRIPTED,
    Serve,
    call,
    gone,
    http_session,
    in_process_session,
    pid_of,
    refusal,
    schema_cli,
    stdio_session,
    wait_for_a_round,
    wait_for_end,
)

TOOLS = {
    "list_scenarios", "get_scenario", "get_knobs_schema", "get_knobs_preset", "list_runs",
    "get_run", "read_run_events", "get_agent_transcript", "estimate_run", "start_run",
    "fork_run", "replace_agent", "cross_run_replace_agent", "resume_run", "stop_run",
    "evaluate_run", "evaluate_runs", "export_runs", "analyze_runs", "list_analysis_fields",
}  # fmt: skip


async def _whole_flow(session: ClientSession, tmp_path: Path) -> list[int]:
    """List, read a scenario, start, poll, read, evaluate, export and fork; return the pids."""
    listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    by_name = {t.name: t for t in listed}
    assert by_name["start_run"].input_schema["required"] == ["scenario", "model", "provider"]
    assert "spend_cap_usd" in by_name["start_run"].input_schema["properties"]
    assert all(t.description and t.output_schema for t in listed)

    schema = await call(session, "get_knobs_schema", scenario="veyru")
    assert schema["json_schema"] == schema_cli("veyru")
    preset = await call(session, "get_knobs_preset", scenario="veyru", preset="knobs_default")
    shipped = Path("scenarios/veyru/knobs_default.json").read_text()
    assert preset["knobs"] == json.loads(shipped)
    scenario = await call(session, "get_scenario", scenario="veyru")
    assert [s["agent_id"] for s in scenario["seats"]] == [
        "field_observer",
        "stabilization_engineer",
    ]
    assert scenario["presets"] == ["knobs_default", "knobs_intern"]

    launched = await call(session, "start_run", scenario="veyru", overrides=["round_count=3"],
                          **SCRIPTED)  # fmt: skip
    run_id = launched["run_id"]
    assert run_id.startswith("veyru/")
    assert sorted(launched) == ["launched_via", "replayed", "run_id", "warnings"]  # no path
    assert Path(tmp_path, "runs", run_id, "config.json").is_file()  # claimed before it returned
    detail = await wait_for_end(session, run_id)
    assert detail["status"] == "completed"
    assert (detail["rounds_played"], detail["rounds_won"]) == (3, 2)
    assert [r["won"] for r in detail["rounds"]] == [False, True, True]
    assert detail["rounds"][0]["verdicts"] == [
        {"team_id": "team", "won": False, "outcome": "lost", "success": False,
         "reason": "budget exceeded"}
    ]  # fmt: skip
    assert [r["winners"] for r in detail["rounds"]] == [[], ["team"], ["team"]]
    assert [s["agent_id"] for s in detail["seats"]] == ["field_observer", "stabilization_engineer"]
    assert detail["total_cost_usd"] == 0.0 and detail["lineage"] is None

    page = await call(session, "read_run_events", run_id=run_id, event_types=["message_sent"],
                      round_number=1, page_size=2, max_text_chars=5)  # fmt: skip
    assert (page["matched"], page["next_cursor"]) == (5, "2")  # round 1's five messages
    first = page["events"][0]
    assert (first["index"], first["event_type"], first["round_number"]) == (11, "message_sent", 1)
    fields = first["fields"]
    assert (fields["text"], fields["delivered_text"], fields["chars"]) == ("frost", "frost", 25)
    assert (fields["channel_id"], fields["sender_id"]) == ("link", "field_observer")
    # Every text over 5 characters is cut and its length kept; what events are matched by
    # (ids and times) is never cut.
    assert first["truncated"] == {"text": 25, "delivered_text": 25}
    assert len(fields["event_id"]) == len(fields["message_id"]) == 36
    assert datetime.fromisoformat(fields["timestamp"]).tzinfo is not None
    rest = await call(session, "read_run_events", run_id=run_id, event_types=["message_sent"],
                      round_number=1, page_size=500, cursor="2")  # fmt: skip
    assert len(rest["events"]) == page["matched"] - 2 and rest["next_cursor"] is None

    transcript = await call(session, "get_agent_transcript", run_id=run_id,
                            agent_id="field_observer")  # fmt: skip
    assert [r["round_number"] for r in transcript["rounds"]] == [1, 2, 3]
    assert [e["kind"] for e in transcript["rounds"][0]["entries"]] == [
        "briefing", "tool_call", "message", "tool_result", "tool_call", "tool_result",
        "tool_call", "world_event", "tool_result", "tool_call", "message", "world_event",
        "world_event", "world_event", "world_event", "tool_result",
        "briefing", "tool_call", "message", "tool_result",  # the postmortem
    ]  # fmt: skip

    listed_runs = await call(session, "list_runs", scenario=["veyru"], status="completed")
    assert [r["run_id"] for r in listed_runs["runs"]] == [run_id]
    assert (await call(session, "list_runs", knob=["round_count>=4"]))["runs"] == []

    evaluated = await call(session, "evaluate_run", run_id=run_id,
                           metrics=["round_success", "messages_per_round"])  # fmt: skip
    assert set(evaluated["entries"]) == {"round_success", "messages_per_round"}
    assert evaluated["entries"]["round_success"]["score"] == 2 / 3  # rounds 2 and 3 of 3
    assert (await call(session, "get_run", run_id=run_id))["evaluation"] == {
        "round_success": 2 / 3,
        "messages_per_round": 13 / 3,
    }

    out = tmp_path / "export"
    exported = await call(session, "export_runs", out=str(out), run_ids=[run_id])
    assert exported["runs"] == 1
    assert exported["rows"] == {"run_level": 1, "round_level": 3, "agent_level": 2}
    assert sorted(Path(f).name for f in exported["files"]) == [
        "agent_level.csv", "columns.csv", "round_level.csv", "run_level.csv"
    ]  # fmt: skip
    with open(out / "run_level.csv", newline="") as f:
        assert [row["run_id"] for row in csv.DictReader(f)] == [run_id]
    assert exported["coverage"]["run_level.run_id"] == 1

    fork = await call(session, "fork_run", source_run_id=run_id, after_round=1, rounds_after=1)
    forked = await wait_for_end(session, fork["run_id"])
    assert forked["status"] == "completed"
    assert forked["rounds_played"] == 2 and forked["lineage"]["after_round"] == 1
    return [p for p in (pid_of(launched), pid_of(fork)) if p is not None]


def _play(session: AbstractAsyncContextManager[ClientSession], tmp_path: Path) -> list[int]:
    async def go() -> list[int]:
        async with session as s:
            return await _whole_flow(s, tmp_path)

    return asyncio.run(go())


def test_stdio_server_lists_reads_starts_evaluates_exports_and_forks(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    pids = _play(stdio_session(runs, Path.cwd()), tmp_path)
    assert len(pids) == 2
    wait_until(lambda: all(gone(p) for p in pids), "the launched runs exit")


def test_http_endpoint_in_glossogen_serve_does_the_same(serve: Serve, tmp_path: Path) -> None:
    pids = _play(http_session(f"{serve.url}/mcp"), tmp_path)
    wait_until(lambda: all(gone(p) for p in pids), "the launched runs exit")


def test_refused_launches_leave_no_folder_and_say_why_in_one_line(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()

    async def go() -> list[str]:
        async with in_process_session(runs, tmp_path) as s:
            return [
                await refusal(s, "start_run", scenario="veyru", model="gpt-5.4", provider="openai"),
                await refusal(
                    s, "start_run", scenario="veyru", overrides=["round_count=lots"], **SCRIPTED
                ),  # fmt: skip
                await refusal(s, "start_run", scenario="nowhere", **SCRIPTED),
                await refusal(s, "get_run", run_id="veyru/123"),
            ]

    missing_key, bad_knob, unknown, no_run = asyncio.run(go())
    assert missing_key == (
        "missing credentials: OPENAI_API_KEY (provider openai, agent field_observer); "
        "ANTHROPIC_API_KEY (judge provider anthropic)"
    )
    assert bad_knob == "invalid knob 'round_count' = \"lots\": Input should be a valid integer"
    assert unknown == (
        "unknown scenario 'nowhere' (installed: drive_module_repair, orbital_anomaly, "
        "prisoners_dilemma, signal_game, spot_the_difference, veyru)"
    )
    assert no_run == "run ids that no longer resolve: veyru/123"  # as stop_run and the export
    assert list(runs.iterdir()) == []


def test_a_launch_over_its_spend_cap_is_refused_before_any_claim(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()

    async def go() -> tuple[dict[str, Any], str]:
        # Both keys present: a missing key is refused before the cap (glossogen run's order).
        params_env = {"OPENAI_API_KEY": "sk-test-not-a-real-key",
                      "ANTHROPIC_API_KEY": "sk-test-not-a-real-key"}  # fmt: skip
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        from tests.mcp.conftest import server_env

        server = StdioServerParameters(
            command=sys.executable, args=["-m", "glossogen", "mcp", "--runs-dir", str(runs)],
            env=server_env(params_env), cwd=str(tmp_path),
        )  # fmt: skip
        async with stdio_client(server) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            estimate = await call(s, "estimate_run", scenario="veyru", model="gpt-5.4",
                                  provider="openai", overrides=["round_count=2"])  # fmt: skip
            refused = await refusal(s, "start_run", scenario="veyru", model="gpt-5.4",
                                    provider="openai", overrides=["round_count=2"],
                                    spend_cap_usd=0.0001)  # fmt: skip
            return estimate, refused

    estimate, refused = asyncio.run(go())
    assert estimate["credentials"] == [
        {"variable": "OPENAI_API_KEY", "needed_by": "agent field_observer", "present": True},
        {"variable": "ANTHROPIC_API_KEY", "needed_by": "judge", "present": True},
    ]
    assert "sk-test" not in str(estimate)
    # The one launch estimate (glossogen run --dry-run's and the cap's):
    # veyru's seats on gpt-5.4 and its 2 judge calls a round on claude-haiku-4-5.
    plan = plan_run(
        RunRequest(
            scenario="veyru",
            model="gpt-5.4",
            provider="openai",
            runs_dir=str(runs),
            config="knobs_default",
            overrides=["round_count=2"],
        )  # fmt: skip
    )
    expected = estimate_cost(plan)
    total, per_round = expected.total_usd, expected.per_round_usd
    assert total is not None and per_round is not None
    # MCP rounds money to a millionth of a dollar.
    assert (estimate["total_cost_usd"], estimate["cost_per_round_usd"]) == (
        round(total, 6), round(per_round, 6))  # fmt: skip
    assert (estimate["judge_calls"], estimate["assumptions"]) == (4, expected.assumptions)
    assert refused == (  # glossogen run's line, naming the tool's argument, not the CLI's flag
        f"spend_cap_usd 0.0001: the dry-run estimate of the 2 rounds to play is ${total:.6f} "
        f"(${per_round:.6f} per round), above the cap"
    )
    assert list(runs.iterdir()) == []


def test_stop_run_ends_a_live_run_interrupted_and_a_second_stop_is_refused(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()

    started: list[int] = []

    async def go() -> tuple[dict[str, Any], dict[str, Any], str, list[int]]:
        # The tools in this process: the launched run and its stop are the point, not a server
        # process (test_stdio_server_lists_reads_starts_evaluates_exports_and_forks keeps one).
        async with in_process_session(runs, tmp_path) as s:
            launched = await call(s, "start_run", scenario="veyru",
                                  overrides=["round_count=1000"], **SCRIPTED)  # fmt: skip
            pid = pid_of(launched)
            assert pid is not None, launched  # a detached process (it leads its own group)
            started.append(pid)
            run_id = launched["run_id"]
            await wait_for_a_round(s, run_id)
            assert (await call(s, "get_run", run_id=run_id))["status"] == "running"
            stopped = await call(s, "stop_run", run_id=run_id)
            ended = await wait_for_end(s, run_id)
            again = await refusal(s, "stop_run", run_id=run_id)
            return stopped, ended, again, started

    try:
        stopped, ended, again, pids = asyncio.run(go())
    finally:  # the detached run leads a session of its own: a failed test ends it too
        for pid in started:
            end_group(pid)
    assert stopped["pid"] == pids[0]
    assert ended["status"] == "interrupted" and ended["error"] == "interrupted"
    # The round the stop lands in depends on when it arrives (a live process); what is
    # knowable is that every round played before it holds its verdict.
    assert 1 <= ended["rounds_played"] == len(ended["rounds"]) < 1000
    assert again == f"run {ended['run_id']} has no live writer: nothing to stop"
    wait_until(lambda: gone(pids[0]), "the stopped run's process exits")


def _stop(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """``glossogen stop RUN_DIR`` by the CLI's own entry: its exit code and stderr."""
    capsys.readouterr()  # what came before is not this command's
    with pytest.raises(SystemExit) as exited:
        main(["stop", str(run_dir)])
    return exited.value.code, capsys.readouterr().err


def test_glossogen_stop_refuses_a_run_with_no_live_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI's entry in-process: the refusals are the point, not a process.
    folder = Path(play_run(str(tmp_path), "veyru", rounds=1, now_unix=1_700_000_000).url)
    assert _stop(folder, capsys) == (
        65,
        "glossogen: error: run veyru/1700000000 has no live writer: nothing to stop\n",
    )
    (folder / "veyru.jsonl").write_text("{}\n")  # no run's log: as the listings skip it (u50a)
    assert _stop(folder, capsys) == (
        66,
        "glossogen: error: veyru/1700000000/veyru.jsonl is not a run log (no simulation_started "
        "event)\n",
    )
    assert _stop(tmp_path / "veyru" / "1", capsys) == (
        66,
        f"glossogen: error: run ids that no longer resolve: {tmp_path}/veyru/1\n",  # as typed
    )
    assert _stop(tmp_path / "loose", capsys) == (  # no timestamp: no run (was 64, "not a
        66,  # run folder"), as the export refuses --run-id <scenario>/loose
        f"glossogen: error: run ids that no longer resolve: {tmp_path}/loose\n",  # as typed
    )


def test_serve_needs_a_token_off_loopback_and_checks_it_when_set(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    open_host = Serve(runs, tmp_path, host="0.0.0.0")
    assert open_host.process.wait() == 65
    assert open_host.process.stderr is not None
    assert open_host.process.stderr.read().decode() == (
        "glossogen: error: --host '0.0.0.0' is not loopback: set GLOSSOGEN_SERVE_TOKEN "
        "(clients send it as a bearer token)\n"
    )
    guarded = Serve(runs, tmp_path, token="s3cret-token")
    try:
        guarded.wait_healthy()
        no_token = httpx.post(f"{guarded.url}/mcp", json={}, timeout=None)
        assert no_token.status_code == 401
        wrong = httpx.post(f"{guarded.url}/mcp", json={}, timeout=None,
                           headers={"Authorization": "Bearer nope"})  # fmt: skip
        assert wrong.status_code == 401 and "s3cret" not in wrong.text

        async def go() -> dict[str, Any]:
            async with http_session(f"{guarded.url}/mcp", token="s3cret-token") as s:
                return await call(s, "list_scenarios")

        names = [s["name"] for s in asyncio.run(go())["scenarios"]]
        assert names == [  # every shipped scenario
            "drive_module_repair",
            "orbital_anomaly",
            "prisoners_dilemma",
            "signal_game",
            "spot_the_difference",
            "veyru",
        ]
    finally:
        guarded.stop()
    assert guarded.process.returncode is not None
