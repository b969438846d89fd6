"""MCP ``evaluate_run`` on a run whose log changed since it was scored: refused in the CLI's
line but naming the tool's own argument (``allow_incomplete``, not a flag), and the report of
the old log set aside (bytes kept) rather than left beside the new log."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from glossogen.mcp._tools import Tools
from tests.fixtures.played_runs import play_run


def test_evaluate_run_of_a_cut_log_sets_its_old_report_aside(
    prefect_api: str, tmp_path: Path
) -> None:
    folder = play_run(str(tmp_path), "veyru", rounds=2)
    tools = Tools(str(tmp_path))
    scored = asyncio.run(tools.evaluate_run(folder.run_id, metrics=["round_success"]))
    assert (
        scored.entries["round_success"]["status"],
        scored.entries["round_success"]["rounds"],
    ) == ("ok", 2)
    run = Path(folder.url)
    log, report = run / "veyru.jsonl", run / "veyru_report.json"
    scored_on, written = hashlib.sha256(log.read_bytes()).hexdigest()[:12], report.read_bytes()
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:10]))
    with pytest.raises(ToolError) as refused:
        asyncio.run(tools.evaluate_run(folder.run_id, metrics=["round_success"]))
    assert str(refused.value) == (
        f"{folder.run_id} has no simulation_ended (still playing, or killed): pass "
        "allow_incomplete to score what it logged; its report described another log and "
        f"was moved aside to veyru_report.stale-{scored_on}.json"
    )
    assert "allow_incomplete" in inspect.signature(Tools.evaluate_run).parameters
    assert (run / f"veyru_report.stale-{scored_on}.json").read_bytes() == written
    assert not report.exists()
