"""MCP words a library refusal with the tool's argument, never a CLI flag, and the derived-run
tools take every limit the CLI's derived-run commands take; through the SDK's client, on the
server built in the test's process (what a tool answers is the point here; the stdio server
as a process is ``tests/mcp/test_mcp_tools.py``'s), the runs it launches real processes.

The source runs are scripted 2-round veyru runs played through the library into the server's
runs folder.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from glossogen.eventlog import SimulationStarted, read_events
from tests.fixtures.played_runs import play_run
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

SEAT = {"replaced_agent_id": "field_observer", "model": "other-script", "provider": "scripted"}


def test_a_refused_value_is_named_as_the_tools_argument_not_a_flag(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    source = play_run(str(runs), "veyru", rounds=2).run_id
    before = sorted(p.name for p in (runs / "veyru").iterdir())
    asked = [
        ("start_run", {"scenario": "veyru", "max_agent_turns": 0, **SCRIPTED}),
        ("fork_run", {"source_run_id": source, "after_round": 9}),
        ("fork_run", {"source_run_id": source, "after_round": 2}),
        ("fork_run", {"source_run_id": source, "after_round": 1, "rounds_after": 0}),
        ("fork_run", {"source_run_id": source, "after_round": 1, "run_timeout_seconds": 0}),
        ("replace_agent", {"source_run_id": source, "after_round": 1, "spend_cap_usd": -1, **SEAT}),
        ("cross_run_replace_agent", {"source_run_id": source, "after_round": 1,
                                     "max_agent_turns": -2, "donor_run_id": source,
                                     "donor_agent_id": "field_observer", **SEAT}),
        ("replace_agent", {"source_run_id": source, "after_round": 1, **SEAT,
                           "provider": "nope"}),
        ("resume_run", {"run_id": source, "spend_cap_usd": 0}),
        ("evaluate_run", {"run_id": source, "judge_replicas": 0}),
    ]  # fmt: skip

    async def go() -> tuple[list[str], dict[str, set[str]]]:
        async with in_process_session(runs, tmp_path) as s:
            said = [await refusal(s, tool, **arguments) for tool, arguments in asked]
            listed = await s.list_tools()
            return said, {t.name: set(t.input_schema["properties"]) for t in listed.tools}

    said, arguments = asyncio.run(go())
    assert said == [
        "max_agent_turns must be at least 1, got 0",
        "after_round 9: the run's completed rounds are 1..2",
        "round_count 2 leaves nothing to play after round 2: pass rounds_after",
        "rounds_after must be at least 1, got 0",
        "run_timeout_seconds must be a number of seconds above 0, got 0",
        "spend_cap_usd must be a number of USD above 0, got -1",
        "max_agent_turns must be at least 1, got -2",
        "provider: unknown provider 'nope' (known: anthropic, openai, google-gla, xai, groq, "
        "mistral, deepseek, openrouter, ollama, self-hosted, scripted, local)",
        "spend_cap_usd must be a number of USD above 0, got 0",
        "judge_replicas 0: must be at least 1",
    ]
    # Each names an argument of the tool refused, which an assistant can pass as it reads.
    named = ["max_agent_turns", "after_round", "rounds_after", "rounds_after",
             "run_timeout_seconds", "spend_cap_usd", "max_agent_turns", "provider",
             "spend_cap_usd", "judge_replicas"]  # fmt: skip
    assert [n in arguments[tool] for n, (tool, _) in zip(named, asked, strict=True)] == [True] * 10
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before  # nothing claimed


def test_the_derived_run_tools_take_the_clis_limits_and_knobs(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    source, donor = (play_run(str(runs), "veyru", rounds=2).run_id for _ in range(2))
    knobs = tmp_path / "knobs.json"  # as --knobs: laid over the source's knobs
    knobs.write_text('{"labels": {"via": "knobs"}}')
    limits = {"max_agent_turns": 150, "run_timeout_seconds": 3600.0, "spend_cap_usd": 0.5,
              "knobs": str(knobs)}  # fmt: skip
    derived = {
        "fork_run": {"source_run_id": source, "after_round": 1},
        "replace_agent": {"source_run_id": source, "after_round": 1, **SEAT},
        "cross_run_replace_agent": {"source_run_id": source, "after_round": 1, **SEAT,
                                    "donor_run_id": donor, "donor_agent_id": "field_observer"},
    }  # fmt: skip

    async def go() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        async with in_process_session(runs, tmp_path) as s:
            # All three launched before any is waited for: they play side by side.
            launches = {tool: await call(s, tool, **a, **limits) for tool, a in derived.items()}
            return {
                tool: (launched, await wait_for_end(s, launched["run_id"]))
                for tool, launched in launches.items()
            }

    got = asyncio.run(go())
    for tool, (launched, ended) in got.items():
        assert (tool, ended["status"], ended["rounds_played"]) == (tool, "completed", 2)
        # The run by its id, never the server's path (was run_dir: '/srv/runs/veyru/<ts>'):
        assert (tool, *sorted(launched)) == (tool, "launched_via", "replayed", "run_id", "warnings")
        assert "run_dir" not in ended
        assert str(runs) not in json.dumps(launched)
        assert ended["labels"] == {"via": "knobs"}
        assert ended["lineage"]["limit_changes"] == {
            "max_agent_turns": {"recorded": 200, "now": 150},
            "run_timeout_seconds": {"recorded": None, "now": 3600.0},
            "spend_cap_usd": {"recorded": None, "now": 0.5},
        }
        started = next(
            e
            for e in read_events(f"{runs}/{launched['run_id']}/veyru.jsonl").events
            if isinstance(e, SimulationStarted)
        )
        assert (started.max_agent_turns, started.run_timeout_seconds, started.spend_cap_usd) == (
            150, 3600.0, 0.5)  # fmt: skip
    pids = [pid_of(launched) for launched, _ in got.values()]
    wait_until(lambda: all(gone(p) for p in pids if p is not None), "the launched runs exit")


def test_the_derived_run_tools_take_replay(prefect_api: str, tmp_path: Path) -> None:
    """``replay`` as ``--replay``: rounds 1..1 played again from the tape, then on live."""
    runs = tmp_path / "runs"
    source = play_run(str(runs), "veyru", rounds=2).run_id
    derived = {
        "fork_run": {"source_run_id": source, "after_round": 1, "replay": True},
        "replace_agent": {"source_run_id": source, "after_round": 1, **SEAT, "replay": True},
    }

    async def go() -> tuple[dict[str, Any], dict[str, set[str]]]:
        async with in_process_session(runs, tmp_path) as s:
            # Both launched before either is waited for: they play side by side.
            launches = {tool: await call(s, tool, **a) for tool, a in derived.items()}
            got = {
                tool: (launched, await wait_for_end(s, launched["run_id"]))
                for tool, launched in launches.items()
            }
            listed = await s.list_tools()
        return got, {t.name: set(t.input_schema["properties"]) for t in listed.tools}

    got, arguments = asyncio.run(go())
    assert [t for t in arguments if "replay" in arguments[t]] == [
        "fork_run", "replace_agent", "cross_run_replace_agent"
    ]  # fmt: skip
    for tool, (_, ended) in got.items():
        assert (tool, ended["status"], ended["rounds_played"]) == (tool, "completed", 2)
        assert ended["lineage"]["prefix"] == "replayed"
    pids = [pid_of(launched) for launched, _ in got.values()]
    wait_until(lambda: all(gone(p) for p in pids if p is not None), "the launched runs exit")


def test_an_infinite_huge_or_loosely_typed_limit_is_refused_and_nothing_is_launched(
    tmp_path: Path,
) -> None:
    """Issue 32: ``Infinity`` (as a JSON client may send it, read as ``inf``), an integer past
    the bound or past 64 bits, and a bool or numeric string for a number are each refused
    in one line naming the argument, before anything is written."""
    from glossogen.mcp import build_server

    runs = tmp_path / "runs"
    source = play_run(str(runs), "veyru", rounds=2).run_id
    before = sorted(p.name for p in (runs / "veyru").iterdir())
    inf = float("inf")
    fork = {"source_run_id": source, "after_round": 1}
    # Through the server's tools as JSON ``Infinity`` reaches them (the SDK's own client
    # writes a float inf as null, so it never sends one).
    infinite = [
        ("start_run", {"scenario": "veyru", "spend_cap_usd": inf, **SCRIPTED}),
        ("start_run", {"scenario": "veyru", "run_timeout_seconds": inf, **SCRIPTED}),
        ("fork_run", {**fork, "spend_cap_usd": inf}),
        ("fork_run", {**fork, "run_timeout_seconds": inf}),
        ("replace_agent", {**fork, "spend_cap_usd": inf, **SEAT}),
        ("resume_run", {"run_id": source, "run_timeout_seconds": inf}),
        ("start_run", {"scenario": "veyru", "run_timeout_seconds": -inf, **SCRIPTED}),
        ("evaluate_runs", {"metrics": ["round_success"], "spend_cap_usd": inf}),
    ]
    huge = 99999999999999999999999
    loose = [
        ("start_run", {"scenario": "veyru", "max_agent_turns": huge, **SCRIPTED}),
        ("fork_run", {**fork, "max_agent_turns": 1000001}),
        ("fork_run", {**fork, "rounds_after": 2**63}),
        ("resume_run", {"run_id": source, "max_agent_turns": huge}),
        ("fork_run", {**fork, "max_agent_turns": True}),
        ("start_run", {"scenario": "veyru", "max_agent_turns": "7", **SCRIPTED}),
        ("fork_run", {**fork, "spend_cap_usd": "2"}),
        ("evaluate_run", {"run_id": source, "judge_replicas": True}),
        ("evaluate_run", {"run_id": source, "probe_replicas": 2**63}),
    ]

    async def go() -> list[str]:
        server = build_server(str(runs))
        said = []
        for tool, arguments in infinite:
            try:
                await server.call_tool(tool, arguments)
            except Exception as exc:  # the tool error the session sends back as text
                said.append(str(exc).removeprefix(f"Error executing tool {tool}: "))
        async with in_process_session(runs, tmp_path) as s:
            said += [await refusal(s, tool, **arguments) for tool, arguments in loose]
        return said

    said = asyncio.run(go())
    # One wording of a number that is not finite for every tool (``refusals.not_finite``, as
    # evaluate_runs and the CLI's flags word it): fork_run said ``spend_cap_usd must be a
    # number of USD above 0, got inf`` where evaluate_runs said ``'inf' is not a finite number``.
    assert said == [
        "spend_cap_usd: 'inf' is not a finite number",
        "run_timeout_seconds: 'inf' is not a finite number",
        "spend_cap_usd: 'inf' is not a finite number",
        "run_timeout_seconds: 'inf' is not a finite number",
        "spend_cap_usd: 'inf' is not a finite number",
        "run_timeout_seconds: 'inf' is not a finite number",
        "run_timeout_seconds: '-inf' is not a finite number",
        "spend_cap_usd: 'inf' is not a finite number",
        "max_agent_turns must be at most 1000000, got 99999999999999999999999",
        "max_agent_turns must be at most 1000000, got 1000001",
        "rounds_after must be at most 9223372036854775807, got 9223372036854775808",
        "max_agent_turns must be at most 1000000, got 99999999999999999999999",
        "max_agent_turns: Input should be a valid integer",
        "max_agent_turns: Input should be a valid integer",
        "spend_cap_usd: Input should be a valid number",
        "judge_replicas: Input should be a valid integer",
        "probe_replicas 9223372036854775808: must be at most 9223372036854775807",
    ]
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before


def test_export_runs_refuses_an_empty_run_ids_as_rest_does_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """``run_ids: []`` is no selection of every run: refused in REST's words (its 422) by the
    library's one check (``export.check_run_ids``; was pydantic's ``run_ids: List should have
    at least 1 item after validation, not 0``), ``[" "]`` as ``--run-id ' '`` is (was
    ``run_ids.0: String should have at least 1 character``); evaluate_runs alike."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=2)
    out = tmp_path / "export"
    before = sorted(p.name for p in (runs / "veyru").iterdir())

    async def go() -> list[str]:
        async with in_process_session(runs, tmp_path) as s:
            return [
                await refusal(s, "export_runs", out=str(out), run_ids=[]),
                await refusal(s, "export_runs", out=str(out), run_ids=[" "]),
                await refusal(s, "export_runs", out=str(out), run_ids=[], scenario=["veyru"]),
                await refusal(s, "evaluate_runs", run_ids=[]),
            ]

    assert asyncio.run(go()) == [
        "run_ids needs a run id (<scenario>/<run_dir_name>)",
        "run_ids needs a run id (<scenario>/<run_dir_name>)",
        "run_ids cannot be combined with scenario",
        "run_ids needs a run id (<scenario>/<run_dir_name>)",
    ]
    assert not out.exists()
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before  # no report written


