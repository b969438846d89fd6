"""MCP ``stop_run`` on a run still queued (claimed, its log not begun) cancels it cleanly."""

from __future__ import annotations

from pathlib import Path

from glossogen.mcp._tools import Tools
from tests.fixtures.played_runs import claim_cancelled, claim_unbegun


def test_stop_run_cancels_a_queued_run_and_says_so(tmp_path: Path) -> None:
    folder = claim_unbegun(str(tmp_path))
    stopped = Tools(str(tmp_path)).stop_run(folder.run_id)
    assert (stopped.run_id, stopped.pid, stopped.flow_run_id) == (folder.run_id, None, None)
    assert stopped.message == claim_cancelled(folder.run_id)
    assert not Path(folder.url).exists()
