"""``glossogen run`` on a terminal: the progress bar is ours alone.

pydantic-ai prints a first-run banner (its logo, versions, and a pointer to Logfire) on the
first agent run of a process whose stderr is a terminal; during a run that is inside the live
progress bar. The run is played here on a real pseudo-terminal, with the environment a user's
shell has (no ``PYTEST_VERSION`` or ``CI``, which pydantic-ai reads as "no banner").
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``args`` with stdin, stdout and stderr on one pseudo-terminal; its exit and output."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "CI")}
    env.update({"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"})
    main, child = pty.openpty()
    process = subprocess.Popen(args, cwd=cwd, env=env, stdin=child, stdout=child, stderr=child)
    os.close(child)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: every end of the terminal closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    code = process.wait()
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def test_a_run_on_a_terminal_shows_no_pydantic_ai_banner_in_its_progress_bar(
    prefect_api: str, tmp_path: Path
) -> None:
    code, shown = _on_a_terminal(
        [sys.executable, "-m", "glossogen", "run", "prisoners_dilemma", "--model", "scripted",
         "--provider", "scripted", "--runs-dir", "./runs", "--config", "knobs_default",
         "round_count=2"],
        tmp_path,
    )  # fmt: skip
    assert code == 0, shown
    assert "round 1/2" in shown and "round 2/2" in shown  # the bar was drawn
    for banner in ("Logfire", "observability: off", "PYDANTIC_AI_NO_BANNER", "pydantic-ai v"):
        assert banner not in shown, shown