def test_export_runs_names_out_in_its_refusal_as_the_cli_names_out(tmp_path: Path) -> None:
    """An empty ``out`` is refused naming the argument (was ``'': names no folder``), as the
    CLI's ``--out '': names no folder``; a file at ``out`` alike."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1)
    afile = tmp_path / "afile"
    afile.write_text("x")

    async def go() -> list[str]:
        async with in_process_session(runs, tmp_path) as s:
            return [
                await refusal(s, "export_runs", out=""),
                await refusal(s, "export_runs", out=str(afile)),
            ]

    assert asyncio.run(go()) == [
        "out '': names no folder",
        f"out {str(afile)!r} is a file, not a folder",
    ]


def test_a_donor_of_another_scenario_is_named_by_its_run_id_never_the_servers_path(
    tmp_path: Path,
) -> None:
    """``cross_run_replace_agent`` with a donor of another scenario: the derive's line with
    the runs directory cut, as every reading tool's (was ``/tmp/.../veyru/<ts> is a veyru
    run, not prisoners_dilemma``: the server's path); nothing claimed."""
    runs = tmp_path / "runs"
    veyru = play_run(str(runs), "veyru", rounds=2, now_unix=1_790_000_000)
    dilemma = play_run(str(runs), "prisoners_dilemma", rounds=2, now_unix=1_790_000_100)

    async def go() -> str:
        async with in_process_session(runs, tmp_path) as s:
            return await refusal(
                s, "cross_run_replace_agent", source_run_id=dilemma.run_id, after_round=1,
                replaced_agent_id="player_a", donor_run_id=veyru.run_id,
                donor_agent_id="field_observer", model="scripted", provider="scripted",
            )  # fmt: skip

    assert asyncio.run(go()) == "veyru/1790000000 is a veyru run, not prisoners_dilemma"
    assert sorted(p.name for p in (runs / "prisoners_dilemma").iterdir()) == ["1790000100"]


