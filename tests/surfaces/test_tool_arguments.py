"""Each MCP tool takes an argument for each flag of its CLI command (or it is listed with why
none), and each launching tool every limit its command takes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from glossogen.mcp import build_server
from tests.surfaces.drive import (
    DERIVED,
    LIMITS,
)


def flags_of(function: Any) -> set[str]:
    """Every flag a CLI command declares (its parameters' ``typer.Option`` names)."""
    import inspect

    declared = [p.default for p in inspect.signature(function).parameters.values()]
    return {d for o in declared for d in getattr(o, "param_decls", None) or ()}


LAUNCHES = [
    ("run", "start_run", ("max_agent_turns", "run_timeout_seconds", "spend_cap_usd")),
    ("resume", "resume_run", ("max_agent_turns", "run_timeout_seconds", "spend_cap_usd")),
    *((command, tool, tuple(LIMITS)) for command, tool, _ in DERIVED.values()),
]
"""Each command that launches a run (``resume``: ``run --resume``), its MCP tool, and the
limits both must take."""


@pytest.mark.parametrize(("command", "tool", "limits"), LAUNCHES, ids=[c for c, *_ in LAUNCHES])
def test_each_launching_tool_takes_every_limit_its_command_takes(
    command: str, tool: str, limits: tuple[str, ...], tmp_path: Path
) -> None:
    """MCP's ``start_run``, ``fork_run``, ``replace_agent`` and ``cross_run_replace_agent``
    take each limit ``run``, ``fork-at-round``, ``replace-agent`` and
    ``cross-run-replace-agent`` take (issue 32), under the request field's name."""
    from glossogen.cli import derived, run

    module = run if command in ("run", "resume") else derived
    flags = flags_of(getattr(module, "run" if command == "resume" else command.replace("-", "_")))

    async def listed() -> dict[str, set[str]]:
        async with Client(build_server(str(tmp_path))) as client:
            tools = (await client.list_tools()).tools
        return {t.name: set(t.input_schema["properties"]) for t in tools}

    arguments = asyncio.run(listed())[tool]
    assert {LIMITS[f] for f in limits} <= flags
    assert {f: f in arguments for f in limits} == dict.fromkeys(limits, True)
    assert ("after_round" in arguments) == (command not in ("run", "resume"))


RUN_ARGUMENTS = {
    "--model": "model", "--provider": "provider", "--config": "config",
    "--max-agent-turns": "max_agent_turns", "--run-timeout": "run_timeout_seconds",
    "--spend-cap-usd": "spend_cap_usd", "--group-slug": "group_slug",
    "--judge-cache": "judge_cache",
}  # fmt: skip
"""``glossogen run``'s flags and ``start_run``'s argument for each."""

COMMAND_ARGUMENTS = {
    ("run", "start_run"): RUN_ARGUMENTS,
    ("run --dry-run", "estimate_run"): RUN_ARGUMENTS,
    ("run --resume", "resume_run"): {
        **RUN_ARGUMENTS, "--allow-config-change": "allow_config_change",
    },
    ("run --resume --dry-run", "estimate_run"): {
        **RUN_ARGUMENTS, "--allow-config-change": "allow_config_change", "--resume": "run_id",
    },
    **{
        (command, tool): {
            "--after-round": "after_round", "--rounds-after": "rounds_after",
            "--knobs": "knobs", "--max-agent-turns": "max_agent_turns",
            "--run-timeout": "run_timeout_seconds", "--spend-cap-usd": "spend_cap_usd",
            "--replay": "replay",
            **{f"--{k.replace('_', '-')}": k for k in seat},
            **({"--donor-agent-id": "donor_agent_id", "--donor-run-dir": "donor_run_id"}
               if command.startswith("cross") else {}),
            **({"--channel-visibility": "channel_visibility"}
               if command == "replace-agent" else {}),
        }
        for command, tool, seat in DERIVED.values()
    },
    ("evaluate", "evaluate_run"): {
        "--metrics": "metrics", "--model": "judge_model", "--provider": "judge_provider",
        "--judge-settings": "judge_settings", "--judge-replicas": "judge_replicas",
        "--probe-replicas": "probe_replicas", "--allow-incomplete": "allow_incomplete",
        "--plot": "plot", "--judge-cache": "judge_cache",
    },
    ("evaluate --runs-dir", "evaluate_runs"): {
        "--metrics": "metrics", "--model": "judge_model", "--provider": "judge_provider",
        "--judge-settings": "judge_settings", "--judge-replicas": "judge_replicas",
        "--probe-replicas": "probe_replicas", "--allow-incomplete": "allow_incomplete",
        "--plot": "plot", "--judge-cache": "judge_cache", "--scenario": "scenario",
        "--label": "labels", "--knob": "knob", "--status": "status", "--run-id": "run_ids",
        "--run-id-contains": "run_id_contains", "--contains-agent-id": "contains_agent_id",
        "--spend-cap-usd": "spend_cap_usd",
    },
    ("export", "export_runs"): {
        "--out": "out", "--frames": "frames", "--scenario": "scenario", "--label": "labels",
        "--status": "status", "--run-id-contains": "run_id_contains",
        "--contains-agent-id": "contains_agent_id", "--knob": "knob", "--run-id": "run_ids",
        "--repeat-run-columns/--no-repeat-run-columns": "repeat_run_columns",
        "--include-metric-summaries": "include_metric_summaries", "--max-runs": "max_runs",
        "--raw": "raw", "--include-logs": "include_logs", "--include-atif": "include_atif",
    },
}  # fmt: skip
"""Each operation's CLI command and MCP tool, and each flag of the command with the tool's
argument for it."""

NOT_AN_ARGUMENT = {
    "--runs-dir": "the server's runs folder (`glossogen mcp --runs-dir`), or --resume's folder",
    "--run-dir": "the run folder: the tool's run_id",
    "--source-run-dir": "the source folder: the tool's source_run_id",
    "--wait": "the CLI's own: a tool launches detached and get_run polls",
    "--dry-run": "estimate_run is the dry run (with run_id: a resume's)",
    "--resume": "resume_run is the resume; its run_id names the folder",
    "--allow-config-change": "a resume's only: resume_run takes it",
}
"""A flag of a command that no tool of the same operation takes as an argument, and why."""

NOT_OFFERED: dict[tuple[str, str], dict[str, str]] = {
    ("evaluate", "evaluate_run"): {
        flag: "a cohort's (--runs-dir): evaluate_runs takes it"
        for flag in ("--scenario", "--label", "--knob", "--status", "--run-id",
                     "--run-id-contains", "--contains-agent-id", "--spend-cap-usd")
    },
}  # fmt: skip
"""Flags of a command that one of its tools leaves to another, with why: listed, so the test
below holds every other flag to an argument."""


@pytest.mark.parametrize(("command", "tool"), list(COMMAND_ARGUMENTS), ids=lambda c: str(c))
def test_each_tool_takes_an_argument_for_each_flag_of_its_command(
    command: str, tool: str, tmp_path: Path
) -> None:
    """Issue 32: every flag of the command is a tool argument (``estimate_run`` the dry run's
    limits, ``resume_run`` ``judge_cache``, ``export_runs`` the raw zip), or listed with why
    (:data:`NOT_AN_ARGUMENT`, :data:`NOT_OFFERED`)."""
    import importlib

    name = command.split()[0]
    module = {"run": "run", "evaluate": "evaluate", "export": "export"}.get(name, "derived")
    flags = flags_of(getattr(importlib.import_module(f"glossogen.cli.{module}"),
                             name.replace("-", "_")))  # fmt: skip

    async def listed() -> set[str]:
        async with Client(build_server(str(tmp_path))) as client:
            tools = (await client.list_tools()).tools
        return {a for t in tools if t.name == tool for a in t.input_schema["properties"]}

    pairs = COMMAND_ARGUMENTS[(command, tool)]
    arguments = asyncio.run(listed())
    assert sorted(set(pairs) - flags) == []
    assert sorted(set(pairs.values()) - arguments) == []
    unpaired = flags - set(pairs) - set(NOT_OFFERED.get((command, tool), {}))
    assert sorted(unpaired - set(NOT_AN_ARGUMENT)) == []
