"""A detached start of a claimed run: ``python -m glossogen.mcp.play <run_dir>``.

Reads the run's ``RunConfig`` (JSON) on stdin and plays the ``simulate`` flow into the folder
the launcher claimed; its output goes to the folder's stdout log. Exit codes as ``glossogen
run``'s; SIGINT (``glossogen stop``) ends the run ``interrupted``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys


def main(argv: list[str]) -> int:
    """Play the claimed run folder ``argv[0]`` under the config read from stdin."""
    from glossogen.cli import answer_ctrl_c
    from glossogen.cli.run import EXIT_CODES, PREFECT_DEFAULTS
    from glossogen.launch import RunConfig

    answer_ctrl_c()
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    config = RunConfig.model_validate(json.loads(sys.stdin.buffer.read()))
    from flows.simulate import simulate

    try:
        result = asyncio.run(simulate(config, run_dir=argv[0]))
    except KeyboardInterrupt:
        print("glossogen: error: interrupted; the run ends 'interrupted'", flush=True)
        sys.stdout.flush()
        os._exit(130)  # as `glossogen run`: leave without retrying a Prefect API
    print(f"{result.run_id} {result.status}: {result.rounds_won}/{result.rounds_played} won")
    return EXIT_CODES.get(result.status, 70)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