def test_a_backslash_in_a_run_id_is_echoed_once(tmp_path: Path) -> None:
    """What the user typed, once (was ``'veyru\\\\1796437285'``: ``!r`` of the id)."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)

    async def go() -> list[str]:
        async with in_process_session(runs, tmp_path) as s:
            return [await refusal(s, "get_run", run_id="veyru\\1796437285"),
                    await refusal(s, "stop_run", run_id="veyru\\1796437285")]  # fmt: skip

    line = ("run_id 'veyru\\1796437285': not a run id (<scenario>/<run_dir_name>, relative to "
            "the runs directory)")  # fmt: skip
    assert asyncio.run(go()) == [line, line]  # get_run words it as stop_run


def test_every_tool_that_names_a_run_words_a_bad_run_id_as_stop_run(tmp_path: Path) -> None:
    """A malformed id and a well-shaped one naming no run, in stop_run's words, on each tool
    that takes a run id (was ``'veyru/abc' is not a run id (<scenario>/<unix_ts>)`` on these,
    ``run ids that no longer resolve: veyru/abc`` on stop_run)."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)

    async def go() -> list[list[str]]:
        async with in_process_session(runs, tmp_path) as s:
            said = []
            for bad in ("veyru/abc", "veyru/1", "veyru/1790000000/"):
                said.append([
                    await refusal(s, "get_run", run_id=bad),
                    await refusal(s, "read_run_events", run_id=bad),
                    await refusal(s, "stop_run", run_id=bad),
                    await refusal(s, "fork_run", source_run_id=bad, after_round=1),
                ])  # fmt: skip
            return said

    shape = "not a run id (<scenario>/<run_dir_name>, relative to the runs directory)"
    assert asyncio.run(go()) == [
        ["run ids that no longer resolve: veyru/abc"] * 4,
        ["run ids that no longer resolve: veyru/1"] * 4,
        [f"run_id 'veyru/1790000000/': {shape}"] * 3
        + [f"source_run_id 'veyru/1790000000/': {shape}"],
    ]


