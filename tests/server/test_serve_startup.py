"""``glossogen serve`` builds its app without pydantic-ai or the engine.

The raw export's ATIF trajectories (``export/_atif.py``, which reads pydantic-ai's messages) are
imported when a zip asks for them, not when the server starts: measured 1.62 CPU-s to build
the app before (the MCP tools' start-up included), 1.07 after.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from glossogen.server import create_app
app = create_app(sys.argv[1], token=None, host="127.0.0.1")
heavy = ("glossogen.engine", "glossogen.export._atif", "pydantic_ai", "prefect")
print(sorted(name for name in heavy if name in sys.modules))
"""


def test_the_app_is_built_without_pydantic_ai_or_the_engine(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr[-2000:]
