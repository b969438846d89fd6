"""How the surface tests drive each surface as its user drives it, and what each answered.

``glossogen`` in this process (its exit code and its one line, :func:`_cli`), the FastAPI app
over HTTP (``TestClient``), the MCP tools through the SDK's client connected to ``build_server``
in-process (:func:`_mcp`); an :class:`Answer` is what a surface said: refused or not, its one
line, and its own status for it. The ``*_through`` helpers ask one operation of one surface.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from glossogen.cli import main
from glossogen.mcp import build_server
from glossogen.server import create_app


@dataclass(frozen=True)
class Answer:
    """What a surface answered: refused or not, its one line, and its own status for it."""

    refused: bool
    line: str
    status: int | str


def with_played_source(runs: Path, source: Path) -> None:
    """Copy the played ``source`` run folder (lock file and all, as ``play_run`` leaves it in
    this process) into ``runs``, under its run id."""
    shutil.copytree(source, runs / "veyru" / source.name)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Answer:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capsys.readouterr()
    code = int(exited.value.code or 0)
    if code:
        assert (out, err.count("\n")) == ("", 1), (out, err)
        return Answer(True, err.removeprefix("glossogen: error: ").rstrip("\n"), code)
    return Answer(False, out.splitlines()[0], code)


def _mcp(runs_dir: str, tool: str, **arguments: Any) -> tuple[Answer, dict[str, Any] | None]:
    async def called() -> Any:
        async with Client(build_server(runs_dir)) as client:
            return await client.call_tool(tool, arguments)

    result = asyncio.run(called())
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return Answer(True, text.removeprefix(f"Error executing tool {tool}: "), "tool error"), None
    return Answer(False, str((result.structured_content or {}).get("message", "")), "ok"), (
        result.structured_content
    )


SURFACES = ["cli", "rest", "mcp"]
STATUS = {"cli": (0, 65), "rest": (200, 409), "mcp": ("ok", "tool error")}
"""Each surface's own word for done and for refused: an exit code, an HTTP status, a tool
error."""


def refused_as(surface: str, line: str, field: str) -> Answer:
    """A usage refusal as each surface gives it: the CLI's line and 64, REST's field at fault
    before its line and 422, MCP's tool error."""
    return {
        "cli": Answer(True, line, 64),
        "rest": Answer(True, f"{field}: {line}", 422),
        "mcp": Answer(True, line, "tool error"),
    }[surface]


TABLES = "run_level, round_level, agent_level, message_level, round_context, call_level"


RUN_ID_SHAPE = "<scenario>/<run_dir_name>, relative to the runs directory"
NOT_A_RUN_ID = f"not a run id ({RUN_ID_SHAPE})"


EXPORT_SURFACES = ["cli", "rest", "rest-preview", "rest-raw", "mcp"]
ROUTES = {"rest": "csv", "rest-preview": "preview", "rest-raw": "raw"}
"""The export route each REST surface posts to (the same body each)."""


def _rest_answer(got: Any) -> Answer:
    """A REST export route's answer: its refusal's line, or what a 200 lists as refused."""
    if got.status_code != 200:
        detail = got.json()["detail"]
        named = detail.get("field") or detail["limit"]
        return Answer(True, f"{named}: {detail['message']}", got.status_code)
    if not got.headers["content-type"].startswith("application/json"):
        return Answer(False, "", 200)  # a download
    preview = got.json()
    listed = [f"{r.get('field') or r['limit']}: {r['message']}" for r in preview["refusals"]]
    if preview["missing_run_ids"]:
        listed.append(f"missing_run_ids: {', '.join(preview['missing_run_ids'])}")
    return Answer(False, "; ".join(listed), 200)