def test_a_path_sent_as_a_run_id_is_quoted_as_sent_never_cut_to_a_run_id(tmp_path: Path) -> None:
    """``run_ids`` holding a run's absolute path, or the runs directory's own: the refusal
    quotes what the client sent, as REST and the CLI do (was ``run_ids 'veyru/1790000000': a
    path, not a run id`` — a valid run id called a path — and ``run_ids the server's runs
    directory: a path, not a run id``, no value quoted); the client sent the path, so
    echoing it names nothing new. export_runs and evaluate_runs alike; nothing written."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)
    out = tmp_path / "export"

    async def go() -> list[str]:
        async with in_process_session(runs, tmp_path) as s:
            return [await refusal(s, tool, **({"out": str(out)} if tool == "export_runs" else {}),
                                  run_ids=[sent])
                    for sent in (folder.url, str(runs))
                    for tool in ("export_runs", "evaluate_runs")]  # fmt: skip

    why = "a path, not a run id: <scenario>/<run_dir_name>, relative to the runs directory"
    run_line, runs_line = f"run_ids {folder.url!r}: {why}", f"run_ids {str(runs)!r}: {why}"
    assert asyncio.run(go()) == [run_line, run_line, runs_line, runs_line]
    assert not out.exists()
    assert not (Path(folder.url) / "veyru_report.json").exists()