def export_refused_through(
    surface: str, runs: str, out: Path, case: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> Answer:
    """``glossogen export``, ``POST .../export/csv`` (``/preview``, ``/raw``; a server whose
    ceiling is 1 run when the case asks the CLI for ``--max-runs 1``) or MCP ``export_runs``,
    asked as ``case`` says."""
    if surface == "cli":
        return _cli(capsys, "export", "--runs-dir", runs, "--out", str(out), *case["cli"])
    if surface in ROUTES:
        limits = {"max_runs": 1} if "--max-runs" in case["cli"] else {}
        body = {"selection": {"kind": "filters"}, **case["rest"]}
        route = f"/api/g/local/runs/export/{ROUTES[surface]}"
        return _rest_answer(TestClient(create_app(runs, **limits)).post(route, json=body))
    return _mcp(runs, "export_runs", out=str(out), **case["mcp"])[0]


def cohort_through(
    surface: str, runs: str, flags: list[str], arguments: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> Answer:  # fmt: skip
    """``glossogen evaluate --runs-dir`` or MCP ``evaluate_runs`` of the runs under ``runs``."""
    if surface == "cli":
        return _cli(capsys, "evaluate", "--runs-dir", runs, *flags)
    return _mcp(runs, "evaluate_runs", **arguments)[0]


DERIVED = {
    "fork": ("fork-at-round", "fork_run", {}),
    "replace": ("replace-agent", "replace_agent",
                {"replaced_agent_id": "field_observer", "model": "other-script",
                 "provider": "scripted"}),
    "cross-run": ("cross-run-replace-agent", "cross_run_replace_agent",
                  {"replaced_agent_id": "field_observer", "donor_agent_id": "field_observer",
                   "model": "other-script", "provider": "scripted"}),
}  # fmt: skip
"""Each derived-run operation: its CLI command, its MCP tool and the arguments of its seat."""
LIMITS = {
    "max_agent_turns": "--max-agent-turns",
    "run_timeout_seconds": "--run-timeout",
    "spend_cap_usd": "--spend-cap-usd",
    "rounds_after": "--rounds-after",
}
"""The limits a derived run takes besides ``after_round``: the request field, the CLI's flag."""
FLAG_OF = {**LIMITS, "provider": "--provider", "knobs": "--knobs"}
"""The CLI's flag of each request field a launch test sets."""


def launch_through(
    surface: str,
    operation: str,
    runs: Path,
    field: str,
    value: Any,
    flag_value: str,
    capsys: pytest.CaptureFixture[str],
) -> Answer:
    """``glossogen run`` / ``start_run`` of veyru, ``run --resume`` / ``resume_run`` of the run
    in ``runs``, or the derived operation from it (the CLI's command, the MCP tool), with
    ``field`` set to the value given."""
    if operation == "run":
        if surface == "cli":
            return _cli(capsys, "run", "veyru", "--model", "scripted", "--provider", "scripted",
                        "--config", "knobs_default", "--runs-dir", str(runs), FLAG_OF[field],
                        flag_value)  # fmt: skip
        asked = {"scenario": "veyru", "model": "scripted", "provider": "scripted", field: value}
        return _mcp(str(runs), "start_run", **asked)[0]
    (source,) = (runs / "veyru").iterdir()
    run_id = f"veyru/{source.name}"
    if operation == "resume":
        if surface == "cli":
            return _cli(capsys, "run", "veyru", "--resume", str(source), FLAG_OF[field],
                        flag_value)  # fmt: skip
        return _mcp(str(runs), "resume_run", run_id=run_id, **{field: value})[0]
    command, tool, seat = DERIVED[operation]
    if surface == "cli":
        flags = [f for k, v in seat.items() for f in (f"--{k.replace('_', '-')}", v)]
        donor = ["--donor-run-dir", str(source)] if operation == "cross-run" else []
        return _cli(capsys, command, "veyru", "--source-run-dir", str(source), "--after-round",
                    "1", "--runs-dir", str(runs), *flags, *donor, FLAG_OF[field],
                    flag_value)  # fmt: skip
    donor_id = {"donor_run_id": run_id} if operation == "cross-run" else {}
    asked = {"source_run_id": run_id, "after_round": 1, **seat, **donor_id, field: value}
    return _mcp(str(runs), tool, **asked)[0]
